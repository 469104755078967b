// Implementation of backend/cuda/nvrtc.hpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <optional>

#include "quadrants/backend/cuda/nvrtc.hpp"
#include "quadrants/backend/cuda/prelude.hpp"
#include "quadrants/backend/gpu_compiler.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::backend::cuda {
namespace detail {

QD_FUNC const gpu_compiler_api& nvrtc() {
  return process_entry_points<gpu_compiler_api, &nvrtc_library>({.vendor = gpu_vendor::cuda, .calls = "NVRTC call"});
}

// NVRTC builds without --minimal reject it; learnt once per process.
inline std::atomic<bool> minimal_rejected{false};

// The precompiled prelude: off once it failed where the inline prelude compiled.
inline std::atomic<bool> pch_failed{false};
inline std::atomic<std::int64_t> pch_programs{0}, pch_created{0}, pch_fallbacks{0};
constexpr const char* program_name = "qd_generated.cu";
constexpr const char* prelude_header = "qd_cuda_prelude.cuh";

// `source` compiled with its leading prelude as a header NVRTC precompiles on the first
// compile and reuses after (automatic PCH, in NVRTC's own per-process directory). The
// rest keeps its line numbers (#line), so the code is the one the inline prelude gives
// (asserts carry lines). Empty where not applicable (`tried` false) or not compiled: the
// caller compiles inline, which also gives a rejected program its usual message.
QD_FUNC std::optional<std::vector<std::byte>> compile_with_precompiled_prelude(const gpu_compiler_api& api,
                                                                               std::string_view source,
                                                                               std::vector<std::string> flags,
                                                                               bool& tried) {
  static const std::string prelude = translation_unit_prelude();
  const char* off = std::getenv("QD_NVRTC_PCH");  // "0": inline (comparisons, diagnosis)
  tried = api.pch_create_status && !pch_failed.load(std::memory_order_relaxed) &&
          !(off && off == std::string_view("0")) && !prelude.empty() && prelude.back() == '\n' &&
          source.starts_with(prelude);
  if (!tried) return std::nullopt;
  static const std::string head = fmt::format("#include \"{}\"\n#line {} \"{}\"\n", prelude_header,
                                              std::count(prelude.begin(), prelude.end(), '\n') + 1, program_name);
  // 20283: "PCH creation disabled because #line directive encountered", about a second
  // stop point after the header, which is not wanted.
  for (const char* f : {"-pch", "--pch-messages=false", "--pch-verbose=false", "-diag-suppress=20283"})
    flags.emplace_back(f);
  const gpu_program_header header{prelude_header, prelude.c_str()};
  gpu_program_outcome out = compile_gpu_program(api, head + std::string(source.substr(prelude.size())), program_name,
                                                flags, std::span(&header, 1));
  if (out.result != gpu_success) return std::nullopt;
  pch_programs.fetch_add(1, std::memory_order_relaxed);
  if (out.pch_status == gpu_success) pch_created.fetch_add(1, std::memory_order_relaxed);
  // Creation failed (NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED, _PCH_CREATE): every later
  // compile would try again and pay for it, so the prelude stays inline.
  if (out.pch_status == 14 || out.pch_status == 15) pch_failed.store(true, std::memory_order_relaxed);
  return std::move(out.code);
}

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
  for (const char* d :
       {"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib", "/usr/local/cuda/targets/sbsa-linux/lib",
        "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/aarch64-linux-gnu", "/opt/cuda/lib64"})
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
  flags.insert(flags.end(), o.extra.begin(), o.extra.end());
  return flags;
}

QD_FUNC std::vector<std::byte> compile_cubin(std::string_view source, const nvrtc_options& options,
                                             std::string_view what) {
  const gpu_compiler_api& api = detail::nvrtc();
  // An arch this NVRTC cannot target is the caller's choice, not a code-generation bug.
  static const std::vector<int> supported = nvrtc_supported_archs();
  if (!supported.empty() && std::find(supported.begin(), supported.end(), options.sm) == supported.end()) {
    std::string list;
    for (int sm : supported) list += fmt::format("{}{}", list.empty() ? "" : " ", sm);
    throw user_error(
        fmt::format("{}: cuda_arch = {} (sm_{}): NVRTC {} cannot compile for it (it knows: {}); choose "
                    "one of those, or point QD_NVRTC_PATH to a CUDA toolkit that supports sm_{}",
                    what, options.sm, options.sm, nvrtc_version(), list, options.sm));
  }
  nvrtc_options effective = options;
  if (detail::minimal_rejected.load(std::memory_order_relaxed)) effective.minimal = false;
  using detail::program_name;
  auto flags = nvrtc_flags(effective);
  bool tried = false;
  if (options.precompiled_prelude)
    if (auto code = detail::compile_with_precompiled_prelude(api, source, flags, tried)) return std::move(*code);
  gpu_program_outcome out = compile_gpu_program(api, source, program_name, flags);
  if (out.result == gpu_compiler_invalid_option && effective.minimal) {
    effective.minimal = false;  // an NVRTC older than --minimal, or another bad option: try without
    flags = nvrtc_flags(effective);
    out = compile_gpu_program(api, source, program_name, flags);
    if (out.result != gpu_compiler_invalid_option) detail::minimal_rejected.store(true, std::memory_order_relaxed);
  }
  if (out.result != gpu_success)
    throw rejected_program("NVRTC", "CUDA", what, api.error_string(out.result), flags, source, out.log, {program_name});
  if (tried) {  // inline compiled where the precompiled header did not: keep to inline
    detail::pch_failed.store(true, std::memory_order_relaxed);
    detail::pch_fallbacks.fetch_add(1, std::memory_order_relaxed);
  }
  return std::move(out.code);
}

QD_FUNC nvrtc_pch_statistics nvrtc_prelude_pch_statistics() {
  const gpu_compiler_api& api = detail::nvrtc();
  return {.programs = detail::pch_programs.load(),
          .created = detail::pch_created.load(),
          .fallbacks = detail::pch_fallbacks.load(),
          .supported = api.pch_create_status != nullptr && !detail::pch_failed.load()};
}

QD_FUNC std::string nvrtc_version() { return gpu_compiler_version(detail::nvrtc()); }

QD_FUNC std::vector<int> nvrtc_supported_archs() {
  const gpu_compiler_api& api = detail::nvrtc();
  int n = 0;
  QD_GPU_CALL(api, supported_arch_count, &n);
  std::vector<int> archs(static_cast<std::size_t>(std::max(n, 0)));
  if (n > 0) QD_GPU_CALL(api, supported_archs, archs.data());
  return archs;
}

}  // namespace qd::inline v0::backend::cuda
