// qd::arch::metal as the registry lists it: no native backend in this version, so making
// its device is a qd::driver_error that points at Vulkan through MoltenVK.
#pragma once

#include "quadrants/backend/description.hpp"

namespace qd::inline v0::backend::metal {

// Always throws qd::driver_error (the program then falls back to the CPU with one warning,
// or refuses with enable_fallback off).
QD_FUNC std::unique_ptr<backend::device> make_from_request(const device_request& r);

inline constexpr description backend_description{
    .arch = arch::metal, .source_extension = "", .caches_code = false, .preferred = false, .make = &make_from_request};

}  // namespace qd::inline v0::backend::metal

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/metal/description-inl.hpp"
#endif
