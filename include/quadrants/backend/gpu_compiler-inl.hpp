// Implementation of backend/gpu_compiler.hpp.
#pragma once

#include "quadrants/backend/compiler_log.hpp"
#include "quadrants/backend/gpu_compiler.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::backend {

QD_FUNC std::string gpu_compiler_api::describe(gpu_result r) const {
  const char* text = error_string ? error_string(r) : nullptr;
  return fmt::format("{} ({})", text ? text : "an unknown result", r);
}

QD_FUNC gpu_program_outcome compile_gpu_program(const gpu_compiler_api& api, std::string_view source,
                                                const char* program_name, const std::vector<std::string>& flags,
                                                std::span<const gpu_program_header> headers) {
  std::vector<const char*> argv;
  for (const auto& f : flags) argv.push_back(f.c_str());
  std::vector<const char*> header_texts, header_names;
  for (const gpu_program_header& h : headers) header_texts.push_back(h.text), header_names.push_back(h.name);
  const std::string text(source);
  gpu_program program = nullptr;
  QD_GPU_CALL(api, create_program, &program, text.c_str(), program_name, static_cast<int>(headers.size()),
              header_texts.data(), header_names.data());
  struct destroy {
    const gpu_compiler_api& api;
    gpu_program& p;
    ~destroy() { api.destroy_program(&p); }
  } cleanup{api, program};
  gpu_program_outcome out;
  out.result = api.compile_program(program, static_cast<int>(argv.size()), argv.data());
  if (!headers.empty() && api.pch_create_status) out.pch_status = api.pch_create_status(program);
  std::size_t log_size = 0;
  if (api.log_size(program, &log_size) == gpu_success && log_size > 1) {
    out.log.resize(log_size);
    if (api.log(program, out.log.data()) != gpu_success) out.log.clear();
    while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  }
  if (out.result != gpu_success) return out;
  std::size_t size = 0;
  QD_GPU_CALL(api, code_size, program, &size);
  out.code.resize(size);
  QD_GPU_CALL(api, code, program, reinterpret_cast<char*>(out.code.data()));
  return out;
}

QD_FUNC std::string joined_flags(const std::vector<std::string>& flags) {
  std::string s;
  for (const auto& f : flags) s += f + " ";
  return s;
}

QD_FUNC compile_error rejected_program(std::string_view compiler, std::string_view language, std::string_view what,
                                       const char* result_name, const std::vector<std::string>& flags,
                                       std::string_view source, const std::string& log,
                                       std::initializer_list<std::string_view> file_names) {
  std::string line;
  for (std::string_view file : file_names)
    if (line.empty()) line = quote_generated_line(log, source, file);
  const std::string options = joined_flags(flags);
  return compile_error(fmt::format("{}: {} rejected generated {} code ({}, options: {}).\n{}\n{}\nThis is a bug in "
                                   "Quadrants' code generation unless the {} in use is unsuitable; please report it "
                                   "with this message",
                                   what, compiler, language, result_name, options, line, log, compiler),
                       std::string(what), options, std::string(source), log);
}

QD_FUNC std::string gpu_compiler_version(const gpu_compiler_api& api) {
  int major = 0, minor = 0;
  QD_GPU_CALL(api, version, &major, &minor);
  return fmt::format("{}.{}", major, minor);
}

}  // namespace qd::inline v0::backend
