// Integers read from QD_* environment variables, strictly: plain decimal digits within
// a range, so that no value is ever read as a different number than the one written.
#pragma once

#include <cstdint>
#include <string_view>

#include "quadrants/base/api.hpp"

namespace qd::inline v0::detail {

// `value` of the variable `var` as an integer in [min, max]. No sign, space, fraction or
// exponent ("-0", "2e0", "0.5", "nan" are refused); a qd::user_error naming the variable
// and the range otherwise.
QD_FUNC std::uint64_t parse_env_integer(std::string_view var, std::string_view value, std::uint64_t min,
                                        std::uint64_t max);

}  // namespace qd::inline v0::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/base/env_integer-inl.hpp"
#endif
