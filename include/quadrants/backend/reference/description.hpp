// The reference backend as the registry lists it: an interpreter of lowered IR, so no
// source to show and nothing worth caching.
#pragma once

#include "quadrants/backend/description.hpp"

namespace qd::inline v0::backend::reference {

// Reads nothing: the interpreter has no options.
QD_FUNC std::unique_ptr<backend::device> make_from_request(const device_request& r);

inline constexpr description backend_description{.arch = arch::reference,
                                                 .source_extension = "",
                                                 .caches_code = false,
                                                 .preferred = false,
                                                 .make = &make_from_request};

}  // namespace qd::inline v0::backend::reference

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/reference/description-inl.hpp"
#endif
