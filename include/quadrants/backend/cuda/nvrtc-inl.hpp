// Implementation of backend/cuda/nvrtc.hpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "quadrants/backend/compiler_log.hpp"
#include "quadrants/backend/cuda/nvrtc.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/detail/format.hpp"

namespace qd::backend::cuda {
namespace detail {

using nvrtcResult = int;
using nvrtcProgram = struct nvrtc_program_st*;
inline constexpr nvrtcResult nvrtc_success = 0;
inline constexpr nvrtcResult nvrtc_error_invalid_option = 5;
inline constexpr nvrtcResult nvrtc_error_compilation = 6;

// One row per entry point: the table's member, the exported symbol, its type.
#define QD_NVRTC_ENTRY_POINTS(X)                                                                              \
  X(version, "nvrtcVersion", nvrtcResult(int*, int*))                                                         \
  X(get_num_supported_archs, "nvrtcGetNumSupportedArchs", nvrtcResult(int*))                                  \
  X(get_supported_archs, "nvrtcGetSupportedArchs", nvrtcResult(int*))                                         \
  X(create_program, "nvrtcCreateProgram",                                                                     \
    nvrtcResult(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*))        \
  X(destroy_program, "nvrtcDestroyProgram", nvrtcResult(nvrtcProgram*))                                       \
  X(compile_program, "nvrtcCompileProgram", nvrtcResult(nvrtcProgram, int, const char* const*))               \
  X(get_cubin_size, "nvrtcGetCUBINSize", nvrtcResult(nvrtcProgram, std::size_t*))                             \
  X(get_cubin, "nvrtcGetCUBIN", nvrtcResult(nvrtcProgram, char*))                                             \
  X(get_log_size, "nvrtcGetProgramLogSize", nvrtcResult(nvrtcProgram, std::size_t*))                          \
  X(get_log, "nvrtcGetProgramLog", nvrtcResult(nvrtcProgram, char*))                                          \
  X(error_string, "nvrtcGetErrorString", const char*(nvrtcResult))

struct nvrtc_api {
#define QD_NVRTC_MEMBER(member, exported, type) std::add_pointer_t<type> member = nullptr;
  QD_NVRTC_ENTRY_POINTS(QD_NVRTC_MEMBER)
#undef QD_NVRTC_MEMBER
};

QD_FUNC const nvrtc_api& nvrtc() {
  static const nvrtc_api api = [] {
    static const shared_library library(nvrtc_library());
    nvrtc_api a;
#define QD_NVRTC_RESOLVE(member, exported, type) \
  a.member = reinterpret_cast<std::add_pointer_t<type>>(library.symbol(exported));
    QD_NVRTC_ENTRY_POINTS(QD_NVRTC_RESOLVE)
#undef QD_NVRTC_RESOLVE
    return a;
  }();
  return api;
}

QD_FUNC void check_nvrtc(nvrtcResult r, const char* call) {
  if (r == nvrtc_success) return;
  throw driver_error(fmt::format("NVRTC call {} failed: {} ({})", call, nvrtc().error_string(r), r), call, r);
}

// NVRTC builds without --minimal reject it; learnt once per process.
inline std::atomic<bool> minimal_rejected{false};

}  // namespace detail

QD_FUNC library_search nvrtc_library() {
  library_search s{"NVRTC (libnvrtc, the CUDA run-time compiler)",
                   {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so.11.1", "libnvrtc.so"},
                   {"QD_NVRTC_PATH"},
                   {}};
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(var); v && *v) {
      s.directories.push_back(std::string(v) + "/lib64");
      s.directories.push_back(std::string(v) + "/lib");
    }
  for (const char* d : {"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
                        "/usr/local/cuda/targets/sbsa-linux/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib64",
                        "/usr/lib/aarch64-linux-gnu", "/opt/cuda/lib64"})
    s.directories.emplace_back(d);
  return s;
}

QD_FUNC std::string nvrtc_fingerprint() { return library_fingerprint(nvrtc_library()); }

QD_FUNC std::vector<std::string> nvrtc_flags(const nvrtc_options& o) {
  std::vector<std::string> flags = {fmt::format("-arch=sm_{}", o.sm), "-std=c++17"};
  if (o.minimal) flags.push_back("--minimal");
  // Without fast_math, no contraction into FMAs: the same results as the CPU backend.
  flags.push_back(o.fast_math ? "--use_fast_math" : "--fmad=false");
  if (o.opt_level < 2) flags.push_back(fmt::format("--ptxas-options=-O{}", std::max(o.opt_level, 0)));
  return flags;
}

QD_FUNC std::vector<std::byte> compile_cubin(std::string_view source, const nvrtc_options& options,
                                             std::string_view what) {
  using namespace detail;
  const nvrtc_api& api = nvrtc();
  // An arch this NVRTC cannot target is the caller's choice, not a code-generation bug.
  static const std::vector<int> supported = nvrtc_supported_archs();
  if (!supported.empty() && std::find(supported.begin(), supported.end(), options.sm) == supported.end()) {
    std::string list;
    for (int sm : supported) list += fmt::format("{}{}", list.empty() ? "" : " ", sm);
    throw user_error(fmt::format("{}: cuda_arch = {} (sm_{}): NVRTC {} cannot compile for it (it knows: {}); choose "
                                 "one of those, or point QD_NVRTC_PATH to a CUDA toolkit that supports sm_{}",
                                 what, options.sm, options.sm, nvrtc_version(), list, options.sm));
  }
  nvrtc_options effective = options;
  if (minimal_rejected.load(std::memory_order_relaxed)) effective.minimal = false;
  constexpr const char* program_name = "qd_generated.cu";
  bool retried = false;
  for (;;) {
    auto flags = nvrtc_flags(effective);
    std::vector<const char*> argv;
    for (const auto& f : flags) argv.push_back(f.c_str());
    std::string text(source);
    nvrtcProgram program = nullptr;
    check_nvrtc(api.create_program(&program, text.c_str(), program_name, 0, nullptr, nullptr), "nvrtcCreateProgram");
    struct destroy {
      const nvrtc_api& api;
      nvrtcProgram& p;
      ~destroy() { api.destroy_program(&p); }
    } cleanup{api, program};
    nvrtcResult r = api.compile_program(program, static_cast<int>(argv.size()), argv.data());
    if (r == nvrtc_error_invalid_option && effective.minimal) {
      effective.minimal = false;  // an NVRTC older than --minimal, or another bad option: try without
      retried = true;
      continue;
    }
    if (retried && r != nvrtc_error_invalid_option) minimal_rejected.store(true, std::memory_order_relaxed);
    std::size_t log_size = 0;
    std::string log;
    if (api.get_log_size(program, &log_size) == nvrtc_success && log_size > 1) {
      log.resize(log_size);
      if (api.get_log(program, log.data()) != nvrtc_success) log.clear();
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    }
    std::string options_text;
    for (const auto& f : flags) options_text += f + " ";
    if (r != nvrtc_success)
      throw compile_error(fmt::format("{}: NVRTC rejected generated CUDA code ({}, options: {}).\n{}\n{}\nThis is a "
                                      "bug in Quadrants' code generation unless the NVRTC in use is unsuitable; please "
                                      "report it with this message",
                                      what, api.error_string(r), options_text,
                                      quote_generated_line(log, source, program_name), log),
                          std::string(what), options_text, std::string(source), log);
    std::size_t size = 0;
    check_nvrtc(api.get_cubin_size(program, &size), "nvrtcGetCUBINSize");
    std::vector<std::byte> cubin(size);
    check_nvrtc(api.get_cubin(program, reinterpret_cast<char*>(cubin.data())), "nvrtcGetCUBIN");
    return cubin;
  }
}

QD_FUNC std::string nvrtc_version() {
  int major = 0, minor = 0;
  detail::check_nvrtc(detail::nvrtc().version(&major, &minor), "nvrtcVersion");
  return fmt::format("{}.{}", major, minor);
}

QD_FUNC std::vector<int> nvrtc_supported_archs() {
  const auto& api = detail::nvrtc();
  int n = 0;
  detail::check_nvrtc(api.get_num_supported_archs(&n), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(static_cast<std::size_t>(std::max(n, 0)));
  if (n > 0) detail::check_nvrtc(api.get_supported_archs(archs.data()), "nvrtcGetSupportedArchs");
  return archs;
}

}  // namespace qd::backend::cuda
