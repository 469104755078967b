// The HIP runtime (libamdhip64, or QD_HIP_PATH): its entry points are the HIP column
// of backend/gpu_driver.hpp's table; here, where it is found.
#pragma once

#include <cstddef>
#include <string>

#include "quadrants/backend/gpu_driver.hpp"
#include "quadrants/backend/shared_library.hpp"
#include "quadrants/base/api.hpp"

namespace qd::inline v0::backend::amdgpu {

using hip_api = gpu_driver_api<gpu_vendor::amd>;

// Where libamdhip64 is looked for (QD_HIP_PATH, $ROCM_PATH, /opt/rocm, the system).
QD_FUNC library_search hip_library();

// Opens the runtime on first use and resolves every entry point; a missing
// library or symbol is a qd::driver_error naming it. Does not call hipInit.
QD_FUNC const hip_api& hip();

// The gfx target in a hipDeviceProp_t, e.g. "gfx90a:sramecc+:xnack-". Its layout
// differs between HIP versions, so it is found by its content; "" if absent.
QD_FUNC std::string find_gfx_name(const unsigned char* props, std::size_t size);

}  // namespace qd::inline v0::backend::amdgpu

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/amdgpu/hip-inl.hpp"
#endif
