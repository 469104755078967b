// The CUDA backend as the registry lists it: CUDA C++ ("cu") through NVRTC, cached,
// preferred by init_best_available.
#pragma once

#include "quadrants/backend/description.hpp"

namespace qd::inline v0::backend::cuda {

// Reads compile_only, opt_level, fast_math and the option "cuda_arch" (sm as major * 10 +
// minor, e.g. "90"; empty: the GPU's own).
QD_FUNC std::unique_ptr<backend::device> make_from_request(const device_request& r);

inline constexpr description backend_description{
    .arch = arch::cuda, .source_extension = "cu", .caches_code = true, .preferred = true, .make = &make_from_request};

}  // namespace qd::inline v0::backend::cuda

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/cuda/description-inl.hpp"
#endif
