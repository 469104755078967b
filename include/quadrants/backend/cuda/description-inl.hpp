// Implementation of backend/cuda/description.hpp.
#pragma once

#include <charconv>

#include "quadrants/backend/cuda/description.hpp"
#include "quadrants/backend/cuda/device.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::backend::cuda {

QD_FUNC std::unique_ptr<backend::device> make_from_request(const device_request& r) {
  device_options o;
  if (std::string_view sm = r.option("cuda_arch"); !sm.empty()) {
    auto [end, ec] = std::from_chars(sm.data(), sm.data() + sm.size(), o.arch);
    if (ec != std::errc() || end != sm.data() + sm.size() || o.arch < 0)
      throw user_error(fmt::format("cuda_arch '{}': write the sm number as major * 10 + minor, e.g. 90", sm));
  }
  o.compile_only = r.compile_only;
  o.opt_level = r.opt_level;
  o.fast_math = r.fast_math;
  return make_device(o);
}

}  // namespace qd::inline v0::backend::cuda
