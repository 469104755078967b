// The AMD GPU backend as a device: device memory, hipRTC to a code object for the
// device's gfx target, HIP modules, one launch per task; or compile-only, no GPU.
#pragma once

#include <memory>
#include <string>

#include "quadrants/backend/device.hpp"
#include "quadrants/base/api.hpp"

namespace qd::inline v0::backend::amdgpu {

struct device_options {
  int ordinal = -1;           // which GPU; -1: $QD_AMDGPU_DEVICE, else 0
  std::string arch;           // "gfx90a"; empty: the device's own (required when compile_only)
  bool compile_only = false;  // hipRTC only: no runtime, no GPU, nothing can run
  int opt_level = 2;
  bool fast_math = false;
};

// Opens the HIP runtime and the GPU (not when compile_only) and locates hipRTC,
// which is opened on the first compile. Throws qd::driver_error naming what is
// missing, qd::user_error for bad options.
QD_FUNC std::unique_ptr<device> make_device(const device_options& options);

}  // namespace qd::inline v0::backend::amdgpu

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/amdgpu/device-inl.hpp"
#endif
