// The AMD GPU backend as the registry lists it: HIP C++ ("hip") through hipRTC, cached,
// preferred by init_best_available after CUDA.
#pragma once

#include "quadrants/backend/description.hpp"

namespace qd::inline v0::backend::amdgpu {

// Reads compile_only, opt_level, fast_math and the option "amdgpu_arch" ("gfx90a"; empty:
// the GPU's own).
QD_FUNC std::unique_ptr<backend::device> make_from_request(const device_request& r);

inline constexpr description backend_description{.arch = arch::amdgpu,
                                                 .source_extension = "hip",
                                                 .caches_code = true,
                                                 .preferred = true,
                                                 .make = &make_from_request};

}  // namespace qd::inline v0::backend::amdgpu

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/amdgpu/description-inl.hpp"
#endif
