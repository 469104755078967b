// Implementation of backend/vulkan/shaderc.hpp.
#pragma once

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "quadrants/backend/compiler_log.hpp"
#include "quadrants/backend/vulkan/shaderc.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::backend::vulkan {
namespace detail {

// shaderc's C API (shaderc/shaderc.h, env.h, status.h), the handles and enumerators we
// use; tests/backend/vulkan_shaderc_test.cpp checks them against the header where present.
using shaderc_compiler_t = struct shaderc_compiler*;
using shaderc_compile_options_t = struct shaderc_compile_options*;
using shaderc_compilation_result_t = struct shaderc_compilation_result*;
inline constexpr int shaderc_source_language_glsl = 0;
inline constexpr int shaderc_compute_shader = 2;
inline constexpr int shaderc_target_env_vulkan = 0;
inline constexpr std::uint32_t shaderc_env_version_vulkan_1_2 = (1u << 22) | (2u << 12);
inline constexpr int shaderc_optimization_level_zero = 0;
inline constexpr int shaderc_optimization_level_performance = 2;
inline constexpr int shaderc_compilation_status_success = 0;

// One row per entry point: the table's member, the exported symbol, its type.
#define QD_SHADERC_ENTRY_POINTS(X)                                                                                  \
  X(compiler_initialize, "shaderc_compiler_initialize", shaderc_compiler_t())                                       \
  X(options_initialize, "shaderc_compile_options_initialize", shaderc_compile_options_t())                          \
  X(options_release, "shaderc_compile_options_release", void(shaderc_compile_options_t))                            \
  X(add_macro_definition, "shaderc_compile_options_add_macro_definition",                                           \
    void(shaderc_compile_options_t, const char*, std::size_t, const char*, std::size_t))                            \
  X(set_source_language, "shaderc_compile_options_set_source_language", void(shaderc_compile_options_t, int))       \
  X(set_optimization_level, "shaderc_compile_options_set_optimization_level", void(shaderc_compile_options_t, int)) \
  X(set_target_env, "shaderc_compile_options_set_target_env", void(shaderc_compile_options_t, int, std::uint32_t))  \
  X(compile_into_spv, "shaderc_compile_into_spv",                                                                   \
    shaderc_compilation_result_t(shaderc_compiler_t, const char*, std::size_t, int, const char*, const char*,       \
                                 shaderc_compile_options_t))                                                        \
  X(result_release, "shaderc_result_release", void(shaderc_compilation_result_t))                                   \
  X(result_length, "shaderc_result_get_length", std::size_t(shaderc_compilation_result_t))                          \
  X(result_status, "shaderc_result_get_compilation_status", int(shaderc_compilation_result_t))                      \
  X(result_bytes, "shaderc_result_get_bytes", const char*(shaderc_compilation_result_t))                            \
  X(result_error_message, "shaderc_result_get_error_message", const char*(shaderc_compilation_result_t))            \
  X(spv_version, "shaderc_get_spv_version", void(unsigned*, unsigned*))

struct shaderc_api {
#define QD_SHADERC_MEMBER(member, exported, type) std::add_pointer_t<type> member = nullptr;
  QD_SHADERC_ENTRY_POINTS(QD_SHADERC_MEMBER)
#undef QD_SHADERC_MEMBER
  shaderc_compiler_t compiler = nullptr;  // one per process: compiling through it is thread-safe
};

// The entry point `name` of `library`: through qd_shaderc_symbol in Quadrants' own build of
// shaderc (src/shaderc_shim.cpp, whose shaderc functions are hidden), else by name.
QD_FUNC void* shaderc_symbol(const shared_library& library, const char* name) {
  using lookup = void* (*)(const char*);
  if (auto shim = reinterpret_cast<lookup>(library.optional_symbol("qd_shaderc_symbol"))) {
    if (void* p = shim(name)) return p;
    throw driver_error(fmt::format("{} has no shaderc entry point '{}'; rebuild Quadrants", library.path(), name), name,
                       0);
  }
  return library.symbol(name);
}

QD_FUNC const shaderc_api& shaderc() {
  static const shaderc_api api = [] {
    static const shared_library library(shaderc_library());
    shaderc_api a;
#define QD_SHADERC_RESOLVE(member, exported, type) \
  a.member = reinterpret_cast<std::add_pointer_t<type>>(shaderc_symbol(library, exported));
    QD_SHADERC_ENTRY_POINTS(QD_SHADERC_RESOLVE)
#undef QD_SHADERC_RESOLVE
    a.compiler = a.compiler_initialize();
    if (a.compiler == nullptr)
      throw driver_error("shaderc_compiler_initialize failed: shaderc could not start", "shaderc_compiler_initialize",
                         0);
    return a;
  }();
  return api;
}

// Releases a shaderc object on scope exit.
template <class T, class Release>
struct shaderc_handle {
  T handle;
  Release release;
  shaderc_handle(T h, Release r) : handle(h), release(r) {}
  shaderc_handle(const shaderc_handle&) = delete;
  shaderc_handle& operator=(const shaderc_handle&) = delete;
  ~shaderc_handle() {
    if (handle) release(handle);
  }
};

}  // namespace detail

