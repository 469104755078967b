// A lowered task as a GLSL 4.60 compute shader for the Vulkan backend: the task's
// markers, then its code in #ifdef QD_TASK_<entry>, after the prelude (glsl_prelude.hpp).
#pragma once

#include <string>
#include <string_view>

#include "quadrants/base/api.hpp"
#include "quadrants/base/dtype.hpp"
#include "quadrants/codegen/glsl_target.hpp"
#include "quadrants/codegen/lower.hpp"

namespace qd::inline v0::codegen {

struct glsl_options {
  bool bounds_checks = false;  // check every index against the shape, report the first violation
  glsl_target target;          // the device's optional types and atomics
};

// The shader source of one task. Identical tasks give identical text (nodes are named by
// canonical number), so the text is a cache key input. A type or atomic the target lacks
// is a qd::user_error naming `what` (the kernel), the type and the missing device feature.
QD_FUNC std::string emit_glsl_task(const lowered_task& t, std::string_view entry, const glsl_options& options,
                                   std::string_view what);

// The GLSL type of a value of `t` (u8 values are 32-bit uints; only storage is 8-bit).
QD_FUNC std::string_view glsl_type(dtype t);

}  // namespace qd::inline v0::codegen

#ifdef QD_HEADER_ONLY
#include "quadrants/codegen/glsl_emitter-inl.hpp"
#endif
