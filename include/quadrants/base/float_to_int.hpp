// Float-to-integer conversion as every backend defines it: truncation toward zero,
// saturating at the target's range, NaN giving 0 (C++ leaves the last two undefined).
#pragma once

#include <limits>
#include <type_traits>

namespace qd::inline v0 {

// The generated code's qd_to_<T> helpers (prelude_helpers) compute the same thing with
// the same comparisons: against powers of two, which are exact in float and double.
template <class To, class From>
constexpr To float_to_int(From x) {
  static_assert(std::is_floating_point_v<From> && std::is_integral_v<To> && !std::is_same_v<To, bool>);
  From bound = 1;  // 2^digits: the first value past the target's maximum
  for (int i = 0; i < std::numeric_limits<To>::digits; ++i) bound *= 2;
  if (x >= bound) return std::numeric_limits<To>::max();
  if constexpr (std::is_signed_v<To>) {
    if (x >= -bound) return static_cast<To>(x);
    return x != x ? To(0) : std::numeric_limits<To>::min();
  } else {
    return x > 0 ? static_cast<To>(x) : To(0);
  }
}

}  // namespace qd::inline v0
