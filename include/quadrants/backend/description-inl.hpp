// Implementation of backend/description.hpp.
#pragma once

#include "quadrants/backend/description.hpp"

namespace qd::inline v0::backend {

QD_FUNC std::string_view device_request::option(std::string_view name) const {
  for (const auto& [n, value] : options)
    if (n == name) return value;
  return {};
}

}  // namespace qd::inline v0::backend
