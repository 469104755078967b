// Implementation of backend/vulkan/description.hpp.
#pragma once

#include "quadrants/backend/vulkan/description.hpp"
#include "quadrants/backend/vulkan/device.hpp"

namespace qd::inline v0::backend::vulkan {

QD_FUNC std::unique_ptr<backend::device> make_from_request(const device_request& r) {
  device_options o;
  o.compile_only = r.compile_only;
  if (o.compile_only) {
    // What lavapipe and most desktop drivers report, so that entries compiled here match
    // them; the device present, if any, overrides it.
    o.target.f64 = o.target.int8_storage = o.target.int16_storage = o.target.i64_atomics = o.target.f32_atomic_add =
        true;
    o.target_from_device = true;
  }
  return make_device(o);
}

}  // namespace qd::inline v0::backend::vulkan
