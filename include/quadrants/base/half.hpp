// qd::half: an IEEE binary16 value (qd::f16's host element type), stored as its bits;
// conversions from float and double round to nearest even, to float are exact.
#pragma once

#include <bit>
#include <concepts>
#include <cstdint>
#include <limits>

namespace qd::inline v0 {

namespace detail {

// Rounds the magnitude bits `abs` of a binary32/binary64 value to binary16, to nearest
// even, given where its formats put things. The generated code's qd_f32_to_f16 and
// qd_f64_to_f16 (codegen/prelude.hpp) compute the same with the same steps.
template <class U>
constexpr std::uint16_t round_to_f16(U abs, int mantissa_bits, int exponent_bias) {
  const U exponent_all = static_cast<U>((U(1) << (8 * sizeof(U) - 1 - static_cast<unsigned>(mantissa_bits))) - 1)
                         << mantissa_bits;
  if (abs >= exponent_all) {  // infinity, or NaN: quiet, keeping the payload's top bits
    if (abs == exponent_all) return 0x7c00;
    return static_cast<std::uint16_t>(0x7e00 | ((abs >> (mantissa_bits - 10)) & 0x3ff));
  }
  const int exponent = static_cast<int>(abs >> mantissa_bits);  // biased
  const U mantissa = abs & ((U(1) << mantissa_bits) - 1);
  const int e16 = exponent - exponent_bias + 15;
  if (e16 >= 31) return 0x7c00;  // at least 2^16: infinity
  U units;                       // the result's significand, before rounding
  int shift;                     // the bits rounded away
  if (e16 >= 1) {
    units = (static_cast<U>(e16) << 10) | (mantissa >> (mantissa_bits - 10));
    shift = mantissa_bits - 10;
  } else {  // a binary16 subnormal (or zero): units of 2^-24
    shift = mantissa_bits - 10 + 1 - e16;
    if (exponent == 0 || shift > mantissa_bits + 1) return 0;  // below half of 2^-24
    units = (mantissa | (U(1) << mantissa_bits)) >> shift;
  }
  const U rest = (e16 >= 1 ? mantissa : (mantissa | (U(1) << mantissa_bits))) & ((U(1) << shift) - 1);
  const U halfway = U(1) << (shift - 1);
  if (rest > halfway || (rest == halfway && (units & 1) != 0)) ++units;  // may carry into the exponent: right
  return static_cast<std::uint16_t>(units);
}

constexpr std::uint16_t f32_to_f16_bits(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  return static_cast<std::uint16_t>(((x >> 16) & 0x8000u) | round_to_f16<std::uint32_t>(x & 0x7fffffffu, 23, 127));
}

constexpr std::uint16_t f64_to_f16_bits(double d) {
  const std::uint64_t x = std::bit_cast<std::uint64_t>(d);
  return static_cast<std::uint16_t>(((x >> 48) & 0x8000u) |
                                    round_to_f16<std::uint64_t>(x & 0x7fffffffffffffffull, 52, 1023));
}

constexpr float f16_bits_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

}  // namespace detail

// A binary16 number on the host: converts from float and double (rounding to nearest
// even) and to float (exactly). Arithmetic goes through float, as in kernels.
struct half {
  std::uint16_t bits;  // no initializer: a trivial type (half{} and std::vector<half>(n) are zeros)

  half() = default;
  constexpr half(float f) : bits(detail::f32_to_f16_bits(f)) {}
  constexpr half(double d) : bits(detail::f64_to_f16_bits(d)) {}
  template <std::integral I>  // exact up to 2048 in magnitude, rounded beyond, infinite from 65520
  constexpr half(I i) : bits(detail::f32_to_f16_bits(static_cast<float>(i))) {}
  constexpr operator float() const { return detail::f16_bits_to_f32(bits); }

  static constexpr half from_bits(std::uint16_t b) {
    half h;
    h.bits = b;
    return h;
  }
};

}  // namespace qd::inline v0

template <>
class std::numeric_limits<qd::half> {
 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool is_iec559 = true;
  static constexpr int digits = 11;
  static constexpr int max_exponent = 16;
  static constexpr int min_exponent = -13;
  static constexpr qd::half min() noexcept { return qd::half::from_bits(0x0400); }  // 2^-14
  static constexpr qd::half max() noexcept { return qd::half::from_bits(0x7bff); }  // 65504
  static constexpr qd::half lowest() noexcept { return qd::half::from_bits(0xfbff); }
  static constexpr qd::half epsilon() noexcept { return qd::half::from_bits(0x1400); }  // 2^-10
  static constexpr qd::half infinity() noexcept { return qd::half::from_bits(0x7c00); }
  static constexpr qd::half quiet_NaN() noexcept { return qd::half::from_bits(0x7e00); }
  static constexpr qd::half denorm_min() noexcept { return qd::half::from_bits(0x0001); }  // 2^-24
};
