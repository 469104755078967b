// The CPU backend as the registry lists it: host C++ ("cpp"), cached, the default arch.
#pragma once

#include "quadrants/backend/description.hpp"

namespace qd::inline v0::backend::cpu {

// Reads opt_level, fast_math, threads and compile_timeout_seconds.
QD_FUNC std::unique_ptr<backend::device> make_from_request(const device_request& r);

inline constexpr description backend_description{
    .arch = arch::cpu, .source_extension = "cpp", .caches_code = true, .preferred = false, .make = &make_from_request};

}  // namespace qd::inline v0::backend::cpu

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/cpu/description-inl.hpp"
#endif
