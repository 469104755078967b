// Implementation of backend/cpu/description.hpp.
#pragma once

#include "quadrants/backend/cpu/description.hpp"
#include "quadrants/backend/cpu/device.hpp"

namespace qd::inline v0::backend::cpu {

QD_FUNC std::unique_ptr<backend::device> make_from_request(const device_request& r) {
  device_options o;
  o.compile.opt_level = r.opt_level;
  o.compile.fast_math = r.fast_math;
  o.compile.timeout_seconds = r.compile_timeout_seconds;
  o.threads = r.threads;
  return make_device(o);
}

}  // namespace qd::inline v0::backend::cpu
