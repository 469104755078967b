// The CUDA dialect of the GPU prelude (NVRTC declares the built-ins).
#pragma once

#include <string>

#include "quadrants/backend/gpu_prelude.hpp"

namespace qd::backend::cuda {

inline std::string translation_unit_prelude() {
  return gpu_translation_unit_prelude("CUDA",
                                      "#define QD_FN __device__ __forceinline__\n"
                                      // its address is taken without a copy
                                      "#define QD_GRID_CONSTANT __grid_constant__\n");
}

}  // namespace qd::backend::cuda
