// Implementation of backend/amdgpu/description.hpp.
#pragma once

#include "quadrants/backend/amdgpu/description.hpp"
#include "quadrants/backend/amdgpu/device.hpp"

namespace qd::inline v0::backend::amdgpu {

QD_FUNC std::unique_ptr<backend::device> make_from_request(const device_request& r) {
  device_options o;
  o.arch = std::string(r.option("amdgpu_arch"));
  o.compile_only = r.compile_only;
  o.opt_level = r.opt_level;
  o.fast_math = r.fast_math;
  return make_device(o);
}

}  // namespace qd::inline v0::backend::amdgpu
