// The third wave's kernels of the per-backend suite (math, bits, integer division,
// atomics, narrow types), with their checks against plain C++: gpu_suite_test runs
// them on every arch (the reference backend included), the compile-only tests compile
// them with NVRTC and hipRTC.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include <quadrants/quadrants.hpp>

namespace qd_test {

namespace kernels {

// One row per input, one column per function (math_checks::math_row names them).
template <class T>
auto math_more() {
  return qd::kernel("math_more", {"x", "y", "z", "out"},
                    [](qd::types::ndarray<T, 1> x, qd::types::ndarray<T, 1> y, qd::types::ndarray<T, 1> z,
                       qd::types::ndarray<T, 2> out) {
                      qd::range_for(x.shape(0), [&](qd::i32 i) {
                        qd::expr<T> a = x[i];
                        qd::expr<T> b = y[i];
                        qd::expr<T> c = z[i];  // in [-1, 1]
                        qd::expr<T> positive = qd::abs(a) + 0.5;
                        int col = 0;
                        auto put = [&](const qd::expr<T>& v) { out(i, col++) = v; };
                        auto flag = [&](const qd::boolean& v) { out(i, col++) = qd::cast<T>(v); };
                        put(qd::tan(a)), put(qd::asin(c)), put(qd::acos(c)), put(qd::atan2(a, b));
                        put(qd::rsqrt(positive)), put(qd::log2(positive)), put(qd::exp2(c * 10));
                        put(qd::round(a)), put(qd::trunc(a)), put(qd::fmod(a, b)), put(qd::fract(a)), put(qd::sign(a));
                        put(qd::clamp(a, -1, 2.5)), put(qd::mix(a, b, c)), put(qd::step(b, a));
                        put(qd::smoothstep(-1, 2, a)), put(qd::floordiv(a, b)), put(qd::floormod(a, b));
                        flag(qd::isnan(a)), flag(qd::isinf(a)), flag(qd::isfinite(a));
                      });
                    });
}

// Python's // and % of integers, and the bit functions, for every integer type T.
template <class T>
auto integer_functions() {
  return qd::kernel("integer_functions", {"x", "y", "out", "bits"},
                    [](qd::types::ndarray<T, 1> x, qd::types::ndarray<T, 1> y, qd::types::ndarray<T, 2> out,
                       qd::types::ndarray<std::int32_t, 2> bits) {
                      qd::range_for(x.shape(0), [&](qd::i32 i) {
                        qd::expr<T> a = x[i];
                        qd::expr<T> b = y[i];
                        out(i, 0) = qd::cast<T>(qd::floordiv(a, b));
                        out(i, 1) = qd::cast<T>(qd::floormod(a, b));
                        out(i, 2) = qd::cast<T>(qd::sign(a));
                        out(i, 3) = qd::cast<T>(qd::clamp(a, b, 100));
                        bits(i, 0) = qd::popcnt(a);
                        bits(i, 1) = qd::clz(a);
                        bits(i, 2) = qd::ffs(a);
                      });
                    });
}

// Bit casts both ways for every size.
inline auto bit_casts() {
  return qd::kernel(
      "bit_casts", {"f", "d", "h", "fu", "di", "hu", "uf", "id", "uh"},
      [](qd::types::ndarray<float, 1> f, qd::types::ndarray<double, 1> d, qd::types::ndarray<qd::half, 1> h,
         qd::types::ndarray<std::uint32_t, 1> fu, qd::types::ndarray<std::int64_t, 1> di,
         qd::types::ndarray<std::int16_t, 1> hu, qd::types::ndarray<float, 1> uf, qd::types::ndarray<double, 1> id,
         qd::types::ndarray<qd::half, 1> uh) {
        qd::range_for(f.shape(0), [&](qd::i32 i) {
          fu[i] = qd::bit_cast<qd::u32>(f[i]);
          di[i] = qd::bit_cast<std::int64_t>(d[i]);
          hu[i] = qd::bit_cast<qd::i16>(h[i]);
          uf[i] = qd::bit_cast<float>(qd::bit_cast<qd::i32>(f[i]) ^ (1 << 31));  // the sign flipped
          id[i] = qd::bit_cast<qd::f64>(qd::bit_cast<qd::u64>(d[i]));
          uh[i] = qd::bit_cast<qd::f16>(qd::cast<std::uint16_t>(qd::bit_cast<qd::u16>(h[i]) ^ 0x8000));
        });
      });
}

// Elementwise math on vectors, and a vector cast.
inline auto vec_math() {
  return qd::kernel("vec_math", {"a", "b", "out", "cells"},
                    [](qd::types::ndarray<qd::vec2f, 1> a, qd::types::ndarray<qd::vec2f, 1> b,
                       qd::types::ndarray<float, 2> out, qd::types::ndarray<qd::vec2i, 1> cells) {
                      qd::range_for(a.shape(0), [&](qd::i32 i) {
                        qd::vec2f u = a[i];
                        qd::vec2f v = b[i];
                        int c = 0;
                        auto put = [&](const qd::vec2f& x) { out(i, c++) = x[0], out(i, c++) = x[1]; };
                        put(qd::floor(u)), put(qd::pow(qd::abs(u), 2.0f)), put(qd::pow(qd::abs(u), v));
                        put(qd::fract(u)), put(qd::clamp(u, -1.0f, v)), put(qd::mix(u, v, 0.25f));
                        put(qd::sqrt(qd::abs(v))), put(qd::atan2(u, v)), put(qd::sign(u)), put(qd::exp2(u));
                        cells[i] = qd::cast<qd::i32>(qd::floor(u * 2.0f));  // MPM's base cell
                      });
                    });
}

// Per-component atomics on elements of an array of vectors.
inline auto vec_atomics() {
  return qd::kernel("vec_atomics", {"p", "olds"},
                    [](qd::types::ndarray<qd::vec3f, 1> p, qd::types::ndarray<qd::vec3f, 1> olds) {
                      olds[0] = qd::atomic_exchange(p[0], qd::vec3f(7.0f, 8.0f, 9.0f));
                      olds[1] = qd::atomic_cas(p[1], qd::vec3f(1.0f, 0.0f, 3.0f), qd::vec3f(-1.0f, -2.0f, -3.0f));
                      olds[2] = qd::atomic_mul(p[2], qd::vec3f(2.0f, 3.0f, 4.0f));
                      olds[3] = qd::atomic_max(p[3], qd::vec3f(0.5f, 5.0f, 0.5f));
                    });
}

// Atomics of every operation on T, in a serial construct: each old value recorded.
template <class T>
auto atomics_more() {
  return qd::kernel("atomics_more", {"x", "v", "olds"},
                    [](qd::types::ndarray<T, 1> x, qd::types::ndarray<T, 1> v, qd::types::ndarray<T, 1> olds) {
                      int k = 0;
                      auto rec = [&](const qd::expr<T>& e) { olds[k++] = e; };
                      rec(qd::atomic_mul(x[0], v[0]));
                      if constexpr (std::is_integral_v<T>) {
                        rec(qd::atomic_and(x[1], v[1]));
                        rec(qd::atomic_or(x[2], v[2]));
                        rec(qd::atomic_xor(x[3], v[3]));
                      }
                      rec(qd::atomic_exchange(x[4], v[4]));
                      rec(qd::atomic_cas(x[5], v[5], v[6]));  // x[5] holds v[5]: swaps
                      rec(qd::atomic_cas(x[6], v[7], v[8]));  // x[6] does not hold v[7]: stays
                      rec(qd::atomic_min(x[7], v[9]));
                      rec(qd::atomic_max(x[8], v[10]));
                      rec(qd::atomic_add(x[9], v[11]));
                      rec(qd::atomic_sub(x[10], v[12]));
                      qd::var<T> w = x[11];  // the same on a variable
                      rec(qd::atomic_mul(w, v[13]));
                      rec(qd::atomic_exchange(w, v[14]));
                      rec(qd::atomic_cas(w, v[14], v[15]));
                      rec(qd::atomic_min(w, v[16]));
                      if constexpr (std::is_integral_v<T>) rec(qd::atomic_xor(w, v[17]));
                      x[11] = w;
                    });
}

// Contended atomics in a parallel construct: a compare-and-swap loop counter, bit
// sets, exchanges, products of signs, float min/max with NaNs around.
inline auto atomic_contention() {
  return qd::kernel("atomic_contention",
                    {"n", "counter", "bits", "xors", "swaps", "swapped", "signs", "extremes", "dextremes", "vals"},
                    [](qd::i32 n, qd::types::ndarray<std::int32_t, 1> counter,
                       qd::types::ndarray<std::uint64_t, 1> bits, qd::types::ndarray<std::uint32_t, 1> xors,
                       qd::types::ndarray<std::int64_t, 1> swaps, qd::types::ndarray<std::int64_t, 1> swapped,
                       qd::types::ndarray<std::int32_t, 1> signs, qd::types::ndarray<float, 1> extremes,
                       qd::types::ndarray<double, 1> dextremes, qd::types::ndarray<float, 1> vals) {
                      qd::range_for(n, [&](qd::i32 i) {
                        qd::var<std::int32_t> expect = qd::volatile_load(counter[0]);
                        qd::var<std::int32_t> done = 0;
                        qd::while_([&] { return done == 0; },
                                   [&] {
                                     qd::i32 seen = qd::atomic_cas(counter[0], expect, expect + 1);
                                     qd::if_(seen == expect, [&] { done = 1; }).else_([&] { expect = seen; });
                                   });
                        qd::atomic_or(bits[i % 2], qd::cast<std::uint64_t>(1) << qd::cast<std::uint64_t>(i / 2 % 64));
                        qd::atomic_and(bits[2], ~(qd::cast<std::uint64_t>(1) << qd::cast<std::uint64_t>(i % 61)));
                        qd::atomic_xor(xors[0], qd::cast<std::uint32_t>(i) * 2654435761u);
                        swapped[i] = qd::atomic_exchange(swaps[0], qd::cast<std::int64_t>(i));
                        qd::atomic_mul(signs[0], qd::select(i % 3 == 0, -1, 1));
                        qd::f32 x = vals[i];
                        qd::atomic_min(extremes[0], x), qd::atomic_max(extremes[1], x);
                        qd::atomic_min(dextremes[0], qd::cast<double>(x)),
                            qd::atomic_max(dextremes[1], qd::cast<double>(x));
                      });
                    });
}

// Arrays, scalars, variables, casts and atomics of the narrow types and u64.
inline auto narrow_types() {
  return qd::kernel(
      "narrow_types",
      {"a8", "a16", "au16", "a64", "h", "s8", "s16", "su16", "s64", "sh", "out", "o8", "o16", "ou16", "o64", "oh"},
      [](qd::types::ndarray<std::int8_t, 1> a8, qd::types::ndarray<std::int16_t, 1> a16,
         qd::types::ndarray<std::uint16_t, 1> au16, qd::types::ndarray<std::uint64_t, 1> a64,
         qd::types::ndarray<qd::half, 1> h, qd::i8 s8, qd::i16 s16, qd::u16 su16, qd::u64 s64, qd::f16 sh,
         qd::types::ndarray<double, 2> out, qd::types::ndarray<std::int8_t, 1> o8,
         qd::types::ndarray<std::int16_t, 1> o16, qd::types::ndarray<std::uint16_t, 1> ou16,
         qd::types::ndarray<std::uint64_t, 1> o64, qd::types::ndarray<qd::half, 1> oh) {
        qd::range_for(a8.shape(0), [&](qd::i32 i) {
          qd::var<std::int8_t> v8 = a8[i];
          v8 += s8;  // wraps
          o8[i] = v8;
          qd::var<std::int16_t> v16 = a16[i];
          v16 *= s16;
          o16[i] = v16;
          qd::var<std::uint16_t> vu = au16[i];
          vu *= su16;  // the product of two u16 computes without overflowing int
          ou16[i] = vu;
          qd::var<std::uint64_t> v64 = a64[i];
          v64 = v64 * 3u + s64;
          o64[i] = v64 >> 1;
          qd::var<qd::half> vh = h[i];
          vh += sh;  // in f32, rounded once
          oh[i] = vh;
          int c = 0;
          auto put = [&](const auto& v) { out(i, c++) = qd::cast<double>(v); };
          qd::f32 f = h[i];
          put(a8[i]), put(a16[i]), put(au16[i]), put(a64[i]), put(h[i]), put(f * 3.0f);
          put(qd::cast<std::int8_t>(f * 100.0f)), put(qd::cast<std::uint16_t>(f * -7.0f));
          put(qd::cast<std::uint64_t>(f * 1e30f)), put(qd::cast<qd::half>(a16[i])), put(qd::cast<qd::half>(a64[i]));
          put(qd::cast<std::int16_t>(au16[i])), put(qd::cast<std::uint64_t>(a8[i])), put(a8[i] + a16[i] * au16[i]);
          put(qd::cast<qd::half>(qd::cast<double>(a64[i]) * 1e-15));
        });
        qd::range_for(a8.shape(0), [&](qd::i32 i) {  // contended narrow atomics (word compare-and-swap on GPUs)
          o8[i % 3] += 1;
          o16[i % 3] -= 2;
          qd::atomic_max(ou16[i % 3], au16[i]);
          qd::atomic_add(oh[i % 3], 0.5);
          qd::atomic_xor(o64[i % 3], a64[i]);
        });
      });
}

// f32 and f64 rounded to f16 and back.
inline auto f16_rounding() {
  return qd::kernel(
      "f16_rounding", {"f", "d", "from_f", "from_d", "back"},
      [](qd::types::ndarray<float, 1> f, qd::types::ndarray<double, 1> d, qd::types::ndarray<qd::half, 1> from_f,
         qd::types::ndarray<qd::half, 1> from_d, qd::types::ndarray<float, 1> back) {
        qd::range_for(f.shape(0), [&](qd::i32 i) {
          from_f[i] = qd::cast<qd::half>(f[i]);
          from_d[i] = qd::cast<qd::f16>(d[i]);
          back[i] = qd::f16(qd::cast<qd::half>(f[i]));
        });
      });
}

}  // namespace kernels

namespace math_checks {

template <class T>
bool same_value(T got, T want) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
    return std::bit_cast<std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>(got) ==
           std::bit_cast<std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>(want);
  } else {
    return got == want;
  }
}

