// Implementation of codegen/glsl_prelude.hpp.
#pragma once

#include "quadrants/base/limits.hpp"
#include "quadrants/codegen/glsl_prelude.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::codegen {

QD_FUNC std::string glsl_prelude(const glsl_target& t) {
  std::string s =
      "#version 460\n"
      "/* Quadrants generated code: Vulkan compute shaders (GLSL 4.60 for SPIR-V 1.5). Each task is compiled\n"
      "   on its own, with QD_TASK_<entry> defined. */\n"
      "#extension GL_EXT_buffer_reference : require\n"
      "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n";
  if (t.int8_storage) s += "#extension GL_EXT_shader_8bit_storage : require\n";
  if (t.int16_storage) s += "#extension GL_EXT_shader_16bit_storage : require\n";
  if (t.i64_atomics) s += "#extension GL_EXT_shader_atomic_int64 : require\n";
  if (t.f32_atomic_add || t.f64_atomic_add) s += "#extension GL_EXT_shader_atomic_float : require\n";
  // SPIR-V's SignedZeroInfNanPreserve execution mode (4461; capability 4466, core in SPIR-V 1.4)
  // for 32- and 64-bit floats, where the device allows it: C++'s NaNs and signed zeros.
  if (t.preserve_nan32 || t.preserve_nan64) s += "#extension GL_EXT_spirv_intrinsics : require\n";
  if (t.preserve_nan32) s += "spirv_execution_mode(capabilities = [4466], 4461, 32);\n";
  if (t.preserve_nan64) s += "spirv_execution_mode(capabilities = [4466], 4461, 64);\n";
  s += fmt::format(
      "layout(push_constant) uniform qd_push_block {{\n"
      "  uint64_t params; uint64_t temps; uint64_t error; uint64_t print; uint64_t rng_stream;\n"
      "}} qd_push;\n"
      "struct qd_array {{ uint64_t data; uint64_t grad; int64_t shape[{0}]; }};\n"
      "layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer qd_params_ref {{\n"
      "  qd_array arrays[{1}]; uint64_t scalars[{1}];\n"
      "}};\n",
      limits::max_ndim, limits::max_kernel_params);
  // One element at an address, per type: qd_f32_ref(address).v; the volatile twin for
  // qd::volatile_load.
  auto ref = [&](const char* name, const char* type, int align) {
    s += fmt::format(
        "layout(buffer_reference, std430, buffer_reference_align = {2}) buffer qd_{0}_ref {{ {1} v; }};\n"
        "layout(buffer_reference, std430, buffer_reference_align = {2}) volatile buffer qd_{0}_vref {{ {1} "
        "v; }};\n",
        name, type, align);
  };
  // i32 to i64 by its two halves: Mesa 22.3's lavapipe miscompiles int64_t(i) < c when i is
  // a 32-bit value it can see being widened (the comparison comes out false for i < 0).
  s += "int64_t qd_sext(int v) { return packInt2x32(ivec2(v, v >> 31)); }\n";
  // An atomic's integer operand, unchanged, through an operation LLVM cannot fold away
  // (the parameter block's address is below 2^63): see glsl_target::lavapipe_workarounds.
  if (t.lavapipe_workarounds)
    s += "uint qd_opaque(uint x) { return x ^ uint(qd_push.params >> 63); }\n"
         "int qd_opaque(int x) { return x ^ int(qd_push.params >> 63); }\n"
         "uint64_t qd_opaque(uint64_t x) { return x ^ (qd_push.params >> 63); }\n"
         "int64_t qd_opaque(int64_t x) { return x ^ int64_t(qd_push.params >> 63); }\n";
  ref("i32", "int", 4);
  ref("u32", "uint", 4);
  ref("i64", "int64_t", 8);
  ref("u64", "uint64_t", 8);
  ref("f32", "float", 4);
  if (t.f64) ref("f64", "double", 8);
  if (t.int8_storage) ref("u8", "uint8_t", 1), ref("i8", "int8_t", 1);
  if (t.int16_storage) ref("u16", "uint16_t", 2), ref("i16", "int16_t", 2);
  return s;
}

}  // namespace qd::inline v0::codegen
