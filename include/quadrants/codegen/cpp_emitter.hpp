// The device-neutral C++ body of a lowered task. A per-backend prelude
// (codegen/*_prelude.hpp) supplies types, math, atomics and the task wrappers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "quadrants/base/api.hpp"
#include "quadrants/codegen/lower.hpp"

namespace qd::inline v0::codegen {

struct emit_options {
  bool bounds_checks = false;  // check every index against the shape, report the first violation
  std::string_view kernel;     // the kernel's name, for a backend's errors (a type its device lacks)
  // A GPU combines a loop's reductions in a fixed order (the config's deterministic_reductions),
  // using the scratch region at this offset after the global temporaries. The CPU always does.
  bool deterministic_reductions = false;
  std::size_t reduction_scratch_offset = 0;
  // Element offsets in 64 bits. Without it they are 32-bit (one multiply-add per dimension on
  // the GPUs, no widening), which holds while every array has fewer than 2^31 elements; a
  // launch with a larger array runs the kernel's variant built with this (launch-inl.hpp).
  bool wide_offsets = false;
};

// Source for one task: helper functions named after `entry` and one
// QD_PARALLEL_TASK(entry) or QD_SERIAL_TASK(entry) line. Identical tasks give
// identical text (nodes are named by canonical number), so the text is a cache key input.
QD_FUNC std::string emit_task(const lowered_task& t, std::string_view entry, const emit_options& options);

// C type name used in generated code, e.g. qd_f32.
QD_FUNC std::string_view c_type(dtype t);

}  // namespace qd::inline v0::codegen

#ifdef QD_HEADER_ONLY
#include "quadrants/codegen/cpp_emitter-inl.hpp"
#endif
