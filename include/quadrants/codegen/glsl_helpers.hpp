// The GLSL functions generated Vulkan shaders call, by name ("div_i32", "atomic_min_f32",
// "random_u8", "exp_f64", ...): generated per type and device (integer division,
// float-to-int conversion, atomics, random numbers, the error and print records, u8
// elements through words), or from the math library (glsl_math.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/codegen/glsl_target.hpp"

namespace qd::inline v0::codegen {

struct glsl_helper {
  glsl_helper(std::string c, std::vector<std::string> helpers = {}) : code(std::move(c)), calls(std::move(helpers)) {}
  glsl_helper(const char* c) : code(c) {}
  std::string code;
  std::vector<std::string> calls;  // helpers it calls, to be emitted before it
};

// Helper `name` for `target`; an unknown name is a qd::internal_error.
QD_FUNC glsl_helper glsl_helper_code(const std::string& name, const glsl_target& target);

}  // namespace qd::inline v0::codegen

#ifdef QD_HEADER_ONLY
#include "quadrants/codegen/glsl_helpers-inl.hpp"
#endif
