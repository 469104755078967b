// Implementation of backend/amdgpu/hiprtc.hpp.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <type_traits>

#include "quadrants/backend/amdgpu/hip.hpp"
#include "quadrants/backend/amdgpu/hiprtc.hpp"
#include "quadrants/backend/compiler_log.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/detail/format.hpp"

namespace qd::backend::amdgpu {
namespace detail {

using hiprtcResult = int;
using hiprtcProgram = struct hiprtc_program_st*;
inline constexpr hiprtcResult hiprtc_success = 0;

// One row per entry point: the table's member, the exported symbol, its type.
#define QD_HIPRTC_ENTRY_POINTS(X)                                                                             \
  X(version, "hiprtcVersion", hiprtcResult(int*, int*))                                                       \
  X(create_program, "hiprtcCreateProgram",                                                                    \
    hiprtcResult(hiprtcProgram*, const char*, const char*, int, const char* const*, const char* const*))      \
  X(destroy_program, "hiprtcDestroyProgram", hiprtcResult(hiprtcProgram*))                                    \
  X(compile_program, "hiprtcCompileProgram", hiprtcResult(hiprtcProgram, int, const char* const*))            \
  X(get_code_size, "hiprtcGetCodeSize", hiprtcResult(hiprtcProgram, std::size_t*))                            \
  X(get_code, "hiprtcGetCode", hiprtcResult(hiprtcProgram, char*))                                            \
  X(get_log_size, "hiprtcGetProgramLogSize", hiprtcResult(hiprtcProgram, std::size_t*))                       \
  X(get_log, "hiprtcGetProgramLog", hiprtcResult(hiprtcProgram, char*))                                       \
  X(error_string, "hiprtcGetErrorString", const char*(hiprtcResult))

struct hiprtc_api {
#define QD_HIPRTC_MEMBER(member, exported, type) std::add_pointer_t<type> member = nullptr;
  QD_HIPRTC_ENTRY_POINTS(QD_HIPRTC_MEMBER)
#undef QD_HIPRTC_MEMBER
};

QD_FUNC const hiprtc_api& hiprtc() {
  static const hiprtc_api api = [] {
    static const shared_library library(hiprtc_library());
    hiprtc_api a;
#define QD_HIPRTC_RESOLVE(member, exported, type) \
  a.member = reinterpret_cast<std::add_pointer_t<type>>(library.symbol(exported));
    QD_HIPRTC_ENTRY_POINTS(QD_HIPRTC_RESOLVE)
#undef QD_HIPRTC_RESOLVE
    return a;
  }();
  return api;
}

// hipRTC (HIP 5's comgr underneath) crashes when two threads compile at once:
// programs are compiled one at a time, whichever thread asks.
inline std::mutex hiprtc_mutex;

QD_FUNC void check_hiprtc(hiprtcResult r, const char* call) {
  if (r == hiprtc_success) return;
  throw driver_error(fmt::format("hipRTC call {} failed: {} ({})", call, hiprtc().error_string(r), r), call, r);
}

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
    throw user_error(fmt::format("amdgpu_arch = \"{}\" {}; use a gfx processor with optional features, e.g. "
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
      "gfx801", "gfx810", "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c", "gfx940",
      "gfx941", "gfx942", "gfx950", "gfx1010", "gfx1011", "gfx1012", "gfx1013", "gfx9-generic", "gfx9-4-generic",
      "gfx10-1-generic"};
  static constexpr std::string_view with_sramecc[] = {"gfx906", "gfx908", "gfx90a", "gfx940", "gfx941",
                                                      "gfx942", "gfx950", "gfx9-4-generic"};
  std::vector<std::string> seen;
  while (colon != std::string::npos) {
    std::size_t next = target.find(':', colon + 1);
    std::string feature = target.substr(colon + 1, next == std::string::npos ? std::string::npos : next - colon - 1);
    if (feature != "sramecc+" && feature != "sramecc-" && feature != "xnack+" && feature != "xnack-")
      bad(fmt::format("has the feature \"{}\"; the features are sramecc and xnack, each with + or -", feature));
    std::string base = feature.substr(0, feature.size() - 1);
    if (std::find(seen.begin(), seen.end(), base) != seen.end()) bad(fmt::format("names {} twice", base));
    seen.push_back(base);
    auto has = [&](const auto& table) { return std::find(std::begin(table), std::end(table), processor) != std::end(table); };
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
      std::string processor(text.substr(at + 2, text.find(':', at) == std::string_view::npos
                                                     ? std::string_view::npos
                                                     : text.find(':', at) - at - 2));
      if (std::find(out.begin(), out.end(), processor) == out.end()) out.push_back(processor);
    }
    return out;
  }();
  return processors;
}

QD_FUNC std::vector<std::byte> compile_code_object(std::string_view source, const hiprtc_options& options,
                                                   std::string_view what) {
  using namespace detail;
  const hiprtc_api& api = hiprtc();
  check_gfx_spelling(options.arch);
  const auto& known = known_gfx_processors();
  const std::string processor = options.arch.substr(0, options.arch.find(':'));
  if (!known.empty() && std::find(known.begin(), known.end(), processor) == known.end()) {
    std::string list;
    for (const auto& p : known) list += (list.empty() ? "" : " ") + p;
    throw user_error(fmt::format("{}: amdgpu_arch = \"{}\": the installed hipRTC cannot compile for {} (it knows: "
                                 "{}); choose one of those, or install a HIP version that supports {}",
                                 what, options.arch, processor, list, processor));
  }
  auto flags = hiprtc_flags(options);
  std::vector<const char*> argv;
  for (const auto& f : flags) argv.push_back(f.c_str());
  std::string text(source);
  constexpr const char* program_name = "qd_generated.hip";
  std::lock_guard serialized(hiprtc_mutex);
  hiprtcProgram program = nullptr;
  check_hiprtc(api.create_program(&program, text.c_str(), program_name, 0, nullptr, nullptr), "hiprtcCreateProgram");
  struct destroy {
    const hiprtc_api& api;
    hiprtcProgram& p;
    ~destroy() { api.destroy_program(&p); }
  } cleanup{api, program};
  hiprtcResult r = api.compile_program(program, static_cast<int>(argv.size()), argv.data());
  std::size_t log_size = 0;
  std::string log;
  if (api.get_log_size(program, &log_size) == hiprtc_success && log_size > 1) {
    log.resize(log_size);
    if (api.get_log(program, log.data()) != hiprtc_success) log.clear();
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  }
  std::string options_text;
  for (const auto& f : flags) options_text += f + " ";
  if (r != hiprtc_success) {
    // comgr names the source "CompileSource" in its diagnostics, whatever the program's name.
    std::string line = quote_generated_line(log, source, program_name);
    if (line.empty()) line = quote_generated_line(log, source, "CompileSource");
    throw compile_error(fmt::format("{}: hipRTC rejected generated HIP code ({}, options: {}).\n{}\n{}\nThis is a bug "
                                    "in Quadrants' code generation unless the hipRTC in use is unsuitable; please "
                                    "report it with this message",
                                    what, api.error_string(r), options_text, line, log),
                        std::string(what), options_text, std::string(source), log);
  }
  std::size_t size = 0;
  check_hiprtc(api.get_code_size(program, &size), "hiprtcGetCodeSize");
  std::vector<std::byte> code(size);
  check_hiprtc(api.get_code(program, reinterpret_cast<char*>(code.data())), "hiprtcGetCode");
  return code;
}

QD_FUNC std::string hiprtc_version() {
  int major = 0, minor = 0;
  detail::check_hiprtc(detail::hiprtc().version(&major, &minor), "hiprtcVersion");
  return fmt::format("{}.{}", major, minor);
}

}  // namespace qd::backend::amdgpu
