// The HIP dialect of the GPU prelude (hipRTC includes the HIP built-ins).
#pragma once

#include <string>

#include "quadrants/backend/gpu_prelude.hpp"

namespace qd::inline v0::backend::amdgpu {

// v_mad_i64_i32 widens, multiplies and adds in one instruction: 64-bit element offsets are
// the cheaper ones, so every variant has them (device_traits::wide_offsets).
inline constexpr bool wide_offsets = true;

inline std::string translation_unit_prelude() {
  return gpu_translation_unit_prelude("HIP",
                                      "#define QD_FN __device__ inline __attribute__((always_inline))\n"
                                      // kernel arguments are read in place from the kernarg segment
                                      "#define QD_GRID_CONSTANT\n",
                                      wide_offsets);
}

}  // namespace qd::inline v0::backend::amdgpu