QD_FUNC library_search shaderc_library() {
  library_search s{
      "shaderc (libshaderc, the GLSL to SPIR-V compiler)",
      {"libqd_shaderc.so", "libshaderc.so.1", "libshaderc_shared.so.1", "libshaderc_shared.so", "libshaderc.so"},
      {"QD_SHADERC_PATH"},
      {}};
#ifdef QD_SHADERC_SHIM_DIRS
  // Where this build put (and installs) libqd_shaderc.so, searched first.
  std::string_view dirs = QD_SHADERC_SHIM_DIRS;
  for (std::size_t at = 0; at <= dirs.size();) {
    std::size_t end = std::min(dirs.find(':', at), dirs.size());
    if (end > at) s.directories.emplace_back(dirs.substr(at, end - at));
    at = end + 1;
  }
#endif
  for (const char* d :
       {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/aarch64-linux-gnu", "/usr/lib", "/usr/local/lib"})
    s.directories.emplace_back(d);
  return s;
}

QD_FUNC std::string shaderc_fingerprint() { return library_fingerprint(shaderc_library()); }

QD_FUNC std::string shaderc_version() {
  unsigned version = 0, revision = 0;
  detail::shaderc().spv_version(&version, &revision);
  return fmt::format("SPIR-V {}.{} rev {}", (version >> 16) & 0xff, (version >> 8) & 0xff, revision);
}

QD_FUNC std::string shaderc_flags(const glsl_compile_options& options) {
  return options.optimize ? "-fshader-stage=compute --target-env=vulkan1.2 -O"
                          : "-fshader-stage=compute --target-env=vulkan1.2 -O0";
}

QD_FUNC std::vector<std::uint32_t> compile_glsl(std::string_view source, std::span<const std::string> defines,
                                                const glsl_compile_options& options, std::string_view what) {
  const detail::shaderc_api& api = detail::shaderc();
  detail::shaderc_handle opts(api.options_initialize(), api.options_release);
  if (opts.handle == nullptr)
    throw driver_error("shaderc_compile_options_initialize failed", "shaderc_compile_options_initialize", 0);
  api.set_source_language(opts.handle, detail::shaderc_source_language_glsl);
  api.set_target_env(opts.handle, detail::shaderc_target_env_vulkan, detail::shaderc_env_version_vulkan_1_2);
  api.set_optimization_level(opts.handle, options.optimize ? detail::shaderc_optimization_level_performance
                                                           : detail::shaderc_optimization_level_zero);
  for (const std::string& d : defines) api.add_macro_definition(opts.handle, d.data(), d.size(), "1", 1);
  constexpr const char* file = "generated.comp";
  detail::shaderc_handle result(api.compile_into_spv(api.compiler, source.data(), source.size(),
                                                     detail::shaderc_compute_shader, file, "main", opts.handle),
                                api.result_release);
  if (result.handle == nullptr)
    throw driver_error("shaderc_compile_into_spv returned no result", "shaderc_compile_into_spv", 0);
  if (api.result_status(result.handle) != detail::shaderc_compilation_status_success) {
    const char* log_text = api.result_error_message(result.handle);
    std::string log = log_text ? log_text : "";
    std::string flags = shaderc_flags(options);
    for (const std::string& d : defines) flags += " -D" + d;
    const std::string line = quote_generated_line(log, source, file);
    throw compile_error(
        fmt::format("{}: shaderc rejected generated GLSL{}{}\n{}", what, line.empty() ? "" : "; ", line, log),
        std::string(what), flags, std::string(source), log);
  }
  const std::size_t bytes = api.result_length(result.handle);
  if (bytes % 4 != 0 || bytes < 20)
    throw driver_error(fmt::format("{}: shaderc returned {} bytes, not a SPIR-V module", what, bytes),
                       "shaderc_compile_into_spv", 0);
  std::vector<std::uint32_t> words(bytes / 4);
  std::memcpy(words.data(), api.result_bytes(result.handle), bytes);
  return words;
}

}  // namespace qd::inline v0::backend::vulkan
