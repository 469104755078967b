// qd::half (base/half.hpp): conversions from float and double round to nearest even and
// to float exactly, checked against the compiler's own _Float16 where it has one, and
// against IEEE 754's definition (the nearest of the two neighbours, ties to even) always.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include <quadrants/base/half.hpp>

namespace {

// The binary16 value of bits h, computed from the format's definition in double.
double value_of(std::uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 31) return m ? std::numeric_limits<double>::quiet_NaN() : sign * std::numeric_limits<double>::infinity();
  if (e == 0) return sign * std::ldexp(m, -24);
  return sign * std::ldexp(1024 + m, e - 25);
}

// IEEE 754's rounding of x to binary16: the nearest finite value (ties to the even
// significand), infinity from 65520 up, by search over the ordered bit patterns.
std::uint16_t nearest(double x) {
  if (std::isnan(x)) return 0x7e00;
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::abs(x);
  if (a >= 65520.0) return sign | 0x7c00;
  std::uint16_t lo = 0, hi = 0x7bff;  // the largest finite value <= a, by bisection (values grow with bits)
  while (lo < hi) {
    const auto mid = static_cast<std::uint16_t>((lo + hi + 1) / 2);
    if (value_of(mid) <= a)
      lo = mid;
    else
      hi = static_cast<std::uint16_t>(mid - 1);
  }
  if (lo == 0x7bff) return sign | lo;  // in [65504, 65520)
  const double below = value_of(lo), above = value_of(static_cast<std::uint16_t>(lo + 1));
  if (a - below < above - a) return sign | lo;
  if (above - a < a - below) return sign | static_cast<std::uint16_t>(lo + 1);
  return sign | ((lo & 1) ? static_cast<std::uint16_t>(lo + 1) : lo);
}

}  // namespace

static_assert(qd::half(1.0f).bits == 0x3c00 && qd::half(-2.0).bits == 0xc000 && qd::half(65504.0f).bits == 0x7bff);
static_assert(qd::half(65520.0f).bits == 0x7c00 && qd::half(0x1p-24f).bits == 0x0001 && qd::half(0x1p-25f).bits == 0);
static_assert(static_cast<float>(qd::half::from_bits(0x3555)) == 0x1.554p-2f);

TEST_CASE("every binary16 value converts to float exactly and back to the same bits") {
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = qd::half::from_bits(bits);
    if (std::isnan(f)) {
      CHECK(((bits >> 10) & 0x1f) == 31);
      continue;
    }
    CHECK(static_cast<double>(f) == value_of(bits));
    CHECK(qd::half(f).bits == bits);
    CHECK(qd::half(static_cast<double>(f)).bits == bits);
  }
}

TEST_CASE("float and double round to nearest even: ties, subnormals, overflow, against the definition") {
  // Midpoints between neighbours (exact ties), a little above and below them.
  for (std::uint32_t h = 0; h < 0x7bff; h += 37) {
    const double lo = value_of(static_cast<std::uint16_t>(h)), hi = value_of(static_cast<std::uint16_t>(h + 1));
    for (double x : {(lo + hi) / 2, std::nextafter((lo + hi) / 2, 0.0), std::nextafter((lo + hi) / 2, 1e9), lo, hi}) {
      CAPTURE(x);
      CHECK(qd::half(x).bits == nearest(x));
      CHECK(qd::half(-x).bits == nearest(-x));
      const float f = static_cast<float>(x);
      CHECK(qd::half(f).bits == nearest(static_cast<double>(f)));
    }
  }
  CHECK(qd::half(65519.99).bits == 0x7bff);
  CHECK(qd::half(1e300).bits == 0x7c00);
  CHECK(qd::half(-0.0f).bits == 0x8000);
  CHECK((qd::half(std::numeric_limits<float>::quiet_NaN()).bits & 0x7c00) == 0x7c00);
  CHECK((qd::half(std::numeric_limits<float>::quiet_NaN()).bits & 0x3ff) != 0);
}

#ifdef __FLT16_MAX__
TEST_CASE("float and double round as the compiler's _Float16 does, over a million bit patterns") {
  std::uint64_t state = 0x9e3779b97f4a7c15ull;
  int mismatches = 0;
  for (int i = 0; i < 1000000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    std::uint32_t fb = static_cast<std::uint32_t>(state >> 32);
    std::uint64_t db = state ^ (state << 13);
    if (i % 4 != 0) {  // most exponents near binary16's range
      fb = (fb & 0x807fffffu) | ((100u + (fb >> 23) % 48u) << 23);
      db = (db & 0x800fffffffffffffull) | ((996ull + (db >> 52) % 48ull) << 52);
    }
    const float f = std::bit_cast<float>(fb);
    const double d = std::bit_cast<double>(db);
    if (std::isnan(f) || std::isnan(d)) continue;
    mismatches += qd::half(f).bits != std::bit_cast<std::uint16_t>(static_cast<_Float16>(f));
    mismatches += qd::half(d).bits != std::bit_cast<std::uint16_t>(static_cast<_Float16>(d));
  }
  CHECK(mismatches == 0);
}
#endif
