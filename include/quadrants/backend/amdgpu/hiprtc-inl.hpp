// Implementation of backend/amdgpu/hiprtc.hpp.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "quadrants/backend/amdgpu/hip.hpp"
#include "quadrants/backend/amdgpu/hiprtc.hpp"
#include "quadrants/backend/gpu_compiler.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::backend::amdgpu {
namespace detail {

QD_FUNC const gpu_compiler_api& hiprtc() {
  return process_entry_points<gpu_compiler_api, &hiprtc_library>({.vendor = gpu_vendor::amd, .calls = "hipRTC call"});
}

// hipRTC (HIP 5's comgr underneath) crashes when two threads compile at once:
// programs are compiled one at a time, whichever thread asks.
inline std::mutex hiprtc_mutex;

}  // namespace detail

QD_FUNC library_search hiprtc_library() {
  library_search s = hip_library();
  s.what = "hipRTC (the HIP run-time compiler: libhiprtc, or libamdhip64 before HIP 6)";
  s.names = {"libhiprtc.so.6", "libhiprtc.so", "libamdhip64.so.5", "libamdhip64.so"};
  s.variables = {"QD_HIPRTC_PATH", "QD_HIP_PATH"};
  return s;
}

QD_FUNC std::string hiprtc_fingerprint() { return library_fingerprint(hiprtc_library()); }

QD_FUNC std::vector<std::string> hiprtc_flags(const hiprtc_options& o) {
  std::vector<std::string> flags = {"--offload-arch=" + o.arch, "-std=c++17",
                                    fmt::format("-O{}", std::clamp(o.opt_level, 0, 3))};
  // Without fast_math, no contraction into FMAs: the same results as the CPU backend.
  flags.push_back(o.fast_math ? "-ffast-math" : "-ffp-contract=off");
  return flags;
}

QD_FUNC void check_gfx_spelling(const std::string& target) {
  auto bad = [&](std::string_view why) {
    throw user_error(
        fmt::format("amdgpu_arch = \"{}\" {}; use a gfx processor with optional features, e.g. "
                    "\"gfx90a\" or \"gfx90a:sramecc+:xnack-\"",
                    target, why));
  };
  std::size_t colon = target.find(':');
  std::string processor = target.substr(0, colon);
  if (processor.size() < 4 || processor.rfind("gfx", 0) != 0) bad("is not a gfx target");
  for (char ch : processor)
    if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || ch == '-')) bad("has a character no processor has");
  // The processors that have each feature (LLVM's AMDGPU processor table). comgr
  // aborts the process on a feature its processor lacks, so that is refused here.
  static constexpr std::string_view with_xnack[] = {
      "gfx801",  "gfx810",  "gfx900",  "gfx902",  "gfx904",       "gfx906",         "gfx908",
      "gfx909",  "gfx90a",  "gfx90c",  "gfx940",  "gfx941",       "gfx942",         "gfx950",
      "gfx1010", "gfx1011", "gfx1012", "gfx1013", "gfx9-generic", "gfx9-4-generic", "gfx10-1-generic"};
  static constexpr std::string_view with_sramecc[] = {"gfx906", "gfx908", "gfx90a", "gfx940",
                                                      "gfx941", "gfx942", "gfx950", "gfx9-4-generic"};
  std::vector<std::string> seen;
  while (colon != std::string::npos) {
    std::size_t next = target.find(':', colon + 1);
    std::string feature = target.substr(colon + 1, next == std::string::npos ? std::string::npos : next - colon - 1);
    if (feature != "sramecc+" && feature != "sramecc-" && feature != "xnack+" && feature != "xnack-")
      bad(fmt::format("has the feature \"{}\"; the features are sramecc and xnack, each with + or -", feature));
    std::string base = feature.substr(0, feature.size() - 1);
    if (std::find(seen.begin(), seen.end(), base) != seen.end()) bad(fmt::format("names {} twice", base));
    seen.push_back(base);
    auto has = [&](const auto& table) {
      return std::find(std::begin(table), std::end(table), processor) != std::end(table);
    };
    if (!(base == "xnack" ? has(with_xnack) : has(with_sramecc)))
      bad(fmt::format("asks for {}, which {} does not have (leave the feature out)", base, processor));
    colon = next;
  }
}

QD_FUNC const std::vector<std::string>& known_gfx_processors() {
  static const std::vector<std::string> processors = [] {
    std::vector<std::string> out;
    // comgr comes with hipRTC, which is open by now: prefer the copy already loaded.
    void* handle = nullptr;
    for (int flags : {RTLD_NOW | RTLD_NOLOAD, RTLD_NOW | RTLD_LOCAL})
      for (const char* name : {"libamd_comgr.so.3", "libamd_comgr.so.2", "libamd_comgr.so"})
        if (!handle) handle = ::dlopen(name, flags);
    if (!handle) return out;
    using count_fn = int (*)(std::size_t*);
    using name_fn = int (*)(std::size_t, const char**);
    auto count = reinterpret_cast<count_fn>(::dlsym(handle, "amd_comgr_get_isa_count"));
    auto name = reinterpret_cast<name_fn>(::dlsym(handle, "amd_comgr_get_isa_name"));
    std::size_t n = 0;
    if (!count || !name || count(&n) != 0) return out;
    for (std::size_t i = 0; i < n; ++i) {
      const char* isa = nullptr;  // "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"
      if (name(i, &isa) != 0 || isa == nullptr) continue;
      std::string_view text(isa);
      std::size_t at = text.rfind("--");
      if (at == std::string_view::npos) continue;
      std::string processor(text.substr(
          at + 2, text.find(':', at) == std::string_view::npos ? std::string_view::npos : text.find(':', at) - at - 2));
      if (std::find(out.begin(), out.end(), processor) == out.end()) out.push_back(processor);
    }
    return out;
  }();
  return processors;
}

QD_FUNC std::vector<std::byte> compile_code_object(std::string_view source, const hiprtc_options& options,
                                                   std::string_view what) {
  const gpu_compiler_api& api = detail::hiprtc();
  check_gfx_spelling(options.arch);
  const auto& known = known_gfx_processors();
  const std::string processor = options.arch.substr(0, options.arch.find(':'));
  if (!known.empty() && std::find(known.begin(), known.end(), processor) == known.end()) {
    std::string list;
    for (const auto& p : known) list += (list.empty() ? "" : " ") + p;
    throw user_error(
        fmt::format("{}: amdgpu_arch = \"{}\": the installed hipRTC cannot compile for {} (it knows: "
                    "{}); choose one of those, or install a HIP version that supports {}",
                    what, options.arch, processor, list, processor));
  }
  const auto flags = hiprtc_flags(options);
  constexpr const char* program_name = "qd_generated.hip";
  std::unique_lock serialized(detail::hiprtc_mutex);
  gpu_program_outcome out = compile_gpu_program(api, source, program_name, flags);
  serialized.unlock();
  // comgr names the source "CompileSource" in its diagnostics, whatever the program's name.
  if (out.result != gpu_success)
    throw rejected_program("hipRTC", "HIP", what, api.error_string(out.result), flags, source, out.log,
                           {program_name, "CompileSource"});
  return std::move(out.code);
}

QD_FUNC std::string hiprtc_version() { return gpu_compiler_version(detail::hiprtc()); }

}  // namespace qd::inline v0::backend::amdgpu
