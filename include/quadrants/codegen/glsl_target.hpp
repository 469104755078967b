// What a Vulkan device offers generated GLSL: its optional types and atomics. The
// emitter reads it, and its key() is part of the cache key of every shader.
#pragma once

#include <string>

namespace qd::inline v0::codegen {

// Every device the Vulkan backend accepts has 64-bit integers (shaderInt64) and buffer
// device addresses; the rest is optional.
struct glsl_target {
  bool f64 = false;             // shaderFloat64: f64 values (else a qd::user_error naming it)
  bool int8_storage = false;    // storageBuffer8BitAccess: u8 and i8 arrays as bytes (else through their 32-bit words)
  bool int16_storage = false;   // storageBuffer16BitAccess: i16, u16 and f16 arrays as 16-bit words (else as u8's)
  bool i64_atomics = false;     // shaderBufferInt64Atomics: i64 and u64 atomics, f64 ones as 64-bit compare-and-swap
  bool f32_atomic_add = false;  // shaderBufferFloat32AtomicAdd (VK_EXT_shader_atomic_float): native f32 add
  bool f64_atomic_add = false;  // shaderBufferFloat64AtomicAdd: native f64 add
  bool fused_fma = false;       // fma() rounds once (GPUs); else qd::fma is emulated exactly (lavapipe)
  // A CPU driver (lavapipe: llvmpipe on Mesa 22.3, LLVM 15), whose compiler needs values
  // it must not see through (qd_opaque, an exclusive-or with a zero it cannot prove, in
  // glsl_prelude): an atomic's integer operand (LLVM folds a float's bits into the atomic,
  // then aborts the process with "Cannot select"), and a float made from a bool (NIR turns
  // x * float(b) into b ? x : 0, which loses the sign of -x * 0 and NaNs).
  bool lavapipe_workarounds = false;
  // shaderSignedZeroInfNanPreserveFloat32 and Float64: shaders request that NaNs, infinities
  // and the sign of zero are kept (without it a driver may fold x * 0 to 0, as lavapipe does).
  bool preserve_nan32 = false;
  bool preserve_nan64 = false;
  // Reported for completeness: no dtype needs them, so they are not in the key (the narrow
  // integers compute in 32 bits, f16 is kept as its bits and computes in f32).
  bool f16 = false;                   // shaderFloat16 and storageBuffer16BitAccess
  bool int8_arithmetic = false;       // shaderInt8
  unsigned max_workgroup_size = 128;  // maxComputeWorkGroupSize[0] and maxComputeWorkGroupInvocations
  unsigned subgroup_size = 0;

  // The features the generated code depends on, e.g. "f64 i8s i16s i64a f32add".
  std::string key() const {
    std::string k;
    auto add = [&](bool on, const char* name) {
      if (!on) return;
      if (!k.empty()) k += ' ';
      k += name;
    };
    add(f64, "f64");
    add(int8_storage, "i8s");
    add(int16_storage, "i16s");
    add(i64_atomics, "i64a");
    add(f32_atomic_add, "f32add");
    add(f64_atomic_add, "f64add");
    add(fused_fma, "ffma");
    add(lavapipe_workarounds, "lavapipe");
    add(preserve_nan32, "szinp32");
    add(preserve_nan64, "szinp64");
    return k.empty() ? "baseline" : k;
  }
};

}  // namespace qd::inline v0::codegen
