// The kernels' integer and floating-point semantics computed on the host, the
// reference the statement tests compare every backend against: integers wrap (two's
// complement), x / 0 and x % 0 give 0, MIN / -1 wraps, shift counts are masked to
// the type's width; floats are IEEE, compared bit for bit (NaN equal to NaN).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace qd_test {

template <class R>
R wrap_add(R a, R b) {
  using U = std::make_unsigned_t<R>;
  return static_cast<R>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <class R>
R wrap_sub(R a, R b) {
  using U = std::make_unsigned_t<R>;
  return static_cast<R>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}
template <class R>
R wrap_mul(R a, R b) {
  using U = std::make_unsigned_t<R>;
  return static_cast<R>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}
template <class R>
R wrap_neg(R a) {
  return wrap_sub<R>(R(0), a);
}
template <class R>
R host_div(R a, R b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<R>)
    if (b == -1) return wrap_neg(a);
  return static_cast<R>(a / b);
}
template <class R>
R host_mod(R a, R b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<R>)
    if (b == -1) return 0;
  return static_cast<R>(a % b);
}
template <class R>
R host_shl(R a, R b) {
  using U = std::make_unsigned_t<R>;
  constexpr R mask = static_cast<R>(sizeof(R) * 8 - 1);
  return static_cast<R>(static_cast<U>(static_cast<U>(a) << (b & mask)));
}
template <class R>
R host_shr(R a, R b) {
  constexpr R mask = static_cast<R>(sizeof(R) * 8 - 1);
  return static_cast<R>(a >> (b & mask));  // arithmetic for signed types (C++20)
}

// The interesting values of each integer element type: edges, signs, shift counts.
template <class T>
std::vector<T> interesting_values() {
  using lim = std::numeric_limits<T>;
  if constexpr (std::is_same_v<T, std::uint8_t>)
    return {0, 1, 2, 7, 8, 13, 31, 100, 200, 255};
  else if constexpr (std::is_unsigned_v<T>)
    return {0, 1, 2, 7, 13, 31, 32, 33, 100, 123456789, lim::max() / 2 + 1, lim::max()};
  else
    return {0, 1, -1, 2, -2, 7, -7, 13, 31, 33, -33, 63, 65, 100, 123456789, lim::max(), lim::min()};
}

// The columns the integer-operator kernels write (tests/backend/suite_kernels.hpp
// integer_operators), computed in the promoted type R, in the kernel's order.
template <class R>
std::vector<R> integer_row(R a, R b) {
  auto r = [](bool v) { return static_cast<R>(v); };
  R abs_a = a;
  if constexpr (std::is_signed_v<R>) abs_a = a < 0 ? wrap_neg(a) : a;
  return {wrap_add(a, b), wrap_sub(a, b), wrap_mul(a, b), host_div(a, b), host_mod(a, b), static_cast<R>(a & b),
          static_cast<R>(a | b), static_cast<R>(a ^ b), host_shl(a, b), host_shr(a, b), std::min(a, b), std::max(a, b),
          wrap_neg(a), static_cast<R>(~a), abs_a, a, r(a == b), r(a != b), r(a < b), r(a <= b), r(a > b), r(a >= b),
          r(a > 0 && b > 0), r(a > 0 || b > 0), r(!(a > b)), wrap_sub(wrap_mul(a, R(3)), R(7)), host_div(a, R(2)),
          host_mod(a, R(3)), wrap_sub(R(7), a), host_div(R(100), a), host_shl(a, R(3)), host_shr(a, R(1)),
          static_cast<R>(a & 0x5a),
          // Both sides of && and || are evaluated: no short-circuit, so b / a runs with a == 0 too.
          r(a != 0 && host_div(b, a) > 1)};
}

// Equal, or both NaN.
template <class T>
bool same_float(T a, T b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

// The columns the floating-point-operator kernels write, in the kernel's order.
template <class T>
std::vector<T> float_row(T a, T b) {
  auto r = [](bool v) { return static_cast<T>(v); };
  return {
      a + b,    a - b,     a * b,     a / b,    -a,        a,        a * T(2.0), a + T(1),          T(1.5) - a,
      T(3) / a, r(a == b), r(a != b), r(a < b), r(a <= b), r(a > b), r(a >= b),  r(a < 0 || b < 0), r(a > 0 && b > 0)};
}

}  // namespace qd_test
