// The CUDA backend as a device: device memory, NVRTC to CUBIN for the device's
// sm_XX, modules loaded by the driver, one launch per task; or compile-only, no GPU.
#pragma once

#include <memory>

#include "quadrants/backend/device.hpp"
#include "quadrants/base/api.hpp"

namespace qd::inline v0::backend::cuda {

struct device_options {
  int ordinal = -1;           // which GPU; -1: $QD_CUDA_DEVICE, else 0
  int arch = 0;               // sm as major * 10 + minor; 0: the device's own (required when compile_only)
  bool compile_only = false;  // NVRTC only: no driver, no GPU, nothing can run
  int opt_level = 2;
  bool fast_math = false;
};

// Opens the driver and the GPU (not when compile_only) and locates NVRTC, which
// is opened on the first compile. Throws qd::driver_error naming what is missing
// (a library and its variable, or the device), qd::user_error for bad options.
QD_FUNC std::unique_ptr<device> make_device(const device_options& options);

}  // namespace qd::inline v0::backend::cuda

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/cuda/device-inl.hpp"
#endif