template <class T>
bool within_ulps(T got, T want, int ulps) {
  if (same_value(got, want)) return true;
  if (!std::isfinite(got) || !std::isfinite(want)) return false;
  T scale = std::max(std::abs(want), std::numeric_limits<T>::min());
  return std::abs(got - want) <= scale * std::numeric_limits<T>::epsilon() * static_cast<T>(ulps);
}

// Python's float // and %, the way CPython's float_divmod computes them.
template <class T>
T python_floormod(T a, T b) {
  T m = std::fmod(a, b);
  if (m != 0) {
    if ((b < 0) != (m < 0)) m += b;
  } else {
    m = std::copysign(T(0), b);
  }
  return m;
}
template <class T>
T python_floordiv(T a, T b) {
  T m = std::fmod(a, b);
  T d = (a - m) / b;
  if (m != 0 && (b < 0) != (m < 0)) d -= 1;
  if (d == 0) return std::copysign(T(0), a / b);
  T f = std::floor(d);
  if (d - f > T(0.5)) f += 1;
  return f;
}

// The kernel math_more's row, in order, and which columns are exact (else within ulps).
template <class T>
std::vector<T> math_row(T a, T b, T c) {
  const T positive = std::abs(a) + T(0.5);
  auto sign = [](T x) { return x > 0 ? T(1) : x < 0 ? T(-1) : x * T(0); };
  auto t = std::clamp((a - T(-1)) / (T(2) - T(-1)), T(0), T(1));
  return {std::tan(a),
          std::asin(c),
          std::acos(c),
          std::atan2(a, b),
          T(1) / std::sqrt(positive),
          std::log2(positive),
          std::exp2(c * 10),
          std::round(a),
          std::trunc(a),
          std::fmod(a, b),
          a - std::floor(a),
          sign(a),
          a < T(-1) ? T(-1) : (T(2.5) < a ? T(2.5) : a),
          a * (1 - c) + b * c,
          a < b ? T(0) : T(1),
          t * t * (3 - 2 * t),
          python_floordiv(a, b),
          python_floormod(a, b),
          T(std::isnan(a)),
          T(std::isinf(a)),
          T(std::isfinite(a))};
}
inline bool math_column_exact(std::size_t col) { return !(col <= 6 || col == 13 || col == 15); }

