// Implementation of backend/reference/description.hpp.
#pragma once

#include "quadrants/backend/reference/description.hpp"
#include "quadrants/backend/reference/device.hpp"

namespace qd::inline v0::backend::reference {

QD_FUNC std::unique_ptr<backend::device> make_from_request(const device_request&) { return make_device(); }

}  // namespace qd::inline v0::backend::reference
