// The GLSL functions generated Vulkan shaders call, by name ("div_i32", "atomic_min_f32",
// "random_u8", "exp_f64", ...): generated per type and device (integer division,
// float-to-int conversion, atomics, random numbers, bit counts, the error and print
// records, 8- and 16-bit elements through words), or from the math library
// (glsl_math.hpp); and the expressions the emitter shares with them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/base/dtype.hpp"
#include "quadrants/codegen/glsl_target.hpp"
#include "quadrants/ir/node.hpp"

namespace qd::inline v0::codegen {

struct glsl_helper {
  glsl_helper(std::string c, std::vector<std::string> helpers = {}) : code(std::move(c)), calls(std::move(helpers)) {}
  glsl_helper(const char* c) : code(c) {}
  std::string code;
  std::vector<std::string> calls;  // helpers it calls, to be emitted before it
};

// Helper `name` for `target`; an unknown name is a qd::internal_error.
QD_FUNC glsl_helper glsl_helper_code(const std::string& name, const glsl_target& target);

// A 32-bit value `x` of narrow type t (i8 and i16 sign-extended ints, u8 and u16 masked
// uints) brought back into t's range; other types unchanged.
QD_FUNC std::string glsl_narrow(dtype t, const std::string& x);

// The value an atomic `o` on type t leaves, given the old value, the operand and (cas) the
// expected value: codegen/prelude.hpp's qd_rmw_* in GLSL (f16, kept as bits, computes in
// f32 through the "f16" helper; float min and max replace a stored NaN; cas compares bits).
QD_FUNC std::string glsl_update(ir::atomic_op o, dtype t, const std::string& old, const std::string& v,
                                const std::string& expected);

}  // namespace qd::inline v0::codegen

#ifdef QD_HEADER_ONLY
#include "quadrants/codegen/glsl_helpers-inl.hpp"
#endif