template <class T>
void check_math_more(int ulps) {
  using lim = std::numeric_limits<T>;
  const std::vector<T> as = {
      T(0),     T(-0.0), T(0.5),     T(-0.5), T(1.5),          T(2.5),           T(-2.5),          T(3.75),
      T(-7.25), T(1e-3), T(123.456), T(-1e6), lim::infinity(), -lim::infinity(), lim::quiet_NaN(), T(6)};
  const std::vector<T> bs = {T(1), T(-1), T(0.75), T(-3), T(2), T(0.1), T(0), T(-0.0), T(4), T(-2.5)};
  std::vector<T> xs, ys, zs;
  for (std::size_t i = 0; i < as.size(); ++i)
    for (std::size_t j = 0; j < bs.size(); ++j) {
      xs.push_back(as[i]), ys.push_back(bs[j]);
      zs.push_back(T(-1) + T(2) * static_cast<T>((i * 7 + j * 3) % 17) / T(16));  // -1 and 1 included
    }
  const auto n = static_cast<std::int64_t>(xs.size());
  const auto columns = static_cast<std::int64_t>(math_row(T(0), T(1), T(0)).size());
  qd::ndarray<T, 1> x(n), y(n), z(n);
  qd::ndarray<T, 2> out({n, columns});
  x.from_host(xs), y.from_host(ys), z.from_host(zs);
  kernels::math_more<T>()(x, y, z, out);
  auto got = out.to_host();
  int mismatches = 0;
  for (std::size_t r = 0; r < xs.size(); ++r) {
    auto want = math_row(xs[r], ys[r], zs[r]);
    for (std::size_t col = 0; col < want.size(); ++col) {
      const T g = got[r * static_cast<std::size_t>(columns) + col];
      const bool ok = math_column_exact(col) ? same_value(g, want[col]) : within_ulps(g, want[col], ulps);
      if (!ok && ++mismatches <= 10) {
        CAPTURE(xs[r]);
        CAPTURE(ys[r]);
        CAPTURE(zs[r]);
        CAPTURE(col);
        CHECK(g == want[col]);
      }
    }
  }
  CHECK(mismatches == 0);
}

