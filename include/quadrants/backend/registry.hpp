// The backends of this build: the one list a new backend joins (registry-inl.hpp), each
// entry its own description (backend/<name>/description.hpp). The runtime finds a
// backend here, makes its device and reads its description and traits.
#pragma once

#include <memory>
#include <span>

#include "quadrants/backend/description.hpp"
#include "quadrants/base/api.hpp"
#include "quadrants/base/arch.hpp"

namespace qd::inline v0::backend {

// Every backend of this build, in the order init_best_available prefers them.
QD_FUNC std::span<const description> backends();
// The backend serving `a`, or null when this build has none.
QD_FUNC const description* find_backend(arch a);
// The device for `a`; null when this build has no backend for it.
QD_FUNC std::unique_ptr<device> make_device(arch a, const device_request& r);

}  // namespace qd::inline v0::backend

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/registry-inl.hpp"
#endif
