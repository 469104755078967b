// The CUDA dialect of the GPU prelude (NVRTC declares the built-ins).
#pragma once

#include <string>

#include "quadrants/backend/gpu_prelude.hpp"

namespace qd::inline v0::backend::cuda {

// Element offsets below 2^31 are 32-bit: one IMAD.WIDE per access (docs/benchmarks.md,
// "Static GPU code"); an array of 2^31 elements or more gets a 64-bit variant of its own.
inline constexpr bool wide_offsets = false;

inline std::string translation_unit_prelude() {
  return gpu_translation_unit_prelude("CUDA",
                                      "#define QD_FN __device__ __forceinline__\n"
                                      // its address is taken without a copy
                                      "#define QD_GRID_CONSTANT __grid_constant__\n",
                                      wide_offsets);
}

// The kernel a device loop's body ends with (backend/cuda/device.hpp, docs/graphs.md): the
// conditional WHILE node's condition from the do_while flag. cudaGraphSetConditional is a
// device runtime built-in, declared here as NVRTC needs it without CUDA headers.
inline const char* graph_loop_source() {
  return "typedef unsigned long long cudaGraphConditionalHandle;\n"
         "extern \"C\" __device__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned int value);\n"
         "extern \"C\" __global__ void qd_graph_set_while(const int* flag, cudaGraphConditionalHandle handle) {\n"
         "  cudaGraphSetConditional(handle, *flag != 0 ? 1u : 0u);\n"
         "}\n";
}

}  // namespace qd::inline v0::backend::cuda
