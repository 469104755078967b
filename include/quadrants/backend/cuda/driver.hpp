// The CUDA driver API (libcuda.so.1, or QD_CUDA_PATH): its entry points are the CUDA
// column of backend/gpu_driver.hpp's table; here, where libcuda is found.
#pragma once

#include "quadrants/backend/gpu_driver.hpp"
#include "quadrants/backend/shared_library.hpp"
#include "quadrants/base/api.hpp"

namespace qd::inline v0::backend::cuda {

using driver_api = gpu_driver_api<gpu_vendor::cuda>;

inline constexpr int attribute_multiprocessor_count = 16;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
inline constexpr int attribute_cc_major = 75;              // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
inline constexpr int attribute_cc_minor = 76;              // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

// Where libcuda is looked for (QD_CUDA_PATH, then the usual directories).
QD_FUNC library_search driver_library();

// Opens the driver on first use and resolves every entry point; a missing library
// or required symbol is a qd::driver_error naming it. Does not call cuInit.
QD_FUNC const driver_api& driver();

}  // namespace qd::inline v0::backend::cuda

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/cuda/driver-inl.hpp"
#endif
