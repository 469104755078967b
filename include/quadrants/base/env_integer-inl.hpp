// Implementation of base/env_integer.hpp.
#pragma once

#include "quadrants/base/env_integer.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::detail {

QD_FUNC std::uint64_t parse_env_integer(std::string_view var, std::string_view value, std::uint64_t min,
                                        std::uint64_t max) {
  std::uint64_t x = 0;
  bool ok = !value.empty();
  for (char c : value) {
    auto d = static_cast<std::uint64_t>(c - '0');
    if (c < '0' || c > '9' || d > max || x > (max - d) / 10) {
      ok = false;
      break;
    }
    x = x * 10 + d;
  }
  if (!ok || x < min)
    throw user_error(
        fmt::format("environment variable {}='{}' is not valid; accepted: an integer in {}..{}", var, value, min, max));
  return x;
}

}  // namespace qd::inline v0::detail