// Python's a // b of integers: the truncated quotient, one less where a remainder is left
// and the signs differ; as qd's / and %, x // 0 is 0 and MIN // -1 wraps.
template <class T>
T python_int_floordiv(T a, T b) {
  using U = std::make_unsigned_t<T>;
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return static_cast<T>(U(0) - static_cast<U>(a));
    const T q = static_cast<T>(a / b);
    return (a % b != 0 && ((a < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
  } else {
    return static_cast<T>(a / b);
  }
}

template <class T>
void check_integer_functions(const std::vector<T>& values) {
  std::vector<T> xs, ys;
  for (T a : values)
    for (T b : values) xs.push_back(a), ys.push_back(b);
  const auto n = static_cast<std::int64_t>(xs.size());
  qd::ndarray<T, 1> x(n), y(n);
  qd::ndarray<T, 2> out({n, 4});
  qd::ndarray<std::int32_t, 2> bits({n, 3});
  x.from_host(xs), y.from_host(ys);
  kernels::integer_functions<T>()(x, y, out, bits);
  auto o = out.to_host();
  auto bt = bits.to_host();
  using U = std::make_unsigned_t<T>;
  int mismatches = 0;
  for (std::size_t r = 0; r < xs.size(); ++r) {
    const T a = xs[r], b = ys[r];
    const T q = python_int_floordiv(a, b);
    // a = q b + m, with the remainder's sign the divisor's (b == 0 and b == -1: 0); modulo
    // 2^bits in 64-bit unsigned arithmetic (u16 * u16 would promote to int and overflow).
    const T m = (b == 0 || (std::is_signed_v<T> && b == T(-1)))
                    ? T(0)
                    : static_cast<T>(static_cast<U>(static_cast<std::uint64_t>(static_cast<U>(a)) -
                                                    static_cast<std::uint64_t>(static_cast<U>(q)) *
                                                        static_cast<std::uint64_t>(static_cast<U>(b))));
    const T sign = a > 0 ? T(1) : (a < 0 ? static_cast<T>(-1) : T(0));
    const T clamped = a < b ? b : (T(100) < a ? T(100) : a);
    const std::vector<T> want = {q, m, sign, clamped};
    const std::vector<std::int32_t> want_bits = {std::popcount(static_cast<U>(a)), std::countl_zero(static_cast<U>(a)),
                                                 a == 0 ? 0 : std::countr_zero(static_cast<U>(a)) + 1};
    for (std::size_t col = 0; col < 4; ++col)
      if (o[r * 4 + col] != want[col] && ++mismatches <= 10) {
        CAPTURE(+a);
        CAPTURE(+b);
        CAPTURE(col);
        CHECK(+o[r * 4 + col] == +want[col]);
      }
    for (std::size_t col = 0; col < 3; ++col)
      if (bt[r * 3 + col] != want_bits[col] && ++mismatches <= 10) {
        CAPTURE(+a);
        CAPTURE(col);
        CHECK(bt[r * 3 + col] == want_bits[col]);
      }
    if (b > 0 && !(m >= 0 && m < b) && ++mismatches <= 10) CHECK_MESSAGE(false, "a remainder outside [0, b)");
  }
  CHECK(mismatches == 0);
}

inline void check_bit_casts() {
  const std::vector<float> fs = {
      0.0f, -0.0f, 1.5f, -3.25f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min(),
      1e38f};
  std::vector<double> ds;
  std::vector<qd::half> hs;
  for (float f : fs) ds.push_back(static_cast<double>(f) * 3.0), hs.push_back(qd::half(f));
  const auto n = static_cast<std::int64_t>(fs.size());
  qd::ndarray<float, 1> f(n), uf(n);
  qd::ndarray<double, 1> d(n), id(n);
  qd::ndarray<qd::half, 1> h(n), uh(n);
  qd::ndarray<std::uint32_t, 1> fu(n);
  qd::ndarray<std::int64_t, 1> di(n);
  qd::ndarray<std::int16_t, 1> hu(n);
  f.from_host(fs), d.from_host(ds), h.from_host(hs);
  kernels::bit_casts()(f, d, h, fu, di, hu, uf, id, uh);
  auto gfu = fu.to_host();
  auto gdi = di.to_host();
  auto ghu = hu.to_host();
  auto guf = uf.to_host();
  auto gid = id.to_host();
  auto guh = uh.to_host();
  for (std::size_t i = 0; i < fs.size(); ++i) {
    CAPTURE(i);
    CHECK(gfu[i] == std::bit_cast<std::uint32_t>(fs[i]));
    CHECK(gdi[i] == std::bit_cast<std::int64_t>(ds[i]));
    CHECK(ghu[i] == static_cast<std::int16_t>(hs[i].bits));
    CHECK(std::bit_cast<std::uint32_t>(guf[i]) == (std::bit_cast<std::uint32_t>(fs[i]) ^ 0x80000000u));
    CHECK(std::bit_cast<std::uint64_t>(gid[i]) == std::bit_cast<std::uint64_t>(ds[i]));
    CHECK(guh[i].bits == (hs[i].bits ^ 0x8000u));
  }
}

inline void check_vec_math() {
  const std::vector<std::array<float, 2>> as = {{0.25f, -1.75f}, {3.5f, 2.0f}, {-0.5f, 0.0f}, {1.0f, -2.5f}};
  const std::vector<std::array<float, 2>> bs = {{2.0f, 0.5f}, {-1.0f, 3.0f}, {0.75f, -0.25f}, {1.5f, 1.0f}};
  const auto n = static_cast<std::int64_t>(as.size());
  qd::ndarray<qd::vec2f, 1> a(n), b(n);
  qd::ndarray<float, 2> out({n, 20});
  qd::ndarray<qd::vec2i, 1> cells(n);
  a.from_host(as), b.from_host(bs);
  kernels::vec_math()(a, b, out, cells);
  auto got = out.to_host();
  auto gc = cells.to_host();
  for (std::size_t i = 0; i < as.size(); ++i) {
    std::vector<float> want;
    auto each = [&](auto f) {
      for (std::size_t k = 0; k < 2; ++k) want.push_back(f(as[i][k], bs[i][k]));
    };
    each([](float u, float) { return std::floor(u); });
    each([](float u, float) { return std::pow(std::abs(u), 2.0f); });
    each([](float u, float v) { return std::pow(std::abs(u), v); });
    each([](float u, float) { return u - std::floor(u); });
    each([](float u, float v) { return u < -1.0f ? -1.0f : (v < u ? v : u); });
    each([](float u, float v) { return u * (1 - 0.25f) + v * 0.25f; });
    each([](float, float v) { return std::sqrt(std::abs(v)); });
    each([](float u, float v) { return std::atan2(u, v); });
    each([](float u, float) { return u > 0 ? 1.0f : u < 0 ? -1.0f : u * 0.0f; });
    each([](float u, float) { return std::exp2(u); });
    for (std::size_t col = 0; col < want.size(); ++col) {
      CAPTURE(i);
      CAPTURE(col);
      CHECK(within_ulps(got[i * 20 + col], want[col], 2));
    }
    for (std::size_t k = 0; k < 2; ++k) CHECK(gc[i][k] == static_cast<std::int32_t>(std::floor(as[i][k] * 2.0f)));
  }
}

// The old values and the memory atomics_more<T> leaves, computed in plain C++.
template <class T>
void check_atomics_more() {
  const bool integral = std::is_integral_v<T>;
  auto t = [](double v) { return static_cast<T>(v); };
  std::vector<T> x = {t(3), t(0x6c), t(0x30), t(0x5a), t(9), t(21), t(8), t(40), t(2), t(100), t(50), t(5)};
  std::vector<T> v = {t(7),  t(0x3a), t(0x0f), t(0x33), t(77), t(21), t(99), t(7), t(55),
                      t(30), t(60),   t(15),   t(20),   t(3),  t(11), t(12), t(4), t(6)};
  if constexpr (std::is_signed_v<T>) v[0] = t(-7), x[11] = t(-5);
  if constexpr (std::is_same_v<T, std::uint32_t> || std::is_same_v<T, std::uint64_t>)
    v[0] = std::numeric_limits<T>::max();  // the product wraps
  qd::ndarray<T, 1> dx(static_cast<std::int64_t>(x.size())), dv(static_cast<std::int64_t>(v.size())), olds(18);
  dx.from_host(x), dv.from_host(v), olds.fill(t(0));
  kernels::atomics_more<T>()(dx, dv, olds);
  std::vector<T> want_olds, mem = x;
  auto wrap_mul = [](T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
    else
      return a * b;
  };
  want_olds.push_back(mem[0]), mem[0] = wrap_mul(mem[0], v[0]);
  if constexpr (std::is_integral_v<T>) {
    want_olds.push_back(mem[1]), mem[1] = static_cast<T>(mem[1] & v[1]);
    want_olds.push_back(mem[2]), mem[2] = static_cast<T>(mem[2] | v[2]);
    want_olds.push_back(mem[3]), mem[3] = static_cast<T>(mem[3] ^ v[3]);
  }
  want_olds.push_back(mem[4]), mem[4] = v[4];
  want_olds.push_back(mem[5]), mem[5] = mem[5] == v[5] ? v[6] : mem[5];
  want_olds.push_back(mem[6]), mem[6] = mem[6] == v[7] ? v[8] : mem[6];
  want_olds.push_back(mem[7]), mem[7] = std::min(mem[7], v[9]);
  want_olds.push_back(mem[8]), mem[8] = std::max(mem[8], v[10]);
  want_olds.push_back(mem[9]), mem[9] = static_cast<T>(mem[9] + v[11]);
  want_olds.push_back(mem[10]), mem[10] = static_cast<T>(mem[10] - v[12]);
  T w = mem[11];
  want_olds.push_back(w), w = wrap_mul(w, v[13]);
  want_olds.push_back(w), w = v[14];
  want_olds.push_back(w), w = w == v[14] ? v[15] : w;
  want_olds.push_back(w), w = std::min(w, v[16]);
  if constexpr (std::is_integral_v<T>) want_olds.push_back(w), w = static_cast<T>(w ^ v[17]);
  mem[11] = w;
  want_olds.resize(18, t(0));
  const std::string type(qd::name(qd::dtype_of<T>));
  CAPTURE(type);
  CAPTURE(integral);
  CHECK(olds.to_host() == want_olds);
  CHECK(dx.to_host() == mem);
}

inline void check_vec_atomics() {
  using v3 = std::array<float, 3>;
  const std::vector<v3> start = {{1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3}};
  qd::ndarray<qd::vec3f, 1> p(4), olds(4);
  p.from_host(start);
  kernels::vec_atomics()(p, olds);
  CHECK(olds.to_host() == start);
  // cas per component: components 0 and 2 held the expected values, component 1 did not.
  CHECK(p.to_host() == std::vector<v3>{{7, 8, 9}, {-1, 2, -3}, {2, 6, 12}, {1, 5, 3}});
}

template <class T>
void check_float_cas_compares_bits_and_minmax_nan() {
  // cas compares bits: -0.0 does not match 0.0, a NaN matches its own bits; min and max are
  // minNum/maxNum: a NaN operand leaves a number, a stored NaN is replaced.
  using lim = std::numeric_limits<T>;
  auto k = qd::kernel("float_cas", {"x", "olds"}, [](qd::types::ndarray<T, 1> x, qd::types::ndarray<T, 1> olds) {
    olds[0] = qd::atomic_cas(x[0], T(0.0), T(5.0));    // x[0] is -0.0: no swap
    olds[1] = qd::atomic_cas(x[1], x[1], T(6.0));      // a NaN: swaps
    olds[2] = qd::atomic_min(x[2], lim::quiet_NaN());  // 3.0 stays
    olds[3] = qd::atomic_max(x[3], T(4.0));            // a stored NaN becomes 4.0
    olds[4] = qd::atomic_min(x[4], T(-1.0));           // a stored NaN becomes -1.0
    olds[5] = qd::atomic_max(x[5], lim::quiet_NaN());  // 3.0 stays
  });
  qd::ndarray<T, 1> x(6), olds(6);
  x.from_host(std::vector<T>{T(-0.0), lim::quiet_NaN(), T(3), lim::quiet_NaN(), lim::quiet_NaN(), T(3)});
  k(x, olds);
  auto got = x.to_host();
  CHECK(std::signbit(got[0]));
  CHECK(got[0] == T(0));
  CHECK(got[1] == T(6));
  CHECK(got[2] == T(3));
  CHECK(got[3] == T(4));
  CHECK(got[4] == T(-1));
  CHECK(got[5] == T(3));
  auto o = olds.to_host();
  CHECK(std::signbit(o[0]));
  CHECK(std::isnan(o[1]));
  CHECK(std::isnan(o[3]));
}

inline void check_atomic_contention() {
  const std::int32_t n = 20000;
  std::vector<float> vals(static_cast<std::size_t>(n));
  for (std::int32_t i = 0; i < n; ++i)
    vals[static_cast<std::size_t>(i)] =
        i % 7 == 3 ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>((i * 7919) % 10007) - 5000.0f;
  qd::ndarray<std::int32_t, 1> counter(1), signs(1);
  qd::ndarray<std::uint64_t, 1> bits(3);
  qd::ndarray<std::uint32_t, 1> xors(1);
  qd::ndarray<std::int64_t, 1> swaps(1), swapped(n);
  qd::ndarray<float, 1> extremes(2), dvals(n);
  qd::ndarray<double, 1> dextremes(2);
  counter.fill(0), signs.fill(1), xors.fill(0), swaps.fill(-1);
  bits.from_host(std::vector<std::uint64_t>{0, 0, ~std::uint64_t{0}});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  extremes.from_host(std::vector<float>{nan, nan});  // stored NaNs: replaced by the first number
  dextremes.from_host(std::vector<double>{std::numeric_limits<double>::quiet_NaN(), 1e300});
  dvals.from_host(vals);
  kernels::atomic_contention()(n, counter, bits, xors, swaps, swapped, signs, extremes, dextremes, dvals);
  CHECK(counter.to_host()[0] == n);  // no increment of the compare-and-swap loop lost
  auto b = bits.to_host();
  CHECK(b[0] == ~std::uint64_t{0});
  CHECK(b[1] == ~std::uint64_t{0});
  CHECK(b[2] == (std::uint64_t{7} << 61));  // bits 0..60 cleared
  std::uint32_t x = 0;
  for (std::int32_t i = 0; i < n; ++i) x ^= static_cast<std::uint32_t>(i) * 2654435761u;
  CHECK(xors.to_host()[0] == x);
  // Every exchange hands over one value: the old values and the final one are the initial
  // one and each i, once.
  auto olds = swapped.to_host();
  olds.push_back(swaps.to_host()[0]);
  std::sort(olds.begin(), olds.end());
  std::vector<std::int64_t> want(static_cast<std::size_t>(n) + 1);
  std::iota(want.begin(), want.end(), std::int64_t{-1});
  CHECK(olds == want);
  std::int32_t minus = 0;
  for (std::int32_t i = 0; i < n; i += 3) ++minus;
  CHECK(signs.to_host()[0] == (minus % 2 ? -1 : 1));
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (float v : vals)
    if (!std::isnan(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  CHECK(extremes.to_host() == std::vector<float>{lo, hi});
  CHECK(dextremes.to_host() == std::vector<double>{lo, 1e300});
}

inline void check_narrow_types() {
  const std::int64_t n = 40;
  std::vector<std::int8_t> a8;
  std::vector<std::int16_t> a16;
  std::vector<std::uint16_t> au16;
  std::vector<std::uint64_t> a64;
  std::vector<qd::half> h;
  for (std::int64_t i = 0; i < n; ++i) {
    a8.push_back(static_cast<std::int8_t>(i * 13 - 128));
    a16.push_back(static_cast<std::int16_t>(i * 1733 - 30000));
    au16.push_back(static_cast<std::uint16_t>(i * 3001 + 7));
    a64.push_back(0xfedcba9876543210ull * static_cast<std::uint64_t>(i + 1));
    h.push_back(qd::half(static_cast<float>(i) * 0.37f - 5.0f));
  }
  const std::int8_t s8 = 100;
  const std::int16_t s16 = -3;
  const std::uint16_t su16 = 40000;
  const std::uint64_t s64 = 0x8000000000000001ull;
  const qd::half sh(1.0f / 3.0f);
  qd::ndarray<std::int8_t, 1> d8(n), o8(n);
  qd::ndarray<std::int16_t, 1> d16(n), o16(n);
  qd::ndarray<std::uint16_t, 1> du16(n), ou16(n);
  qd::ndarray<std::uint64_t, 1> d64(n), o64(n);
  qd::ndarray<qd::half, 1> dh(n), oh(n);
  qd::ndarray<double, 2> out({n, 15});
  d8.from_host(a8), d16.from_host(a16), du16.from_host(au16), d64.from_host(a64), dh.from_host(h);
  kernels::narrow_types()(d8, d16, du16, d64, dh, s8, s16, su16, s64, sh, out, o8, o16, ou16, o64, oh);
  std::vector<std::int8_t> w8(static_cast<std::size_t>(n));
  std::vector<std::int16_t> w16(static_cast<std::size_t>(n));
  std::vector<std::uint16_t> wu16(static_cast<std::size_t>(n));
  std::vector<std::uint64_t> w64(static_cast<std::size_t>(n));
  std::vector<qd::half> wh(static_cast<std::size_t>(n));
  auto sat = [](double v, double lo, double hi) { return v != v ? 0.0 : std::trunc(std::clamp(v, lo, hi)); };
  auto got = out.to_host();
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
    w8[i] = static_cast<std::int8_t>(a8[i] + s8);
    w16[i] = static_cast<std::int16_t>(a16[i] * s16);
    wu16[i] = static_cast<std::uint16_t>(static_cast<std::uint32_t>(au16[i]) * su16);
    w64[i] = (a64[i] * 3u + s64) >> 1;
    wh[i] = qd::half(static_cast<float>(h[i]) + static_cast<float>(sh));
    const float f = h[i];
    const std::vector<double> want = {
        double(a8[i]),
        double(a16[i]),
        double(au16[i]),
        double(a64[i]),
        double(f),
        double(f * 3.0f),
        sat(double(f * 100.0f), -128, 127),
        sat(double(f * -7.0f), 0, 65535),
        f * 1e30f >= 0x1p64 ? 18446744073709551615.0 : double(static_cast<std::uint64_t>(std::max(0.0f, f * 1e30f))),
        double(float(qd::half(static_cast<float>(a16[i])))),
        double(float(qd::half(static_cast<float>(a64[i])))),
        double(static_cast<std::int16_t>(au16[i])),
        double(static_cast<std::uint64_t>(static_cast<std::int64_t>(a8[i]))),
        double(a8[i] + a16[i] * au16[i]),
        double(float(qd::half(static_cast<double>(a64[i]) * 1e-15)))};
    for (std::size_t c = 0; c < want.size(); ++c) {
      CAPTURE(i);
      CAPTURE(c);
      CHECK(got[i * 15 + c] == want[c]);
    }
  }
  // The second loop's contended updates of elements 0..2.
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
    w8[i % 3] = static_cast<std::int8_t>(w8[i % 3] + 1);
    w16[i % 3] = static_cast<std::int16_t>(w16[i % 3] - 2);
    wu16[i % 3] = std::max(wu16[i % 3], au16[i]);
    wh[i % 3] = qd::half(static_cast<float>(wh[i % 3]) + 0.5f);  // exact: the sums stay small
    w64[i % 3] ^= a64[i];
  }
  CHECK(o8.to_host() == w8);
  CHECK(o16.to_host() == w16);
  CHECK(ou16.to_host() == wu16);
  CHECK(o64.to_host() == w64);
  auto goh = oh.to_host();
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
    CAPTURE(i);
    CHECK(goh[i].bits == wh[i].bits);
  }
}

// Rounding to f16 checked against the compiler's own _Float16 conversions where it
// has them (else against IEEE's definition through qd::half, tested in base/half_test).
inline void check_f16_rounding() {
  std::vector<float> fs;
  std::vector<double> ds;
  std::uint32_t state = 12345;
  for (int i = 0; i < 6000; ++i) {  // bit patterns over the whole range, most in f16's
    state = state * 1664525u + 1013904223u;
    const std::uint32_t bits = i % 2 ? state : (state & 0x87ffffffu) | 0x30000000u;
    fs.push_back(std::bit_cast<float>(bits));
    ds.push_back(static_cast<double>(fs.back()) * (1.0 + 1e-9 * static_cast<double>(i % 5)));
  }
  for (float f :
       {1.0f + 0x1p-11f, 1.0f + 0x1p-11f + 0x1p-23f, 1.0f + 3 * 0x1p-11f, 65504.0f, 65519.99f, 65520.0f, 0x1p-24f,
        0x1p-25f, 0x1.8p-25f, 0x1p-26f, 0x1.ff8p-15f, -0.0f, std::numeric_limits<float>::infinity()})
    fs.push_back(f), ds.push_back(static_cast<double>(f)), fs.push_back(-f), ds.push_back(-static_cast<double>(f));
  ds.back() = 1.0 + 0x1p-11 + 0x1p-40;  // a tie in f32 but not in f64: rounds up only from f64
  const auto n = static_cast<std::int64_t>(fs.size());
  qd::ndarray<float, 1> f(n), back(n);
  qd::ndarray<double, 1> d(n);
  qd::ndarray<qd::half, 1> from_f(n), from_d(n);
  f.from_host(fs), d.from_host(ds);
  kernels::f16_rounding()(f, d, from_f, from_d, back);
  auto gf = from_f.to_host();
  auto gd = from_d.to_host();
  auto gb = back.to_host();
  int mismatches = 0;
  for (std::size_t i = 0; i < fs.size(); ++i) {
#ifdef __FLT16_MAX__
    const std::uint16_t want_f = std::bit_cast<std::uint16_t>(static_cast<_Float16>(fs[i]));
    const std::uint16_t want_d = std::bit_cast<std::uint16_t>(static_cast<_Float16>(ds[i]));
#else
    const std::uint16_t want_f = qd::half(fs[i]).bits, want_d = qd::half(ds[i]).bits;
#endif
    const bool nan = std::isnan(fs[i]);
    const bool ok =
        nan ? std::isnan(static_cast<float>(gf[i])) && std::isnan(gb[i])
            : gf[i].bits == want_f && gd[i].bits == want_d &&
                  std::bit_cast<std::uint32_t>(gb[i]) == std::bit_cast<std::uint32_t>(static_cast<float>(gf[i]));
    if (!ok && ++mismatches <= 10) {
      CAPTURE(fs[i]);
      CAPTURE(ds[i]);
      CAPTURE(gf[i].bits);
      CAPTURE(want_f);
      CAPTURE(gd[i].bits);
      CAPTURE(want_d);
      CHECK(ok);
    }
  }
  CHECK(mismatches == 0);
}

}  // namespace math_checks
}  // namespace qd_test
