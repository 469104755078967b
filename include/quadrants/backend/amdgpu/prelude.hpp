// The HIP dialect of the GPU prelude (hipRTC includes the HIP built-ins).
#pragma once

#include <string>

#include "quadrants/backend/gpu_prelude.hpp"

namespace qd::inline v0::backend::amdgpu {

inline std::string translation_unit_prelude() {
  return gpu_translation_unit_prelude("HIP",
                                      "#define QD_FN __device__ inline __attribute__((always_inline))\n"
                                      // kernel arguments are read in place from the kernarg segment
                                      "#define QD_GRID_CONSTANT\n"
                                      // v_mad_i64_i32 widens, multiplies and adds in one
                                      // instruction: 64-bit offsets are the cheaper ones
                                      // (the runtime is told: gpu_driver.hpp, wide_offsets)
                                      "#define QD_OFFSET qd_i64\n");
}

}  // namespace qd::inline v0::backend::amdgpu
