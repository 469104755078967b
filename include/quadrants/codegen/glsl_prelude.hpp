// What every Vulkan compute shader of Quadrants starts with: the GLSL version and
// extensions, the launch ABI (push constants, the parameter block) and the buffer
// reference types through which arrays, temporaries and records are reached.
#pragma once

#include <string>

#include "quadrants/base/api.hpp"
#include "quadrants/codegen/glsl_target.hpp"

namespace qd::inline v0::codegen {

// Workgroup size of a parallel task without qd::loop_config{.block_dim}: every Vulkan
// device runs at least 128 invocations per workgroup.
inline constexpr unsigned glsl_default_workgroup = 128;

// Workgroups hold whole multiples of this many invocations. A serial task runs in one
// such workgroup where every invocation but the first returns at once; a block_dim that is
// not a multiple is rounded up, and the extra invocations return at once. Lavapipe (Mesa
// 22.3) runs a workgroup narrower than its SIMD width with lanes that do not exist, and
// those lanes took part in a loop's exit: a counted loop after a while_ with a store ran
// once (docs/backends.md, "Vulkan"). 32 covers every CPU driver's SIMD width and costs a
// GPU nothing (its subgroups are 32 or 64 wide anyway).
inline constexpr unsigned glsl_workgroup_quantum = 32;

// 64-bit words of qd::print records one launch can hold (after the buffer's 8-byte header).
inline constexpr unsigned glsl_print_words = 131071;

// The launch ABI: push constants with the parameter block's address (the array descriptors,
// 48 bytes each, then the scalars' 64-bit words), the global temporaries, the error record,
// the print buffer, and the random stream. backend/vulkan/device-inl.hpp fills them.
QD_FUNC std::string glsl_prelude(const glsl_target& t);

}  // namespace qd::inline v0::codegen

#ifdef QD_HEADER_ONLY
#include "quadrants/codegen/glsl_prelude-inl.hpp"
#endif
