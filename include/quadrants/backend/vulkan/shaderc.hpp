// shaderc (libshaderc.so.1, or QD_SHADERC_PATH), opened with dlopen: GLSL compute
// shaders compiled to SPIR-V in-process, for Vulkan 1.2. No shaderc header is needed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quadrants/backend/shared_library.hpp"
#include "quadrants/base/api.hpp"

namespace qd::inline v0::backend::vulkan {

struct glsl_compile_options {
  // spirv-opt's performance passes: off by default, since every driver optimizes the
  // SPIR-V again (docs/benchmarks.md has both timings).
  bool optimize = false;
};

// Where shaderc is looked for (QD_SHADERC_PATH, then the usual directories).
QD_FUNC library_search shaderc_library();

// The located library's path, size and modification time, for cache keys; opens nothing.
QD_FUNC std::string shaderc_fingerprint();

// The SPIR-V version and revision this shaderc emits, e.g. "SPIR-V 1.6 rev 1" (opens it).
QD_FUNC std::string shaderc_version();

// The options as glslc would spell them, for cache keys and messages.
QD_FUNC std::string shaderc_flags(const glsl_compile_options& options);

// Compiles `source` as a compute shader with each of `defines` defined (as 1). A rejected
// shader is a qd::compile_error naming `what`, with shaderc's log and the offending
// generated line; a missing library a qd::driver_error naming QD_SHADERC_PATH.
QD_FUNC std::vector<std::uint32_t> compile_glsl(std::string_view source, std::span<const std::string> defines,
                                                const glsl_compile_options& options, std::string_view what);

}  // namespace qd::inline v0::backend::vulkan

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/vulkan/shaderc-inl.hpp"
#endif
