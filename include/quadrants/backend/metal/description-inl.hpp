// Implementation of backend/metal/description.hpp.
#pragma once

#include "quadrants/backend/metal/description.hpp"
#include "quadrants/base/error.hpp"

namespace qd::inline v0::backend::metal {

QD_FUNC std::unique_ptr<backend::device> make_from_request(const device_request&) {
  throw driver_error(
      "Quadrants has no native Metal backend yet (no Metal device or compiler was available to build "
      "and test one); on a Mac, use arch = vulkan through MoltenVK (untested)",
      "metal", 0);
}

}  // namespace qd::inline v0::backend::metal
