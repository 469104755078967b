// The backends of this build and how each makes its device: the one list a new
// backend joins. The runtime asks it for a device and reads the device's traits.
#pragma once

#include <memory>
#include <string>

#include "quadrants/backend/device.hpp"
#include "quadrants/base/api.hpp"
#include "quadrants/base/arch.hpp"

namespace qd::backend {

// What any backend may need to make its device (each reads its own fields).
struct device_request {
  bool compile_only = false;  // compile and cache, no device (GPU backends)
  int opt_level = 2;
  bool fast_math = false;
  int cuda_arch = 0;          // sm as major * 10 + minor; 0: the GPU's own
  std::string amdgpu_arch;    // "gfx90a"; empty: the GPU's own
  unsigned cpu_threads = 0;   // 0: all hardware threads
  int compile_timeout_seconds = 600;  // the host compiler's limit; 0: none (CPU)
};

// The device for `a`; null when this build has no backend for it. A backend whose
// library, symbol or GPU is missing throws qd::driver_error.
QD_FUNC std::unique_ptr<device> make_device(arch a, const device_request& r);

}  // namespace qd::backend

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/registry-inl.hpp"
#endif
