// The per-backend suite: test bodies written once and run on every arch -- the CPU
// here, CUDA and AMD GPUs where present (each GPU instance reports itself skipped,
// with the reason, where that GPU is absent). Statements, atomics and reductions,
// random numbers, print, top-level values, split against whole, the seed's fallbacks.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <numeric>
#include <optional>
#include <utility>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <quadrants/backend/cuda/driver.hpp>

#include "backend/compile_only_support.hpp"
#include "backend/suite_kernels.hpp"
#include "backend/suite_kernels_lang.hpp"
#include "backend/suite_kernels_linalg.hpp"
#include "backend/suite_kernels_math.hpp"
#include "backend/suite_kernels_vec.hpp"
#include "runtime/runtime_test_support.hpp"
#include "support/host_semantics.hpp"
#include "support/tet_mesh.hpp"

namespace {

namespace kernels = qd_test::kernels;
using namespace qd_test;  // host_semantics.hpp
template <class T>
using lim = std::numeric_limits<T>;

struct on_cpu {
  static constexpr qd::arch arch = qd::arch::cpu;
  static constexpr const char* name = "cpu";
};
struct on_cuda {
  static constexpr qd::arch arch = qd::arch::cuda;
  static constexpr const char* name = "cuda";
};
struct on_amdgpu {
  static constexpr qd::arch arch = qd::arch::amdgpu;
  static constexpr const char* name = "amdgpu";
};
struct on_reference {  // the IR interpreter, for the tests that check what it reports too
  static constexpr qd::arch arch = qd::arch::reference;
  static constexpr const char* name = "reference";
};

template <class A>
constexpr bool on_gpu() {
  return A::arch == qd::arch::cuda || A::arch == qd::arch::amdgpu;
}

// Starts a program on the arch, with no fallback; on a machine without that GPU the
// test reports itself skipped, saying why, and returns false.
template <class A>
bool start(qd::config c = {}) {
  c.arch = A::arch;
  c.enable_fallback = false;
  try {
    qd::init(c);
    return true;
  } catch (const qd::error& e) {
    if (!on_gpu<A>()) throw;
    const std::string why = std::string("skipped on ") + A::name + ": " + e.what();
    MESSAGE(why);
    return false;
  }
}

template <class T>
bool close_ulps(T got, T want, int ulps) {
  if (same_float(got, want)) return true;
  T scale = std::max(std::abs(want), lim<T>::min());
  return std::abs(got - want) <= scale * lim<T>::epsilon() * static_cast<T>(ulps);
}

// u8 operands promote to i32 like C++'s int; the other integer types keep their own.
template <class T>
using promoted = typename decltype(std::declval<qd::expr<T>>() + std::declval<qd::expr<T>>())::value_type;
static_assert(std::is_same_v<promoted<std::uint8_t>, std::int32_t> && std::is_same_v<promoted<std::int32_t>, std::int32_t> &&
              std::is_same_v<promoted<std::int64_t>, std::int64_t> && std::is_same_v<promoted<std::uint32_t>, std::uint32_t>);
// Literals adopt the traced operand's type: x_f32 * 2.0 stays f32.
static_assert(std::is_same_v<decltype(std::declval<qd::f32>() * 2.0), qd::f32>);
static_assert(std::is_same_v<decltype(std::declval<qd::f64>() + 1), qd::f64>);
static_assert(std::is_same_v<decltype(1.5f - std::declval<qd::f64>()), qd::f64>);

// Runs an operator-table kernel (one row per operand pair, one column per operator)
// over every pair of `values` and compares each row with `row(a, b)` computed on the
// host, in the result type R; `same` is the comparison. The first ten mismatches are
// reported in detail.
template <class T, class R, class Kernel, class Row, class Same>
void check_operator_table(Kernel&& k, const std::vector<T>& values, Row&& row, Same&& same) {
  std::vector<T> xs, ys;
  for (T a : values)
    for (T b : values) xs.push_back(a), ys.push_back(b);
  const auto n = static_cast<std::int64_t>(xs.size());
  const auto columns = static_cast<std::int64_t>(row(R(0), R(1)).size());
  qd::ndarray<T, 1> x(n), y(n);
  qd::ndarray<R, 2> out({n, columns});
  x.from_host(xs);
  y.from_host(ys);
  k(x, y, out);
  auto got = out.to_host();
  int mismatches = 0;
  for (std::size_t r = 0; r < xs.size(); ++r) {
    auto want = row(static_cast<R>(xs[r]), static_cast<R>(ys[r]));
    for (std::size_t col = 0; col < want.size(); ++col) {
      R g = got[r * static_cast<std::size_t>(columns) + col];
      if (!same(g, want[col]) && ++mismatches <= 10) {
        CAPTURE(+xs[r]);
        CAPTURE(+ys[r]);
        CAPTURE(col);
        CHECK(+g == +want[col]);
      }
    }
  }
  CHECK(mismatches == 0);
}

template <class T>
void check_integer_operators() {
  using R = promoted<T>;
  check_operator_table<T, R>(kernels::integer_operators<T>(), interesting_values<T>(), integer_row<R>,
                             [](R a, R b) { return a == b; });
}

template <class T>
void check_float_operators() {
  const std::vector<T> values = {T(0), T(-0.0), T(1), T(-1), T(0.1), T(-2.5), T(3.75), T(1e30), T(-7e-20),
                                 lim<T>::infinity(), lim<T>::max(), lim<T>::denorm_min()};
  check_operator_table<T, T>(kernels::float_operators<T>(), values, float_row<T>, same_float<T>);
}

// Correctly rounded functions agree exactly; the others within `ulps` of <cmath>
// (the GPU libraries document up to 4 ulp for powf, 2 for the rest).
template <class T>
void check_math_functions(int ulps) {
  auto k = kernels::math_functions<T>();
  std::vector<T> xs = {T(0), T(1), T(-1), T(0.5), T(-2.5), T(2.5), T(3.999), T(-3.001), T(10), T(-20.75), T(1e-3),
                       T(7.25), T(88)};
  std::vector<T> ys, zs;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    ys.push_back(T(0.75) * static_cast<T>(static_cast<int>(i % 5) - 2));
    zs.push_back(T(0.125) * static_cast<T>(i));
  }
  const T eps = std::is_same_v<T, float> ? T(1.0 / 1048576) : T(1.0 / 33554432.0 / 33554432.0);
  xs.push_back(T(1) + eps), ys.push_back(T(1) + eps), zs.push_back(T(-1));  // fused and unfused differ
  REQUIRE(std::fma(xs.back(), ys.back(), zs.back()) != xs.back() * ys.back() + zs.back());
  const auto n = static_cast<std::int64_t>(xs.size());
  const std::int64_t columns = 13;
  qd::ndarray<T, 1> x(n), y(n), z(n);
  qd::ndarray<T, 2> out({n, columns});
  x.from_host(xs), y.from_host(ys), z.from_host(zs);
  k(x, y, z, out);
  auto got = out.to_host();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const T a = xs[i], b = ys[i], c = zs[i], positive = std::abs(a) + T(0.5);
    const std::vector<T> want = {std::sqrt(positive), std::abs(a), std::floor(a), std::ceil(a), std::min(a, b),
                                 std::max(a, b), std::fma(a, b, c), std::exp(a), std::log(positive), std::sin(a),
                                 std::cos(a), std::tanh(a), std::pow(positive, b)};
    for (std::size_t col = 0; col < want.size(); ++col) {
      T g = got[i * static_cast<std::size_t>(columns) + col];
      CAPTURE(col);
      CAPTURE(a);
      CAPTURE(b);
      if (col < 7) CHECK(same_float(g, want[col]));
      else CHECK(close_ulps(g, want[col], ulps));
    }
  }
}

template <class T>
void check_histogram() {
  auto k = kernels::histogram<T>();
  const std::int64_t n = sizeof(T) <= 2 ? 4000 : 200000;  // narrow bins must not wrap
  std::vector<std::int32_t> keys;
  for (std::int64_t i = 0; i < n; ++i) keys.push_back(static_cast<std::int32_t>((i * 7) % 1601));
  std::vector<T> up(16, T(0)), down(16, T(0));
  T all = 0, lo97 = lim<T>::max(), hi97 = lim<T>::lowest(), lo89 = lim<T>::max(), hi89 = lim<T>::lowest();
  for (std::int32_t key : keys) {
    up[static_cast<std::size_t>(key % 16)] = static_cast<T>(up[static_cast<std::size_t>(key % 16)] + 1);
    down[static_cast<std::size_t>(key % 16)] = static_cast<T>(down[static_cast<std::size_t>(key % 16)] - 2);
    all = static_cast<T>(all + 1);
    lo97 = std::min(lo97, static_cast<T>(key % 97)), hi97 = std::max(hi97, static_cast<T>(key % 97));
    lo89 = std::min(lo89, static_cast<T>(key % 89)), hi89 = std::max(hi89, static_cast<T>(key % 89));
  }
  qd::ndarray<std::int32_t, 1> dkeys(n);
  qd::ndarray<T, 1> dup(16), ddown(16), extremes(4);
  qd::ndarray<T, 0> dall;
  dkeys.from_host(keys);
  extremes.from_host(std::vector<T>{lim<T>::max(), lim<T>::lowest(), T(0), T(0)});
  k(dkeys, dup, ddown, dall, extremes);
  CHECK(dup.to_host() == up);
  CHECK(ddown.to_host() == down);
  CHECK(dall.to_host()[0] == all);
  CHECK(extremes.to_host() == std::vector<T>{lo97, hi97, lo89, hi89});
}

std::vector<std::int32_t> iota_values(std::int64_t n, std::int32_t scale, std::int32_t offset) {
  std::vector<std::int32_t> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(static_cast<std::int32_t>(i) * scale + offset);
  return v;
}

std::vector<float> iota_floats(int n, float scale) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i) * scale + 1.0f;
  return v;
}

}  // namespace

TYPE_TO_STRING(on_cpu);
TYPE_TO_STRING(on_cuda);
TYPE_TO_STRING(on_amdgpu);
TYPE_TO_STRING(on_reference);
#define QD_SUITE_ARCHES on_cpu, on_cuda, on_amdgpu

// ---------------------------------------------------------------------------
// Statements and expressions.

TEST_CASE_TEMPLATE("suite: integer operators wrap and define division by zero, for every integer type", A,
                   QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  check_integer_operators<std::int32_t>();
  check_integer_operators<std::int64_t>();
  check_integer_operators<std::uint32_t>();
  check_integer_operators<std::uint8_t>();
}

TEST_CASE_TEMPLATE("suite: per-thread svd, polar_decompose, sym_eig, make_spd and solve in f32 and f64", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  linalg_checks::check_linalg();
}

TEST_CASE_TEMPLATE("suite: floating-point operators are IEEE, bit for bit", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  check_float_operators<float>();
  check_float_operators<double>();
}

TEST_CASE_TEMPLATE("suite: math functions agree with <cmath>", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  const int ulps = on_gpu<A>() ? 8 : 4;
  check_math_functions<float>(ulps);
  check_math_functions<double>(ulps);
}

TEST_CASE_TEMPLATE("suite: casts convert, truncate toward zero and narrow modulo the width", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::casts();
  const std::vector<std::int32_t> is = {300, -1, 0, 7, -129, 65536 + 255};
  const std::vector<std::int64_t> ls = {(std::int64_t{1} << 32) + 5, -1, lim<std::int64_t>::min(), 12345678901LL, -7, 0};
  const std::vector<float> fs = {2.7f, -2.7f, 0.0f, 99.99f, -0.5f, 200.5f};
  const std::vector<double> ds = {0.1, -1e9, 16777217.0, 1.0 / 3.0, 0.75, -3.5};
  const std::int64_t n = 6, columns = 16;
  qd::ndarray<std::int32_t, 1> i32s(n);
  qd::ndarray<std::int64_t, 1> i64s(n);
  qd::ndarray<float, 1> f32s(n);
  qd::ndarray<double, 1> f64s(n);
  qd::ndarray<double, 2> out({n, columns});
  qd::ndarray<std::uint8_t, 2> small({n, 3});
  i32s.from_host(is), i64s.from_host(ls), f32s.from_host(fs), f64s.from_host(ds);
  k(i32s, i64s, f32s, f64s, out, small);
  auto got = out.to_host();
  auto got_small = small.to_host();
  for (std::size_t r = 0; r < static_cast<std::size_t>(n); ++r) {
    const std::int32_t i = is[r];
    const std::int64_t l = ls[r];
    const float f = fs[r];
    const double d = ds[r];
    const std::vector<double> want = {
        static_cast<double>(static_cast<std::int32_t>(f)), static_cast<double>(static_cast<std::int32_t>(d)),
        static_cast<double>(static_cast<std::int32_t>(l)), static_cast<double>(static_cast<std::uint32_t>(i)),
        static_cast<double>(static_cast<std::uint8_t>(i)), static_cast<double>(static_cast<float>(d)),
        static_cast<double>(static_cast<float>(i)), static_cast<double>(static_cast<std::int64_t>(f)),
        i != 0 ? 1.0 : 0.0, f != 0 ? 1.0 : 0.0, static_cast<double>(static_cast<std::uint32_t>(l)),
        i > 0 ? static_cast<double>(f) : static_cast<double>(static_cast<float>(i)), f < 0 ? -1.0 : 1.0,
        d > 0.5 ? static_cast<double>(l) : static_cast<double>(i), static_cast<double>(static_cast<std::int64_t>(i) * 4),
        static_cast<double>(f)};
    for (std::size_t c = 0; c < want.size(); ++c) {
      CAPTURE(r);
      CAPTURE(c);
      CHECK(got[r * static_cast<std::size_t>(columns) + c] == want[c]);
    }
    CHECK(got_small[r * 3 + 0] == static_cast<std::uint8_t>(i));
    CHECK(got_small[r * 3 + 1] == static_cast<std::uint8_t>(std::abs(f)));
    CHECK(got_small[r * 3 + 2] == static_cast<std::uint8_t>(i + 250));
  }
}

// The documented float-to-integer rule, computed independently of the library: the
// truncated value in long double (exact for every bound involved), clamped; NaN gives 0.
template <class I, class F>
I saturated(F x) {
  if (std::isnan(x)) return 0;
  const long double t = std::trunc(static_cast<long double>(x));
  if (t <= static_cast<long double>(lim<I>::min())) return lim<I>::min();
  if (t >= static_cast<long double>(lim<I>::max())) return lim<I>::max();
  return static_cast<I>(t);
}

TEST_CASE_TEMPLATE("suite: float-to-integer casts of NaN, infinities and out-of-range values saturate, NaN gives 0, at "
                   "every opt level",
                   A, on_cpu, on_reference, on_cuda, on_amdgpu) {
  const double inf = lim<double>::infinity(), nan = lim<double>::quiet_NaN();
  const std::vector<double> specials = {
      nan, -nan, inf, -inf, 1e30, -1e30, 3.4e38, -3.4e38, 0.0, -0.0, 0.5, -0.5, 3.7, -3.7, -0.99, -1.0, 1e-40,
      255.0, 255.99, 256.0, 300.5, -255.5, 2147483647.0, 2147483647.5, 2147483648.0, 2147483900.0, -2147483648.0,
      -2147483648.9, -2147483649.0, -2147483904.0, 4294967295.0, 4294967295.9, 4294967296.0, 5e9, -5e9,
      9223372036854774784.0, 9223372036854775808.0, -9223372036854775808.0, -9223372036854777856.0, 1.8446744073709552e19};
  // Each value at every position of a long loop: a vectorised body and its remainder
  // once disagreed at opt_level 3.
  const std::int64_t n = 1031;
  std::vector<double> ds(static_cast<std::size_t>(n));
  std::vector<float> fs(ds.size());
  for (std::size_t k = 0; k < ds.size(); ++k) {
    ds[k] = specials[(k * 7) % specials.size()];
    fs[k] = static_cast<float>(ds[k]);  // every special is within float's range
  }
  for (int opt = 0; opt <= 3; ++opt) {
    CAPTURE(opt);
    if (!start<A>({.opt_level = opt})) return;
    auto k = kernels::float_to_int();
    qd::ndarray<float, 1> f(n);
    qd::ndarray<double, 1> d(n);
    qd::ndarray<std::int32_t, 1> i32f(n), i32d(n);
    qd::ndarray<std::int64_t, 1> i64f(n), i64d(n);
    qd::ndarray<std::uint32_t, 1> u32f(n), u32d(n);
    qd::ndarray<std::uint8_t, 1> u8f(n), u8d(n);
    f.from_host(fs), d.from_host(ds);
    k(f, d, i32f, i32d, i64f, i64d, u32f, u32d, u8f, u8d);
    int mismatches = 0;
    auto compare = [&](const char* what, const auto& got, const auto& source) {
      using I = typename std::decay_t<decltype(got)>::value_type;
      for (std::size_t e = 0; e < got.size(); ++e) {
        const I want = saturated<I>(source[e]);
        if (got[e] != want && ++mismatches <= 10) {
          CAPTURE(what);
          CAPTURE(e);
          CAPTURE(source[e]);
          CHECK(+got[e] == +want);
        }
      }
    };
    compare("i32 from f32", i32f.to_host(), fs), compare("i32 from f64", i32d.to_host(), ds);
    compare("i64 from f32", i64f.to_host(), fs), compare("i64 from f64", i64d.to_host(), ds);
    compare("u32 from f32", u32f.to_host(), fs), compare("u32 from f64", u32d.to_host(), ds);
    compare("u8 from f32", u8f.to_host(), fs), compare("u8 from f64", u8d.to_host(), ds);
    CHECK(mismatches == 0);
  }
  // A C++ literal converts as a run-time value does (it was converted with undefined behaviour).
  if (!start<A>()) return;
  auto literals = qd::kernel("cast_literals", {"out"}, [](qd::types::ndarray<std::int64_t, 1> out) {
    out[0] = qd::cast<std::int64_t>(qd::cast<std::int32_t>(1e30));
    out[1] = qd::cast<std::int64_t>(qd::cast<std::uint8_t>(-5.5));
    out[2] = qd::cast<std::int64_t>(qd::cast<std::uint32_t>(std::numeric_limits<double>::quiet_NaN()));
    out[3] = qd::cast<std::int64_t>(-1e300);
    out[4] = qd::cast<std::int64_t>(qd::cast<bool>(std::numeric_limits<double>::quiet_NaN()));
  });
  qd::ndarray<std::int64_t, 1> out(5);
  literals(out);
  CHECK(out.to_host() == std::vector<std::int64_t>{lim<std::int32_t>::max(), 0, 0, lim<std::int64_t>::min(), 1});
}

TEST_CASE_TEMPLATE("suite: qd::var is per iteration inside a loop and a top-level value outside", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::variables();
  std::vector<std::int32_t> xs;
  for (int i = 0; i < 200; ++i) xs.push_back((i * 37) % 101 - 50);
  const auto n = static_cast<std::int64_t>(xs.size());
  qd::ndarray<std::int32_t, 1> x(n);
  qd::ndarray<std::int32_t, 2> out({n, 14});
  qd::ndarray<float, 1> fout(n);
  qd::ndarray<std::int32_t, 0> top;
  x.from_host(xs);
  const std::int32_t s = 345;
  k(x, out, fout, s, top);
  const std::int32_t t = (s * 3 + 4) % 1000;
  CHECK(top.to_host()[0] == t);
  auto got = out.to_host();
  auto fgot = fout.to_host();
  int mismatches = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    std::int32_t v = xs[i];
    std::vector<std::int32_t> want;
    v += 3, want.push_back(v);
    v -= 10, want.push_back(v);
    v *= -4, want.push_back(v);
    v = host_div(v, 3), want.push_back(v);
    v = host_mod(v, 7), want.push_back(v);
    v &= 0x3c, want.push_back(v);
    v |= 0x101, want.push_back(v);
    v ^= 0x55, want.push_back(v);
    std::int32_t w = v + 1000;
    want.push_back(v), want.push_back(w), want.push_back(0), want.push_back(w * 2);
    want.push_back(t + static_cast<std::int32_t>(i));
    want.push_back(xs[i] * xs[i] * xs[i]);
    for (std::size_t c = 0; c < want.size(); ++c) {
      if (got[i * 14 + c] != want[c] && ++mismatches <= 10) {
        CAPTURE(i);
        CAPTURE(c);
        CHECK(got[i * 14 + c] == want[c]);
      }
    }
    float f = 1.5f;
    f *= static_cast<float>(xs[i]);
    f /= 4.0f;
    f -= 0.25f;
    mismatches += fgot[i] != f;
  }
  CHECK(mismatches == 0);
}

TEST_CASE_TEMPLATE("suite: ndrange visits every index of a 2-D, 3-D and 4-D space exactly once", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::ndranges();
  qd::ndarray<std::int32_t, 2> a2({70, 90});
  qd::ndarray<std::int32_t, 3> a3({3, 4, 5});
  qd::ndarray<std::int32_t, 4> a4({2, 3, 4, 5});
  k(a2, a3, a4);
  auto h2 = a2.to_host();
  auto h3 = a3.to_host();
  auto h4 = a4.to_host();
  int mismatches = 0;
  std::size_t p = 0;
  for (int i = 0; i < 70; ++i)
    for (int j = 0; j < 90; ++j) mismatches += h2[p++] != i * 100 + j + 1;
  p = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 5; ++l) mismatches += h3[p++] != i * 10000 + j * 100 + l + 1;
  p = 0;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int l = 0; l < 4; ++l)
        for (int m = 0; m < 5; ++m) mismatches += h4[p++] != i * 1000 + j * 100 + l * 10 + m + 1;
  CHECK(mismatches == 0);
}

TEST_CASE_TEMPLATE("suite: range bounds from parameters, empty and negative extents", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::ranges();
  const std::int64_t n = 16;
  struct bounds {
    std::int32_t lo;
    std::int64_t hi;
    std::int64_t rows, cols;
    std::int32_t h, w;
  };
  // One compiled kernel serves every bound and array shape, empty and negative ones too.
  for (bounds b : {bounds{3, 10, 3, 5, 2, 3}, bounds{0, n, 0, 4, 0, 5}, bounds{5, 5, 1000, 1, -2, 3},
                   bounds{8, 2, 7, 0, -1, -1}, bounds{0, 1, 1, 1, 4, -1}}) {
    CAPTURE(b.lo);
    CAPTURE(b.hi);
    CAPTURE(b.h);
    CAPTURE(b.w);
    qd::ndarray<std::int32_t, 1> hits(n), values(n), fixed(n);
    qd::ndarray<float, 2> m({b.rows, b.cols});
    qd::ndarray<std::int32_t, 0> count;
    values.fill(-1);
    k(hits, values, b.lo, b.hi, m, count, b.h, b.w, fixed);
    auto h = hits.to_host();
    auto v = values.to_host();
    auto f = fixed.to_host();
    for (std::int32_t i = 0; i < n; ++i) {
      bool inside = i >= b.lo && i < b.hi;
      CHECK(h[static_cast<std::size_t>(i)] == (inside ? 1 : 0));
      CHECK(v[static_cast<std::size_t>(i)] == (inside ? i * 2 : -1));
      CHECK(f[static_cast<std::size_t>(i)] == (i < 7 ? i + 1 : 0));
    }
    std::vector<float> want;
    for (std::int64_t i = 0; i < b.rows * b.cols; ++i) want.push_back(static_cast<float>(i));
    CHECK(m.to_host() == want);
    const std::int32_t cells = b.h > 0 && b.w > 0 ? b.h * b.w : 0;
    CHECK(count.to_host()[0] == cells + (b.h * b.w > 0 ? b.h * b.w * 1000 : 0));
  }
}

TEST_CASE_TEMPLATE("suite: loops, branches and while_ nested in a parallel construct, and serial control flow", A,
                   QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::nested_loops();
  const std::int64_t n = 300, m = 17;
  std::vector<std::int32_t> as, vs;
  for (std::int64_t i = 0; i < n * m; ++i) as.push_back(static_cast<std::int32_t>((i * 13) % 29 - 14));
  for (std::int64_t j = 0; j < m; ++j) vs.push_back(static_cast<std::int32_t>(j * 3 - 20));
  qd::ndarray<std::int32_t, 2> a({n, m}), y({n, 4});
  qd::ndarray<std::int32_t, 1> v(m);
  a.from_host(as), v.from_host(vs);
  k(a, v, y);
  auto got = y.to_host();
  int mismatches = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    std::int32_t dot = 0, evens = 0;
    for (std::int64_t j = 0; j < m; ++j) {
      dot += as[static_cast<std::size_t>(i * m + j)] * vs[static_cast<std::size_t>(j)];
      if (vs[static_cast<std::size_t>(j)] % 2 == 0) evens += as[static_cast<std::size_t>(i * m + j)];
    }
    std::int32_t steps = 0;
    for (std::int64_t c = i + 1; c != 1; ++steps) c = c % 2 == 0 ? c / 2 : c * 3 + 1;
    mismatches += got[static_cast<std::size_t>(i * 4 + 0)] != dot;
    mismatches += got[static_cast<std::size_t>(i * 4 + 1)] != static_cast<std::int32_t>(i * (i + 1) / 2);
    mismatches += got[static_cast<std::size_t>(i * 4 + 2)] != evens;
    mismatches += got[static_cast<std::size_t>(i * 4 + 3)] != steps;
  }
  CHECK(mismatches == 0);

  auto serial = kernels::serial_control_flow();
  const std::int64_t len = 5001;
  std::vector<std::int32_t> xs;
  for (std::int64_t i = 0; i < len; ++i) xs.push_back(static_cast<std::int32_t>(i % 7));
  qd::ndarray<std::int32_t, 1> x(len), prefix(len), g(2);
  qd::ndarray<std::int32_t, 0> sign;
  x.from_host(xs);
  std::vector<std::int32_t> want(xs.size());
  std::partial_sum(xs.begin(), xs.end(), want.begin());
  // A loop inside a top-level if_ is serial: it sees its own earlier iterations. The
  // while_ (Euclid) repeats while its condition holds, also zero times.
  for (auto [a, b] : {std::pair{1071, 462}, std::pair{12, 18}, std::pair{7, 0}, std::pair{0, 5}}) {
    CAPTURE(a);
    CAPTURE(b);
    for (std::int32_t flag : {1, 0}) {
      CAPTURE(flag);
      serial(x, prefix, sign, flag, g, a, b);
      auto scanned = prefix.to_host();
      if (flag) {
        CHECK(scanned == want);
        CHECK(sign.to_host()[0] == ((len - 1) % 2 == 0 ? 1 : -1));
      } else {
        for (std::size_t i = 0; i < xs.size(); i += 97) CHECK(scanned[i] == -xs[i]);
        CHECK(sign.to_host()[0] == 1);
      }
      std::int32_t p = a, q = b, rounds = 0;
      while (q != 0) {
        std::int32_t t = q;
        q = p % q;
        p = t;
        ++rounds;
      }
      CHECK(p == std::gcd(a, b));
      CHECK(g.to_host() == std::vector<std::int32_t>{p, rounds});
    }
  }
}

TEST_CASE_TEMPLATE("suite: break_ and continue_ in every kind of loop, a serialized top-level loop and block_dim, "
                   "whole and split, as plain C++ runs them", A, on_cpu, on_reference, on_cuda, on_amdgpu) {
  for (auto mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
    CAPTURE(mode);
    if (!start<A>({.per_offload = mode})) return;
    auto k = kernels::loop_control();
    const std::int32_t n = 500, rows = 37, cols = 29;
    std::vector<std::int32_t> xs;
    for (std::int32_t i = 0; i < n; ++i) xs.push_back(i == 321 ? -1 : (i * 7) % 13);
    qd::ndarray<std::int32_t, 1> x(n), count(n), first(n), spins(n), hits(n), prefix(n);
    qd::ndarray<std::int32_t, 0> total;
    qd::ndarray<std::int32_t, 2> grid({rows, cols});
    x.from_host(xs);
    for (auto* a : {&count, &first, &spins, &hits, &prefix}) a->fill(-7);
    k(x, count, first, spins, hits, prefix, total, grid);
    kernels::loop_control_result got{count.to_host(), first.to_host(), spins.to_host(), hits.to_host(),
                                     prefix.to_host(), grid.to_host(), total.to_host()[0]};
    const kernels::loop_control_result want = kernels::loop_control_expected(xs, rows, cols);
    using column = std::vector<std::int32_t> kernels::loop_control_result::*;
    for (column c : {&kernels::loop_control_result::count, &kernels::loop_control_result::first,
                     &kernels::loop_control_result::spins, &kernels::loop_control_result::hits,
                     &kernels::loop_control_result::prefix, &kernels::loop_control_result::grid})
      CHECK(got.*c == want.*c);
    CHECK(got.total == want.total);
    // Three constructs: the serialized loop and the store after it are one serial construct.
    if (mode == qd::per_offload_mode::on) CHECK(k.per_offload_cache_observations().frontend_constructs_total == 3);
    qd::reset();
  }
}

TEST_CASE_TEMPLATE("suite: a kernel returns a tuple of a reduction, a maximum, a count and a vector, whole and split", A, on_cpu,
                   on_reference, on_cuda, on_amdgpu) {
  for (auto mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
    CAPTURE(mode);
    if (!start<A>({.per_offload = mode})) return;
    auto k = kernels::returns();
    const std::int64_t n = 777;
    std::vector<float> h;
    for (std::int64_t i = 0; i < n; ++i) h.push_back(static_cast<float>((i * 37) % 23) * 0.5f - 4.0f);
    qd::ndarray<float, 1> x(n);
    x.from_host(h);
    auto [sum, top, positive, pair] = k(x);
    float want_sum = 0.0f, want_top = -1e30f;
    std::int32_t want_positive = 0;
    for (float v : h) want_sum += v, want_top = std::max(want_top, v), want_positive += v > 0.0f;
    CHECK(sum == want_sum);  // multiples of 0.5 of small magnitude: exact in any order
    CHECK(top == want_top);
    CHECK(positive == want_positive);
    CHECK(pair == std::array<float, 2>{want_sum, want_top});  // a qd::vec2f returns a std::array
    qd::reset();
  }
}

TEST_CASE_TEMPLATE("suite: a nested struct parameter matched member by member with a host struct", A, on_cpu, on_reference,
                   on_cuda, on_amdgpu) {
  if (!start<A>()) return;
  auto k = kernels::struct_step();
  const std::int64_t n = 300;
  std::vector<float> x, v;
  for (std::int64_t i = 0; i < n; ++i) x.push_back(static_cast<float>(i % 11) * 0.5f), v.push_back(static_cast<float>(i % 5) - 2.0f);
  kernels::body_host b{qd::ndarray<float, 1>(n), qd::ndarray<float, 1>(n), {4.0f, 2.0f}};
  b.x.from_host(x);
  b.v.from_host(v);
  k(b, 0.125f);
  auto gx = b.x.to_host(), gv = b.v.to_host();
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float nv = v[i] - 4.0f * (x[i] - 2.0f) * 0.125f;  // the same operations, in the same order
    CHECK(gv[i] == doctest::Approx(nv).epsilon(1e-6));
    CHECK(gx[i] == doctest::Approx(x[i] + nv * 0.125f).epsilon(1e-6));
  }
  qd::reset();
}

TEST_CASE_TEMPLATE("suite: a loop bound beyond qd::i32 fails the launch and runs no iteration, instead of wrapping", A,
                   on_cpu, on_reference, on_cuda, on_amdgpu) {
  for (auto mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
    CAPTURE(mode);
    if (!start<A>({.per_offload = mode})) return;
    auto k = kernels::wide_bounds();
    qd::ndarray<std::int32_t, 1> hits(3);
    auto launch = [&](std::int64_t lo, std::int64_t hi, std::uint32_t n, std::int64_t rows) {
      hits.fill(0);
      k(hits, lo, hi, n, rows);
    };
    launch(-3, 4, 5, 3);  // i64 and u32 bounds that fit are used as they are
    CHECK(hits.to_host() == std::vector<std::int32_t>{7, 5, 6});
    launch(2147483640, 2147483647, 0, 0);
    CHECK(hits.to_host() == std::vector<std::int32_t>{7, 0, 0});
    const std::string message = "kernel 'wide_bounds': a qd::range_for bound is ";
    using doctest::Contains;
    CHECK_THROWS_WITH_AS(launch(0, 3000000000, 0, 0), Contains((message + "3000000000").c_str()), qd::user_error);
    CHECK(hits.to_host()[0] == 0);  // 3000000000 wraps to a negative i32; 4294967296 + 5 would wrap to 5
    CHECK_THROWS_WITH_AS(launch(0, 4294967301, 0, 0), Contains((message + "4294967301").c_str()), qd::user_error);
    CHECK(hits.to_host()[0] == 0);
    CHECK_THROWS_WITH_AS(launch(-4294967296, 3, 0, 0), Contains((message + "-4294967296").c_str()), qd::user_error);
    CHECK(hits.to_host()[0] == 0);
    CHECK_THROWS_WITH_AS(launch(0, 0, 4294967295u, 0), Contains((message + "4294967295").c_str()), qd::user_error);
    CHECK(hits.to_host()[1] == 0);
    CHECK_THROWS_WITH_AS(launch(0, 0, 0, 4294967298), Contains("does not fit in qd::i32"), qd::user_error);
    CHECK(hits.to_host()[2] == 0);
    launch(1, 2, 1, 1);  // the kernel still runs afterwards: the error record was reset
    CHECK(hits.to_host() == std::vector<std::int32_t>{1, 1, 2});

    auto literal = qd::kernel("wide_literal", {"hits"}, [](qd::types::ndarray<std::int32_t, 1> hits) {
      qd::range_for(5000000000LL, [&](qd::i32) { hits[0] += 1; });
    });
    CHECK_THROWS_WITH_AS(literal(hits), Contains("kernel 'wide_literal': a qd::range_for bound of 5000000000 does not fit"),
                         qd::user_error);
  }
}

TEST_CASE_TEMPLATE("suite: if_ and else_ branch per element inside loops and at the top level", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::branches();
  std::vector<std::int32_t> xs;
  for (int i = -40; i <= 40; ++i) xs.push_back(i);
  const auto n = static_cast<std::int64_t>(xs.size());
  qd::ndarray<std::int32_t, 1> x(n), cls(n), big(n);
  qd::ndarray<std::int32_t, 0> top;
  x.from_host(xs);
  for (std::int32_t s : {9, 5}) {
    k(x, cls, big, top, s);
    auto c = cls.to_host();
    auto b = big.to_host();
    for (std::size_t i = 0; i < xs.size(); ++i) {
      std::int32_t v = xs[i];
      CAPTURE(v);
      CHECK(c[i] == (v < 0 ? -1 : v == 0 ? 0 : 1) + (v % 2 == 0 ? 10 : 0));
      CHECK(b[i] == (v > 0) + (v > 10) + (v > 20) + (v > 0 ? 100 : 0));
    }
    CHECK(top.to_host()[0] == (s > 5 ? 1 : 2));
  }
}

TEST_CASE_TEMPLATE("suite: signed overflow wraps instead of being assumed away by the compiler", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::overflow_compare();
  std::vector<std::int32_t> xs = {0, 5, -5, lim<std::int32_t>::max(), lim<std::int32_t>::min(), 1 << 30,
                                  lim<std::int32_t>::max(), 1 << 30};
  qd::ndarray<std::int32_t, 1> x(static_cast<std::int64_t>(xs.size())), out(static_cast<std::int64_t>(xs.size()));
  qd::ndarray<std::int32_t, 0> total;
  x.from_host(xs);
  k(x, out, total);
  std::int32_t sum = 0;
  for (std::int32_t v : xs) sum = wrap_add(sum, v);
  CHECK(total.to_host()[0] == sum);
  auto got = out.to_host();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    std::int32_t v = xs[i];
    std::int32_t want = static_cast<std::int32_t>(wrap_add(v, 1) > v) + 2 * static_cast<std::int32_t>(wrap_neg(v) < 0) +
                        4 * static_cast<std::int32_t>(host_div(wrap_mul(v, 2), 2) == v);
    CAPTURE(v);
    CHECK(got[i] == want);
  }
}

TEST_CASE_TEMPLATE("suite: scalar parameters of every type arrive with their run-time values", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::scalars();
  qd::ndarray<double, 1> floats(6);
  qd::ndarray<std::int64_t, 1> ints(8);
  qd::ndarray<std::uint32_t, 1> wide(5);
  struct args {
    float f;
    double d;
    std::int32_t i;
    std::int64_t l;
    std::uint32_t u;
    std::uint8_t b;
    bool flag;
  };
  for (args a : {args{1.5f, -2.25e-10, -7, -(std::int64_t{1} << 40) - 3, 4000000000u, 200, true},
                 args{-0.1f, 1e300, lim<std::int32_t>::min(), lim<std::int64_t>::max() - 1, 7u, 255, false}}) {
    k(a.f, a.d, a.i, a.l, a.u, a.b, a.flag, floats, ints, wide);  // the same compiled kernel, new values
    std::vector<double> want_floats = {a.f, a.d};
    std::vector<std::int64_t> want_ints = {a.i, a.l, a.b, a.flag ? 1 : 0};
    std::vector<std::uint32_t> want_wide = {a.u};
    for (int k2 = 0; k2 < 4; ++k2) {
      want_floats.push_back(static_cast<double>(a.f * static_cast<float>(k2)) + a.d);
      want_ints.push_back(a.l - k2);
      want_wide.push_back(a.u + static_cast<std::uint32_t>(k2));
    }
    CHECK(floats.to_host() == want_floats);
    CHECK(ints.to_host() == want_ints);
    CHECK(wide.to_host() == want_wide);
  }
  // C++ numbers convert where no value can change (int -> qd::f64, int -> qd::i64, std::int16_t -> qd::f32);
  // others need a static_cast (tests/compile_fail/scalar_argument_*.cpp).
  k(std::int16_t{2}, 3, static_cast<std::int32_t>(4.9), 5, 6u, std::uint8_t{7}, true, floats, ints, wide);
  CHECK(floats.to_host()[0] == 2.0);
  CHECK(floats.to_host()[1] == 3.0);
  CHECK(ints.to_host()[0] == 4);
  CHECK(ints.to_host()[1] == 5);
}

TEST_CASE_TEMPLATE("suite: needs_grad arrays carry a gradient buffer of the same shape, read and written through .grad()",
                   A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::gradients();
  const std::int64_t n = 8;
  qd::ndarray<float, 1> x(n, qd::needs_grad);
  qd::ndarray<double, 2> m({3, 5}, qd::needs_grad);
  qd::ndarray<float, 0> s(qd::needs_grad);
  qd::ndarray<float, 1> plain(n, qd::needs_grad);  // a gradient the parameter does not ask for is fine
  REQUIRE(x.has_grad());
  CHECK(x.grad().shape() == x.shape());
  CHECK(m.grad().shape() == m.shape());
  std::vector<float> xs;
  for (int i = 0; i < n; ++i) xs.push_back(static_cast<float>(i) - 2.5f);
  std::vector<double> ms, mgrad;
  for (int i = 0; i < 15; ++i) ms.push_back(i * 0.25), mgrad.push_back(100.0 + i);
  x.from_host(xs), m.from_host(ms), m.grad().from_host(mgrad);
  s.from_host(std::vector<float>{1.5f});
  s.grad().from_host(std::vector<float>{0.25f});
  CHECK(x.grad().to_host() == std::vector<float>(static_cast<std::size_t>(n), 0.0f));  // zero-initialized
  k(x, m, s, plain);
  std::vector<float> want_xgrad, want_plain;
  for (float v : xs) want_xgrad.push_back(v * 2), want_plain.push_back(v * 2 + 1);
  std::vector<double> want_mgrad;
  for (std::size_t i = 0; i < ms.size(); ++i) want_mgrad.push_back(mgrad[i] + ms[i] * 3);
  CHECK(x.grad().to_host() == want_xgrad);
  CHECK(x.to_host() == xs);  // the primal is untouched
  CHECK(plain.to_host() == want_plain);
  CHECK(plain.grad().to_host() == std::vector<float>(static_cast<std::size_t>(n), 0.0f));
  CHECK(m.grad().to_host() == want_mgrad);
  CHECK(m.to_host() == ms);
  CHECK(s.grad().to_host() == std::vector<float>{1.5f * 4 + 0.25f});
}

TEST_CASE_TEMPLATE("suite: kernel.grad computes the adjoint of a reduction, a carried loop variable and a branch", A,
                   QD_SUITE_ARCHES, on_reference) {
  if (!start<A>()) return;
  auto k = kernels::adjoint_chain();
  const std::vector<float> xs{0.2f, 0.7f, -0.4f, 0.9f, 0.45f, 0.6f};
  const auto n = static_cast<std::int64_t>(xs.size());
  qd::ndarray<float, 1> x(n, qd::needs_grad), y(n, qd::needs_grad);
  qd::ndarray<float, 0> loss(qd::needs_grad);
  x.from_host(xs);
  loss.fill(0.0f);
  k(x, y, loss);
  loss.grad().fill(1.0f);
  k.grad(x, y, loss);
  CHECK(k.grad.per_offload_cache_observations().fallback == qd::fallback_reason::autodiff);
  // In double on the host: p = ((x + 0.5) x + 0.5) x + 0.5, y = p^2 or sin p, loss = sum(x) sum(y).
  double total = 0, ysum = 0;
  std::vector<double> dy;
  for (float xf : xs) {
    double v = xf, p = 1, dp = 0;
    for (int r = 0; r < 3; ++r) {
      dp = dp * v + p;
      p = p * v + 0.5;
    }
    double yv = v > 0.5 ? p * p : std::sin(p);
    dy.push_back(v > 0.5 ? 2 * p * dp : std::cos(p) * dp);
    total += v;
    ysum += yv;
  }
  auto got = x.grad().to_host();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    CAPTURE(i);
    double want = total * dy[i] + ysum;
    CHECK(std::abs(got[i] - want) <= 1e-4 * std::max(1.0, std::abs(want)));
  }
  CHECK(y.grad().to_host() == std::vector<float>(xs.size(), 0.0f));  // the plain stores' adjoints zero them
}

TEST_CASE_TEMPLATE("suite: volatile_load re-reads memory where a plain element read is a snapshot", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::volatile_reads();
  std::vector<std::int32_t> xs = {3, -4, 0, 100, 7};
  const auto n = static_cast<std::int64_t>(xs.size());
  qd::ndarray<std::int32_t, 1> x(n);
  qd::ndarray<std::int32_t, 2> out({n, 3});
  x.from_host(xs);
  k(x, out);
  auto got = out.to_host();
  auto now = x.to_host();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    CHECK(now[i] == xs[i] * 2 + 1);
    CHECK(got[i * 3 + 0] == xs[i]);
    CHECK(got[i * 3 + 1] == xs[i] * 2 + 1);
    CHECK(got[i * 3 + 2] == xs[i] * 2 + 1);
  }
}

TEST_CASE_TEMPLATE("suite: clamped indexing moves an out-of-range index to the nearest edge, for reads and writes", A,
                   QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::clamped();
  const std::int64_t n = 10, h = 4, w = 6;
  std::vector<float> xs;
  for (int i = 0; i < n; ++i) xs.push_back(static_cast<float>(i * i) + 0.5f);
  std::vector<std::int32_t> ms;
  for (int i = 0; i < h * w; ++i) ms.push_back(i * 3 + 1);
  qd::ndarray<float, 1> x(n), edges(6), blur(n), hits(n);
  qd::ndarray<std::int32_t, 2> m({h, w});
  qd::ndarray<std::int32_t, 1> medges(6);
  x.from_host(xs), m.from_host(ms);
  k(x, m, edges, medges, blur, hits);
  auto c1 = [&](std::int64_t i) { return xs[static_cast<std::size_t>(std::clamp<std::int64_t>(i, 0, n - 1))]; };
  auto c2 = [&](std::int64_t i, std::int64_t j) {
    return ms[static_cast<std::size_t>(std::clamp<std::int64_t>(i, 0, h - 1) * w + std::clamp<std::int64_t>(j, 0, w - 1))];
  };
  CHECK(edges.to_host() == std::vector<float>{c1(-5), c1(-1), c1(2), c1(n - 1), c1(n), c1(n + 1000)});
  CHECK(medges.to_host() == std::vector<std::int32_t>{c2(-1, -1), c2(h, w), c2(-3, 2), c2(1, w + 10), c2(h + 1, -2), c2(1, 2)});
  std::vector<float> want_blur, want_hits(static_cast<std::size_t>(n), 0.0f);
  for (std::int64_t i = 0; i < n; ++i) want_blur.push_back(c1(i - 1) + c1(i + 1));
  for (std::int64_t i = 0; i < n + 4; ++i) want_hits[static_cast<std::size_t>(std::clamp<std::int64_t>(i - 2, 0, n - 1))] += 1.0f;
  CHECK(blur.to_host() == want_blur);
  CHECK(hits.to_host() == want_hits);
  CHECK(want_hits.front() == 3.0f);  // the edges really were hit from outside
}

namespace {

// in * 2 + 1 over every element of an N-dimensional array of T, and the extents seen in the kernel.
template <class T, int N>
void check_copy_scale() {
  auto k = qd::kernel("copy_scale", {"in", "out", "extents"},
                      [](qd::types::ndarray<T, N> in, qd::types::ndarray<T, N> out,
                         qd::types::ndarray<std::int32_t, 1> extents) {
                        if constexpr (N == 0) {
                          out() = qd::cast<T>(in() * 2 + 1);
                        } else {
                          [&]<std::size_t... D>(std::index_sequence<D...>) {
                            qd::range_for(qd::ndrange(in.shape(static_cast<int>(D))...), [&](auto... index) {
                              out(index...) = qd::cast<T>(in(index...) * 2 + 1);
                            });
                          }(std::make_index_sequence<N>{});
                        }
                        for (int d = 0; d < N; ++d) extents[d] = in.shape(d);  // a trace-time C++ loop
                      });
  std::array<std::int64_t, N> shape{};
  const std::array<std::int64_t, 4> dims = {5, 3, 4, 2};
  for (int d = 0; d < N; ++d) shape[static_cast<std::size_t>(d)] = dims[static_cast<std::size_t>(d)];
  auto make = [&] {
    if constexpr (N == 0) return qd::ndarray<T, 0>();
    else return qd::ndarray<T, N>(shape);
  };
  qd::ndarray<T, N> in = make(), out = make();
  qd::ndarray<std::int32_t, 1> extents(4);
  std::vector<T> values, want;
  for (std::int64_t i = 0; i < in.size(); ++i) {
    T v = std::is_floating_point_v<T> ? static_cast<T>(static_cast<double>(i) * 0.5 - 3.25)
          : std::is_signed_v<T>       ? static_cast<T>(i % 23 - 5)
                                      : static_cast<T>(i % 23);
    values.push_back(v);
    want.push_back(static_cast<T>(v * 2 + 1));
  }
  in.from_host(values);
  k(in, out, extents);
  CHECK(out.to_host() == want);
  auto e = extents.to_host();
  for (int d = 0; d < N; ++d) CHECK(e[static_cast<std::size_t>(d)] == shape[static_cast<std::size_t>(d)]);
}

template <class T>
void check_copy_scale_all_ranks() {
  const std::string element_type(qd::name(qd::dtype_of<T>));
  CAPTURE(element_type);
  check_copy_scale<T, 0>();
  check_copy_scale<T, 1>();
  check_copy_scale<T, 2>();
  check_copy_scale<T, 3>();
  check_copy_scale<T, 4>();
}

}  // namespace

TEST_CASE_TEMPLATE("suite: every element type works in arrays of 0 to 4 dimensions", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  check_copy_scale_all_ranks<float>();
  check_copy_scale_all_ranks<double>();
  check_copy_scale_all_ranks<std::int32_t>();
  check_copy_scale_all_ranks<std::int64_t>();
  check_copy_scale_all_ranks<std::uint32_t>();
  check_copy_scale_all_ranks<std::uint8_t>();
}

// ---------------------------------------------------------------------------
// Atomics and reductions.

TEST_CASE_TEMPLATE("suite: atomics return the old value in a serial construct", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::atomics_serial();
  std::vector<std::int32_t> ha = {1, 2, 10, 4, 10};
  std::vector<float> hf = {0.25f, 1.0f, -1.5f, 2.0f};
  qd::ndarray<std::int32_t, 1> a(5), olds(8);
  qd::ndarray<float, 1> f(4), folds(4);
  a.from_host(ha);
  f.from_host(hf);
  for (int launch = 0; launch < 2; ++launch) {
    CAPTURE(launch);
    k(a, f, olds, folds);
    std::vector<std::int32_t> want_olds = {ha[0], ha[1], ha[2], ha[3]};
    std::vector<float> want_folds = hf;
    ha[0] += 5, ha[1] -= 5, ha[2] = std::min(ha[2], 5), ha[3] = std::max(ha[3], 5);
    hf[0] += 0.5f, hf[1] -= 0.5f, hf[2] = std::min(hf[2], 0.5f), hf[3] = std::max(hf[3], 0.5f);
    std::int32_t v = ha[4];
    want_olds.push_back(v), v += 3;
    want_olds.push_back(v), v -= 1;
    want_olds.push_back(v), v = std::min(v, 7);
    want_olds.push_back(v), v = std::max(v, 9);
    ha[4] = v;
    CHECK(olds.to_host() == want_olds);
    CHECK(folds.to_host() == want_folds);
    CHECK(a.to_host() == ha);
    CHECK(f.to_host() == hf);
  }
}

TEST_CASE_TEMPLATE("suite: contended atomics and top-level reductions in a parallel construct", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::atomics_parallel();
  const std::int64_t n = 20000;
  std::vector<std::int32_t> xs;  // distinct values: 7919 is invertible modulo the prime 100003
  for (std::int64_t i = 0; i < n; ++i) xs.push_back(static_cast<std::int32_t>((i * 7919) % 100003 - 50000));
  qd::ndarray<std::int32_t, 1> x(n), acc(4), tops(4), mine(n);
  qd::ndarray<std::int32_t, 2> olds({n, 2});
  qd::ndarray<float, 1> facc(3);
  x.from_host(xs);
  acc.from_host(std::vector<std::int32_t>{0, 0, lim<std::int32_t>::max(), lim<std::int32_t>::min()});
  facc.from_host(std::vector<float>{0.0f, lim<float>::infinity(), -lim<float>::infinity()});
  k(x, acc, olds, facc, tops, mine);
  const std::int64_t total = std::accumulate(xs.begin(), xs.end(), std::int64_t{0});
  const std::int32_t mn = *std::min_element(xs.begin(), xs.end());
  const std::int32_t mx = *std::max_element(xs.begin(), xs.end());
  const std::vector<std::int32_t> want = {static_cast<std::int32_t>(total), static_cast<std::int32_t>(-total), mn, mx};
  CHECK(acc.to_host() == want);
  CHECK(tops.to_host() == want);
  CHECK(facc.to_host() == std::vector<float>{static_cast<float>(n), 0.5f * static_cast<float>(mn), 0.5f * static_cast<float>(mx)});
  // Old values: only the first update in the element's modification order sees the
  // initial value; every old value is the initial one or some x; the iteration holding
  // the extreme value saw something less extreme.
  auto o = olds.to_host();
  int saw_initial_min = 0, saw_initial_max = 0;
  bool olds_are_values = true;
  for (std::int64_t i = 0; i < n; ++i) {
    std::int32_t omin = o[static_cast<std::size_t>(i * 2)], omax = o[static_cast<std::size_t>(i * 2 + 1)];
    saw_initial_min += omin == lim<std::int32_t>::max();
    saw_initial_max += omax == lim<std::int32_t>::min();
    if (omin != lim<std::int32_t>::max() && (omin < mn || std::find(xs.begin(), xs.end(), omin) == xs.end()))
      olds_are_values = false;
    if (omax != lim<std::int32_t>::min() && (omax > mx || std::find(xs.begin(), xs.end(), omax) == xs.end()))
      olds_are_values = false;
    if (xs[static_cast<std::size_t>(i)] == mn) CHECK(omin > mn);
    if (xs[static_cast<std::size_t>(i)] == mx) CHECK(omax < mx);
  }
  CHECK(saw_initial_min == 1);
  CHECK(saw_initial_max == 1);
  CHECK(olds_are_values);
  auto m = mine.to_host();
  for (std::int64_t i = 0; i < n; i += 101) CHECK(m[static_cast<std::size_t>(i)] == i * 1000 + i + 2);

  auto compaction = kernels::compaction();
  const std::int64_t len = 30000;
  std::vector<std::int32_t> cs;
  for (std::int64_t i = 0; i < len; ++i) cs.push_back(static_cast<std::int32_t>((i * 7919) % 100003 - 50000));
  std::vector<std::int32_t> picked_want;
  std::copy_if(cs.begin(), cs.end(), std::back_inserter(picked_want), [](std::int32_t v) { return v % 3 == 0; });
  std::sort(picked_want.begin(), picked_want.end());
  REQUIRE(picked_want.size() > 1000);
  qd::ndarray<std::int32_t, 1> cx(len), picked(len), picked2(len);
  qd::ndarray<std::int32_t, 0> count, count2;
  cx.from_host(cs);
  compaction(cx, picked, count, picked2, count2);
  for (auto* arrays : {&picked, &picked2}) {
    auto got = arrays->to_host();
    got.resize(picked_want.size());
    std::sort(got.begin(), got.end());
    CHECK(got == picked_want);  // every slot handed out once
  }
  CHECK(count.to_host()[0] == static_cast<std::int32_t>(picked_want.size()));
  CHECK(count2.to_host()[0] == static_cast<std::int32_t>(picked_want.size()));
}

TEST_CASE_TEMPLATE("suite: x[i] += v, -= v, min and max are atomic for every element type", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  check_histogram<std::int32_t>();
  check_histogram<std::uint32_t>();
  check_histogram<std::int64_t>();
  check_histogram<std::uint8_t>();
  check_histogram<float>();
  check_histogram<double>();
}

// ---------------------------------------------------------------------------
// Random numbers, print, bounds checks.

namespace {

struct random_draws {
  std::vector<float> f;
  std::vector<double> d;
  std::vector<std::uint32_t> u;
  std::vector<std::int32_t> s;
  float serial = 0;
  std::vector<float> grid;
};

// A fresh program with `seed`, then `launches` launches of the same kernel: the last
// one's draws; nothing where the arch is absent (the test reports the skip).
template <class A>
std::optional<random_draws> draw(std::uint64_t seed, int launches) {
  if (!start<A>({.random_seed = seed})) return std::nullopt;
  auto k = kernels::uniforms();
  const std::int64_t n = 100000;
  qd::ndarray<float, 1> f(n);
  qd::ndarray<double, 1> d(n);
  qd::ndarray<std::uint32_t, 1> u(n);
  qd::ndarray<std::int32_t, 1> s(n);
  qd::ndarray<float, 0> serial;
  qd::ndarray<float, 2> grid({300, 200});
  for (int l = 0; l < launches; ++l) k(f, d, u, s, serial, grid);
  return random_draws{f.to_host(), d.to_host(), u.to_host(), s.to_host(), serial.to_host()[0], grid.to_host()};
}

template <class T>
std::pair<double, double> mean_and_variance(const std::vector<T>& v) {
  double mean = 0, var = 0;
  for (T x : v) mean += static_cast<double>(x);
  mean /= static_cast<double>(v.size());
  for (T x : v) var += (static_cast<double>(x) - mean) * (static_cast<double>(x) - mean);
  return {mean, var / static_cast<double>(v.size())};
}

}  // namespace

TEST_CASE_TEMPLATE("suite: qd::random draws uniform values, reproducible for a seed, different across seeds and launches",
                   A, QD_SUITE_ARCHES) {
  const std::optional<random_draws> drawn = draw<A>(7, 1);
  if (!drawn) return;
  const random_draws& a = *drawn;
  SUBCASE("floats lie in [0, 1) with mean 1/2 and variance 1/12; integers have balanced bits") {
    for (const auto& [mean, var] : {mean_and_variance(a.f), mean_and_variance(a.d)}) {
      CHECK(mean == doctest::Approx(0.5).epsilon(0.02));
      CHECK(var == doctest::Approx(1.0 / 12).epsilon(0.03));
    }
    CHECK(std::all_of(a.f.begin(), a.f.end(), [](float x) { return x >= 0.0f && x < 1.0f; }));
    CHECK(std::all_of(a.d.begin(), a.d.end(), [](double x) { return x >= 0.0 && x < 1.0; }));
    CHECK((a.serial >= 0.0f && a.serial < 1.0f));
    for (const std::vector<float>* draws : {&a.f, &a.grid}) {  // 1-d and 2-d iteration spaces
      std::vector<float> sorted = *draws;
      std::sort(sorted.begin(), sorted.end());
      auto distinct = std::unique(sorted.begin(), sorted.end()) - sorted.begin();
      CHECK(static_cast<double>(distinct) > 0.99 * static_cast<double>(draws->size()));  // 2^24 possible values
    }
    CHECK(mean_and_variance(a.grid).first == doctest::Approx(0.5).epsilon(0.02));
    double low_bit = 0, high_bit = 0, negative = 0;
    for (std::uint32_t x : a.u) low_bit += x & 1u, high_bit += x >> 31;
    for (std::int32_t x : a.s) negative += x < 0;
    const double n = static_cast<double>(a.u.size());
    CHECK(low_bit / n == doctest::Approx(0.5).epsilon(0.02));
    CHECK(high_bit / n == doctest::Approx(0.5).epsilon(0.02));
    CHECK(negative / n == doctest::Approx(0.5).epsilon(0.02));
  }
  SUBCASE("the same seed after a re-init reproduces every draw") {
    random_draws b = *draw<A>(7, 1);
    CHECK(a.f == b.f);
    CHECK(a.d == b.d);
    CHECK(a.u == b.u);
    CHECK(a.s == b.s);
    CHECK(a.serial == b.serial);
    CHECK(a.grid == b.grid);
  }
  SUBCASE("another seed, or a later launch, draws different values") {
    for (const random_draws& other : {*draw<A>(8, 1), *draw<A>(7, 2)}) {
      std::size_t same = 0;
      for (std::size_t i = 0; i < a.f.size(); ++i) same += a.f[i] == other.f[i];
      CHECK(same < 100);
      CHECK(a.u != other.u);
    }
  }
}

TEST_CASE_TEMPLATE("suite: qd::print writes one line per call, in program order across constructs", A,
                   QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto serial = kernels::print_serial();
  auto parallel = kernels::print_parallel();
  qd::ndarray<float, 1> x(1);
  x.from_host(std::vector<float>{2.5f});
  // A GPU's printf output reaches stdout at the next synchronization: the copy back.
  std::string out = qd_test::capture_stdout([&] {
    serial(x, 7, -9000000000LL, 4000000000u, std::uint8_t{200}, true, 0.125);
    x.to_host();
  });
  CHECK(qd_test::lines_of(out) == std::vector<std::string>{"x0 = 2.5 n = 7 100% done",
                                                           "-9000000000 4000000000 200 1 0.125 42 2.5 tab\there quote\"s"});
  out = qd_test::capture_stdout([&] {
    parallel(5);
    x.to_host();
  });
  auto lines = qd_test::lines_of(out);
  REQUIRE(lines.size() == 7);
  CHECK(lines.front() == "before");  // constructs print in program order
  CHECK(lines.back() == "after");
  lines.erase(lines.begin());
  lines.pop_back();
  std::sort(lines.begin(), lines.end());  // iterations print in any order
  std::vector<std::string> want;
  for (int i = 0; i < 5; ++i) want.push_back("item " + std::to_string(i) + " squared " + std::to_string(i * i));
  CHECK(lines == want);
}

TEST_CASE_TEMPLATE("suite: an out-of-range index under check_out_of_bound is an error naming the parameter", A,
                   QD_SUITE_ARCHES) {
  if (!start<A>({.check_out_of_bound = true})) return;
  auto k = kernels::out_of_bounds();
  qd::ndarray<float, 1> x(4);
  CHECK_THROWS_WITH_AS(k(x, 9), doctest::Contains("parameter 'x'"), qd::user_error);
  k(x, 4);  // the error record was reset: a correct launch passes
  CHECK(x.to_host() == std::vector<float>(4, 1.0f));
}

// ---------------------------------------------------------------------------
// Top-level values, split against whole, the seed's fallbacks.

namespace {

qd::per_offload_mode per_offload_mode_subcase() {
  qd::per_offload_mode mode = qd::per_offload_mode::automatic;
  SUBCASE("per_offload = automatic") { mode = qd::per_offload_mode::automatic; }
  SUBCASE("per_offload = on") { mode = qd::per_offload_mode::on; }
  SUBCASE("per_offload = off") { mode = qd::per_offload_mode::off; }
  return mode;
}

}  // namespace

// Kernels whose constructs communicate through top-level values: reductions,
// snapshots taken before a loop overwrites their array, loop bounds loaded from
// memory, serial constructs between loops. Every kernel runs under each
// per_offload mode: the results must not depend on how the kernel is split.

TEST_CASE_TEMPLATE("suite: a reduction into a top-level qd::var is read by a later loop", A, QD_SUITE_ARCHES) {
  if (!start<A>({.per_offload = per_offload_mode_subcase()})) return;
  auto k = kernels::running_total();
  const std::int64_t n = 100000;
  auto xs = iota_values(n, 3, -7);
  qd::ndarray<std::int32_t, 1> x(n), out(10);
  qd::ndarray<float, 1> fx(100), fout(10);
  x.from_host(xs);
  fx.from_host(std::vector<float>(100, 1.0f));
  k(x, out, fx, fout);
  const auto total = static_cast<std::int32_t>(std::accumulate(xs.begin(), xs.end(), std::int64_t{0}));
  CHECK(out.to_host() == iota_values(10, 1, total));
  CHECK(fout.to_host() == std::vector<float>(10, 100.0f));
  k(x, out, fx, fout);  // the variable starts from its initializer on every launch
  CHECK(out.to_host() == iota_values(10, 1, total));
}

TEST_CASE_TEMPLATE("suite: an element read at the top level before a loop overwrites its array keeps the original value", A, QD_SUITE_ARCHES) {
  if (!start<A>({.per_offload = per_offload_mode_subcase()})) return;
  auto k = kernels::stale_snapshot();
  const std::int64_t n = 1000;
  auto as = iota_values(n, 2, 5);
  auto ms = iota_values(12, 7, 1);
  qd::ndarray<std::int32_t, 1> a(n);
  qd::ndarray<std::int32_t, 2> m({3, 4}), out({8, 4});
  a.from_host(as);
  m.from_host(ms);
  k(a, m, out);
  auto got = out.to_host();
  for (std::int32_t i = 0; i < 8; ++i) {
    CAPTURE(i);
    CHECK(got[static_cast<std::size_t>(i * 4 + 0)] == as[0] + i);
    CHECK(got[static_cast<std::size_t>(i * 4 + 1)] == as.back());
    CHECK(got[static_cast<std::size_t>(i * 4 + 2)] == ms[1 * 4 + 2]);
    CHECK(got[static_cast<std::size_t>(i * 4 + 3)] == as[0] * 10 + as[0]);
  }
  std::vector<std::int32_t> want_a;
  for (std::int32_t v : as) want_a.push_back(v * 10 + as[0]);
  CHECK(a.to_host() == want_a);
  CHECK(m.to_host() == std::vector<std::int32_t>(12, -1));
}

TEST_CASE_TEMPLATE("suite: loop bounds may be loaded from an array, including one an earlier construct wrote", A, QD_SUITE_ARCHES) {
  if (!start<A>({.per_offload = per_offload_mode_subcase()})) return;
  auto k = kernels::bounds_from_arrays();
  const std::int64_t n = 30;
  auto xs = iota_values(n, 1, 1);
  qd::ndarray<std::int32_t, 1> bounds(3), x(n), out(n);
  qd::ndarray<std::int32_t, 0> count;
  x.from_host(xs);
  for (std::vector<std::int32_t> b : {std::vector<std::int32_t>{12, 20, 25}, std::vector<std::int32_t>{0, 5, 5},
                                      std::vector<std::int32_t>{30, 29, 30}}) {
    CAPTURE(b[0]);
    bounds.from_host(b);
    out.fill(7);
    count.fill(-1);
    k(bounds, x, out, count);
    std::vector<std::int32_t> want(static_cast<std::size_t>(n), 7);
    for (std::int32_t i = 0; i < b[0]; ++i) want[static_cast<std::size_t>(i)] = xs[static_cast<std::size_t>(i)] * 2;
    for (std::int32_t i = b[1]; i < b[2]; ++i) want[static_cast<std::size_t>(i)] = -xs[static_cast<std::size_t>(i)];
    for (std::int32_t i = 0; i < n / 3; ++i) want[static_cast<std::size_t>(i)] += 1000;
    CHECK(out.to_host() == want);
    CHECK(count.to_host()[0] == n / 3);
  }
}

TEST_CASE_TEMPLATE("suite: a serial construct between loops sees the first loop's stores and feeds the next loop", A, QD_SUITE_ARCHES) {
  if (!start<A>({.per_offload = per_offload_mode_subcase()})) return;
  auto k = kernels::serial_between_loops();
  const std::int64_t n = 500;
  auto xs = iota_values(n, 3, 1);
  qd::ndarray<std::int32_t, 1> x(n), scratch(2), out(16);
  x.from_host(xs);
  k(x, scratch, out);
  const std::int32_t s0 = (xs.front() + 1) + (xs.back() + 1);
  CHECK(scratch.to_host() == std::vector<std::int32_t>{s0, s0 * 2});
  std::vector<std::int32_t> want;
  for (std::int32_t i = 0; i < 16; ++i) want.push_back(s0 * i + s0 * 2);
  CHECK(out.to_host() == want);
}

TEST_CASE_TEMPLATE("suite: top-level values and variables cross several constructs", A, QD_SUITE_ARCHES) {
  if (!start<A>({.per_offload = per_offload_mode_subcase()})) return;
  auto k = kernels::relay();
  const std::int64_t n = 12, len = 777;
  for (std::int32_t scale : {1, -1}) {
    CAPTURE(scale);
    auto xs = iota_values(len, scale, 3);
    qd::ndarray<std::int32_t, 1> x(len);
    qd::ndarray<std::int32_t, 2> out({n, 4});
    qd::ndarray<std::int32_t, 0> sign;
    x.from_host(xs);
    k(x, out, sign);
    const std::int32_t a = xs[0] * 2 + static_cast<std::int32_t>(n);
    const auto sum = static_cast<std::int32_t>(std::accumulate(xs.begin(), xs.end(), std::int64_t{0}));
    const std::int32_t b = (a + sum) * 3;
    const std::int32_t s = b > 0 ? 1 : -1;
    CHECK(sign.to_host()[0] == s);
    auto got = out.to_host();
    for (std::int32_t i = 0; i < n; ++i) {
      CAPTURE(i);
      CHECK(got[static_cast<std::size_t>(i * 4 + 0)] == a + i);
      CHECK(got[static_cast<std::size_t>(i * 4 + 1)] == a + b);
      CHECK(got[static_cast<std::size_t>(i * 4 + 2)] == sum);
      CHECK(got[static_cast<std::size_t>(i * 4 + 3)] == a - b + s);
    }
  }
}

TEST_CASE_TEMPLATE("suite: a top-level qd::var changed in qd::if_ and qd::while_ at the top level bounds a later loop", A, QD_SUITE_ARCHES) {
  if (!start<A>({.per_offload = per_offload_mode_subcase()})) return;
  auto k = kernels::bound_from_var();
  const std::int64_t len = 40;
  auto xs = iota_values(len, 1, 0);
  qd::ndarray<std::int32_t, 1> x(len), out(len);
  x.from_host(xs);
  for (std::int32_t limit : {10, 100, 0}) {
    CAPTURE(limit);
    out.fill(0);
    k(x, out, limit);
    std::vector<std::int32_t> want(static_cast<std::size_t>(len), 0);
    const std::int64_t bound = std::min<std::int64_t>(limit, len);
    for (std::int64_t i = 0; i < bound; ++i) want[static_cast<std::size_t>(i)] = xs[static_cast<std::size_t>(i)] + 1;
    std::int32_t root = 0;
    while ((root + 1) * (root + 1) <= len) ++root;
    for (std::int32_t i = 0; i < root; ++i) want[static_cast<std::size_t>(i)] += 100;
    CHECK(out.to_host() == want);
  }
}

TEST_CASE_TEMPLATE("suite: forty top-level values and forty reduced variables cross constructs without mixing up their slots", A, QD_SUITE_ARCHES) {
  if (!start<A>({.per_offload = per_offload_mode_subcase()})) return;
  constexpr int count = 40;
  auto k = kernels::forty_values();
  const std::int64_t len = 64, rows = 3;
  auto xs = iota_values(len, 5, -100);
  qd::ndarray<std::int32_t, 1> x(len);
  qd::ndarray<std::int32_t, 2> out({rows, 2 * count});
  x.from_host(xs);
  k(x, out);
  const auto total = static_cast<std::int32_t>(std::accumulate(xs.begin(), xs.end(), std::int64_t{0}));
  auto got = out.to_host();
  for (std::int32_t i = 0; i < rows; ++i)
    for (std::int32_t c = 0; c < count; ++c) {
      CAPTURE(i);
      CAPTURE(c);
      CHECK(got[static_cast<std::size_t>(i * 2 * count + c)] == xs[static_cast<std::size_t>(c)] * (c + 1) + c + i);
      CHECK(got[static_cast<std::size_t>(i * 2 * count + count + c)] == c + total * c);
    }
  CHECK(x.to_host() == std::vector<std::int32_t>(static_cast<std::size_t>(len), -1));
}

TEST_CASE_TEMPLATE("suite: a random draw and a volatile read at the top level happen once and every construct sees the same value", A, QD_SUITE_ARCHES) {
  if (!start<A>({.per_offload = per_offload_mode_subcase(), .random_seed = 11})) return;
  auto k = kernels::shared_draw();
  qd::ndarray<std::int32_t, 1> flag(3);
  qd::ndarray<float, 2> out({50, 3});
  flag.from_host(std::vector<std::int32_t>{41, 0, 0});
  k(flag, out);
  auto first = out.to_host();
  const float r = first[0];
  CHECK((r >= 0.0f && r < 1.0f));
  for (std::size_t i = 0; i < 50; ++i) {
    CHECK(first[i * 3 + 0] == r);
    CHECK(first[i * 3 + 1] == r);
    CHECK(first[i * 3 + 2] == 41.0f);  // read before the loop incremented it
  }
  k(flag, out);  // a new launch draws anew and reads the updated flag
  auto second = out.to_host();
  CHECK(second[0] != r);
  CHECK(second[1] == second[0]);
  CHECK(second[2] == 42.0f);
  CHECK(flag.to_host() == std::vector<std::int32_t>{43, 2, 2});
}

// Found by the differential fuzzer (kernels::nan_bounds says how).
TEST_CASE_TEMPLATE("suite: qd::atomic_min and atomic_max on a top-level qd::var ignore a NaN and keep the old zero, however it is kept", A, QD_SUITE_ARCHES) {
  if (!start<A>({.per_offload = per_offload_mode_subcase()})) return;
  auto k = kernels::nan_bounds();
  qd::ndarray<float, 1> x(2);
  qd::ndarray<float, 2> out({4, 3});
  x.from_host(std::vector<float>{std::numeric_limits<float>::quiet_NaN(), -0.0f});
  k(x, out);
  auto got = out.to_host();
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(got[i * 3 + 0] == 1.0f);
    CHECK(got[i * 3 + 1] == -1.0f);
    CHECK_FALSE(std::signbit(got[i * 3 + 2]));  // -0 < +0 is false: +0 stays
  }
}

TEST_CASE_TEMPLATE("suite: a min reduction into a top-level qd::var skips NaN elements wherever they are", A, QD_SUITE_ARCHES) {
  if (!start<A>({.per_offload = per_offload_mode_subcase()})) return;
  auto k = kernels::nan_reduction();
  qd::ndarray<float, 1> x(3), out(1);
  x.from_host(std::vector<float>{0.0f, std::numeric_limits<float>::quiet_NaN(), 5.0f});
  k(x, out);
  CHECK(out.to_host()[0] == 0.0f);  // the accumulator used to restart after the NaN and give 5
}

// Found by the differential fuzzer (kernels::assign_then_add says how).
TEST_CASE_TEMPLATE("suite: a loop that assigns a top-level qd::var and reduces into it gives the result of some order of its iterations", A, QD_SUITE_ARCHES) {
  if (!start<A>({.per_offload = per_offload_mode_subcase()})) return;
  auto k = kernels::assign_then_add();
  qd::ndarray<std::int32_t, 1> x(6), out(1);
  x.fill(5);
  k(x, out);
  // Each iteration's reset follows its own addition, so at most five additions can follow
  // the last reset; the per-chunk accumulator used to add all six (30) after it.
  const std::int32_t v = out.to_host()[0];
  CHECK(v % 5 == 0);
  CHECK(v <= 25);
}

TEST_CASE_TEMPLATE("suite: split and whole variants give bitwise-identical results", A, QD_SUITE_ARCHES) {
  auto k = kernels::split_many_values();
  std::vector<float> y_results[2];
  std::vector<std::int32_t> z_results[2];
  qd_test::scratch_directory cache(std::string("suite-identical-") + A::name);
  for (int variant = 0; variant < 2; ++variant) {
    if (!start<A>({.offline_cache_file_path = cache.str(),
                   .per_offload = variant ? qd::per_offload_mode::on : qd::per_offload_mode::off,
                   .random_seed = 7}))
      return;
    qd::ndarray<float, 1> x(100), y(100);
    qd::ndarray<std::int32_t, 2> z({6, 9});
    qd::ndarray<std::int32_t, 1> w(3);
    x.from_host(iota_floats(100, 0.37f));
    w.from_host(std::vector<std::int32_t>{0, 41, 0});
    k(x, y, z, w, 1.25f);
    y_results[variant] = y.to_host();
    z_results[variant] = z.to_host();
    auto o = k.per_offload_cache_observations();
    CHECK(o.fallback == (variant ? qd::fallback_reason::none : qd::fallback_reason::policy_per_offload_off));
    if (variant) CHECK(o.frontend_constructs_total == 4);
  }
  CHECK(std::memcmp(y_results[0].data(), y_results[1].data(), y_results[0].size() * sizeof(float)) == 0);
  CHECK(z_results[0] == z_results[1]);
  CHECK(y_results[0][0] == (1.0f * 1.25f) + 42.0f);  // head + bound, bound = 41 % 100 + 1
}

// Float reductions combine per CPU chunk (or GPU thread) with one atomic each: the split
// runs the reducing loop with the same code as the whole kernel, so on the CPU (one
// chunk up to 2048 iterations) and the reference backend the variants agree bitwise; a
// GPU's atomics combine in no fixed order, there the sum is compared within a tolerance.
TEST_CASE_TEMPLATE("suite: a new user's energy kernel splits, reductions read later, the whole kernel's values", A,
                   QD_SUITE_ARCHES, on_reference) {
  qd_test::scratch_directory cache(std::string("suite-energy-") + A::name);
  auto k = kernels::energy();
  const int n = 1000;
  std::vector<float> ms = iota_floats(n, 0.25f), vs = iota_floats(n, -0.0625f);
  vs[17] = 0.0f;
  std::vector<float> shares[2];
  for (int split = 0; split < 2; ++split) {
    if (!start<A>({.offline_cache_file_path = cache.str(),
                   .per_offload = split ? qd::per_offload_mode::on : qd::per_offload_mode::off}))
      return;
    qd::ndarray<float, 1> m(n), v(n), share(n);
    qd::ndarray<std::int32_t, 0> count;
    m.from_host(ms);
    v.from_host(vs);
    k(m, v, share, count);
    auto o = k.per_offload_cache_observations();
    CHECK(o.fallback == (split ? qd::fallback_reason::none : qd::fallback_reason::policy_per_offload_off));
    if (split) CHECK(o.frontend_constructs_total == 5);  // the sums' initial values, three loops, the count
    CHECK(count.to_host()[0] == n - 2);  // v[17] was set to 0, and v[16] is 0 by construction
    shares[split] = share.to_host();
    qd::reset();
  }
  float kinetic = 0.0f, heaviest = 0.0f;
  for (int i = 0; i < n; ++i) {
    const auto k_i = static_cast<std::size_t>(i);
    kinetic += 0.5f * ms[k_i] * vs[k_i] * vs[k_i];
    heaviest = std::max(heaviest, ms[k_i]);
  }
  for (std::size_t i : {std::size_t{0}, std::size_t{500}, std::size_t{999}}) {
    CAPTURE(i);
    const float want = 0.5f * ms[i] * vs[i] * vs[i] / kinetic + heaviest;
    CHECK(close_ulps(shares[1][i], want, on_gpu<A>() ? 64 : 4));
  }
  if (on_gpu<A>()) {
    for (std::size_t i = 0; i < shares[0].size(); ++i) CHECK(close_ulps(shares[1][i], shares[0][i], 64));
  } else {
    CHECK(std::memcmp(shares[0].data(), shares[1].data(), shares[0].size() * sizeof(float)) == 0);
  }
}

TEST_CASE_TEMPLATE("suite: the seed's kernels split through the persisted buffer and compute the whole kernel's values",
                   A, QD_SUITE_ARCHES) {
  qd_test::scratch_directory cache(std::string("suite-seed-") + A::name);
  qd_test::log_capture logs;  // the run-time fallback's warning
  if (!start<A>({.offline_cache_file_path = cache.str(), .per_offload = qd::per_offload_mode::on})) return;
  const int n = 16;
  qd::ndarray<float, 1> x(n), out(n), a(n, qd::needs_grad), b(n, qd::needs_grad);
  x.from_host(iota_floats(n, 1.0f));
  a.from_host(iota_floats(n, 2.0f));
  a.grad().from_host(iota_floats(n, 3.0f));

  auto running_total = kernels::seed_running_total();
  running_total(x, out);
  auto o = running_total.per_offload_cache_observations();
  CHECK(o.fallback == qd::fallback_reason::none);
  CHECK(o.frontend_constructs_total == 3);  // the reduction's initial value, its loop, the reading loop
  float sum = 0;
  for (float v : iota_floats(n, 1.0f)) sum += v;
  CHECK(out.to_host()[5] == sum);

  auto stale_snapshot = kernels::seed_stale_snapshot();
  stale_snapshot(a, out);
  o = stale_snapshot.per_offload_cache_observations();
  CHECK(o.fallback == qd::fallback_reason::none);
  CHECK(o.frontend_constructs_total == 3);  // the snapshot is taken before loop 1 and handed on
  CHECK(out.to_host()[3] == 1.0f);

  a.from_host(iota_floats(n, 2.0f));
  auto stale_clamped = kernels::seed_stale_clamped();
  stale_clamped(a, out);
  CHECK(stale_clamped.per_offload_cache_observations().fallback == qd::fallback_reason::none);
  CHECK(out.to_host()[0] == 1.0f);

  auto grad_snapshot = kernels::seed_grad_snapshot();
  grad_snapshot(a, b, out);
  CHECK(grad_snapshot.per_offload_cache_observations().fallback == qd::fallback_reason::none);
  CHECK(grad_snapshot.per_offload_cache_observations().runtime_fallbacks == 0);
  CHECK(out.to_host()[7] == 1.0f);

  // One array bound to two parameters the split assumed disjoint: the whole kernel runs.
  auto copy = kernels::copy_after_snapshot();
  qd::ndarray<float, 1> c(8), d(8);
  c.fill(3.0f);
  copy(c, d);
  CHECK(copy.per_offload_cache_observations().fallback == qd::fallback_reason::none);
  CHECK(d.to_host()[4] == 3.0f);
  copy(c, c);
  CHECK(copy.per_offload_cache_observations().runtime_fallbacks == 1);
  CHECK(c.to_host()[4] == 3.0f);
  qd::reset();
}

// Vectors and matrices (SPEC §11.1) and atomic demotion (§11.4): backend/suite_kernels_vec.hpp.
TEST_CASE_TEMPLATE("suite: vector arithmetic and functions agree with plain C++", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  vec_checks::check_vec_ops();
}
TEST_CASE_TEMPLATE("suite: matrix products, determinant and inverse agree with plain C++", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  vec_checks::check_mat_ops();
}
TEST_CASE_TEMPLATE("suite: vector and matrix variables reduce per component", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  vec_checks::check_vec_vars();
}
TEST_CASE_TEMPLATE("suite: elements of vector and matrix arrays, component updates and per-component atomics", A,
                   QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  vec_checks::check_vec_elements();
}
TEST_CASE_TEMPLATE("suite: demoted updates and a scatter that stays atomic give plain C++'s results", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  vec_checks::check_mixed_updates();
}
TEST_CASE_TEMPLATE("suite: vector and matrix scalar parameters arrive component by component", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  vec_checks::check_vec_params();
}

// The third wave's language (SPEC §13.4-§13.6): backend/suite_kernels_lang.hpp.
TEST_CASE_TEMPLATE("suite: && and || skip their right operand's loads and atomics; C++ values keep their C++ type", A,
                   on_cpu, on_reference, on_cuda, on_amdgpu) {
  if (!start<A>({.check_out_of_bound = true})) return;
  lang_checks::check_short_circuit();
  lang_checks::check_literal_select();
}
TEST_CASE_TEMPLATE("suite: qd::assert_ under debug reports its message from the device", A, on_cpu, on_reference,
                   on_cuda, on_amdgpu) {
  if (!start<A>({.debug = true})) return;
  lang_checks::check_assertion();
}
TEST_CASE_TEMPLATE("suite: template arguments, arrays of structs in both layouts and vector indices", A, on_cpu,
                   on_reference, on_cuda, on_amdgpu) {
  if (!start<A>()) return;
  lang_checks::check_template_args();
  lang_checks::check_struct_arrays();
}
// Math, bits, integer division, atomics and narrow types (backend/suite_kernels_math.hpp),
// on the reference backend too: every backend against plain C++.
#define QD_SUITE_ARCHES_AND_REFERENCE on_cpu, on_reference, on_cuda, on_amdgpu
TEST_CASE_TEMPLATE("suite: the third wave's math functions agree with <cmath> and Python's // and %", A,
                   QD_SUITE_ARCHES_AND_REFERENCE) {
  if (!start<A>()) return;
  const int ulps = on_gpu<A>() ? 4 : 2;  // CUDA documents up to 4 ulp for tanf; the host's libm gives 1
  math_checks::check_math_more<float>(ulps);
  math_checks::check_math_more<double>(ulps);
  math_checks::check_vec_math();
}
TEST_CASE_TEMPLATE("suite: floordiv, floormod, sign, clamp and the bit counts of every integer type", A,
                   QD_SUITE_ARCHES_AND_REFERENCE) {
  if (!start<A>()) return;
  math_checks::check_integer_functions<std::int32_t>(interesting_values<std::int32_t>());
  math_checks::check_integer_functions<std::int64_t>(interesting_values<std::int64_t>());
  math_checks::check_integer_functions<std::uint32_t>(interesting_values<std::uint32_t>());
  math_checks::check_integer_functions<std::uint64_t>(interesting_values<std::uint64_t>());
  math_checks::check_integer_functions<std::uint8_t>(interesting_values<std::uint8_t>());
  math_checks::check_integer_functions<std::int8_t>({0, 1, -1, 2, -2, 7, -7, 13, 100, 127, -128});
  math_checks::check_integer_functions<std::int16_t>({0, 1, -1, 3, -3, 255, -256, 1000, -1000, 32767, -32768});
  math_checks::check_integer_functions<std::uint16_t>({0, 1, 2, 3, 255, 256, 1000, 40000, 65535});
  math_checks::check_bit_casts();
}
TEST_CASE_TEMPLATE("suite: atomic mul, and, or, xor, exchange and cas return the old value for every element type", A,
                   QD_SUITE_ARCHES_AND_REFERENCE) {
  if (!start<A>()) return;
  math_checks::check_atomics_more<std::int32_t>();
  math_checks::check_atomics_more<std::uint32_t>();
  math_checks::check_atomics_more<std::int64_t>();
  math_checks::check_atomics_more<std::uint64_t>();
  math_checks::check_atomics_more<float>();
  math_checks::check_atomics_more<double>();
  math_checks::check_atomics_more<std::int8_t>();
  math_checks::check_atomics_more<std::uint16_t>();
  math_checks::check_atomics_more<qd::half>();
  math_checks::check_vec_atomics();
  math_checks::check_float_cas_compares_bits_and_minmax_nan<float>();
  math_checks::check_float_cas_compares_bits_and_minmax_nan<double>();
}
TEST_CASE_TEMPLATE("suite: contended compare-and-swap loops, bitwise atomics and exchanges lose nothing", A,
                   QD_SUITE_ARCHES_AND_REFERENCE) {
  if (!start<A>()) return;
  math_checks::check_atomic_contention();
}
TEST_CASE_TEMPLATE("suite: i8, i16, u16, u64 and f16 as arrays, scalars, variables, casts and atomics", A,
                   QD_SUITE_ARCHES_AND_REFERENCE) {
  if (!start<A>()) return;
  math_checks::check_narrow_types();
  math_checks::check_f16_rounding();
  check_copy_scale_all_ranks<std::int8_t>();
  check_copy_scale_all_ranks<std::int16_t>();
  check_copy_scale_all_ranks<std::uint16_t>();
  check_copy_scale_all_ranks<std::uint64_t>();
  check_copy_scale_all_ranks<qd::half>();
  check_histogram<std::int16_t>();
  check_histogram<std::uint64_t>();
  check_histogram<qd::half>();
}

// Graph kernels (issue 13): nested do_while loops run by the host loop reading each
// flag back after every pass, whole and split; concurrent regions joined.
TEST_CASE_TEMPLATE("suite: graph kernels loop while their flags are set, whole and split, and concurrent regions join", A,
                   QD_SUITE_ARCHES) {
  auto loops = kernels::graph_loops();
  auto regions = kernels::concurrent_regions();
  qd_test::scratch_directory cache(std::string("suite-graphs-") + A::name);
  const int n = 6, row_count = 4;
  // Small integers: the sum is exact in any order of the reduction.
  std::vector<float> xs(n);
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += xs[static_cast<std::size_t>(i)] = static_cast<float>(i % 3);
  std::vector<float> want_rows;
  int row = 0;
  do {
    int count = 0;
    do {
      ++count;
    } while (count < 10 * (row + 1));
    want_rows.push_back(static_cast<float>(count) + sum);
    ++row;
  } while (row < row_count);
  for (int variant = 0; variant < 2; ++variant) {
    CAPTURE(variant);
    if (!start<A>({.offline_cache_file_path = cache.str(),
                   .per_offload = variant ? qd::per_offload_mode::on : qd::per_offload_mode::off}))
      return;
    qd::ndarray<float, 1> x(n), rows(row_count);
    qd::ndarray<std::int32_t, 0> r, count, inner, outer;
    x.from_host(xs);
    loops(x, rows, r, count, inner, outer);
    CHECK(rows.to_host() == want_rows);
    CHECK(r.to_host()[0] == row_count);
    auto o = loops.per_offload_cache_observations();
    CHECK(o.fallback == (variant ? qd::fallback_reason::none : qd::fallback_reason::policy_per_offload_off));

    qd::ndarray<float, 1> a(9), b(5);
    const std::uint64_t forks = regions.per_offload_cache_observations().device_stream_forks;
    regions(a, b);
    // On a GPU the three regions ran on three streams of their own, joined before the last loop.
    CHECK(regions.per_offload_cache_observations().device_stream_forks == forks + (on_gpu<A>() ? 1 : 0));
    CHECK(a.to_host() == std::vector<float>{0, 1, 2, 3, -1, -1, -1, -1, -1});
    CHECK(b.to_host() == std::vector<float>{1, 4, 7, 10, 13});
    CHECK(regions.per_offload_cache_observations().fallback ==
          (variant ? qd::fallback_reason::concurrent : qd::fallback_reason::policy_per_offload_off));
    qd::reset();
  }
}

// Whether the CUDA driver has conditional nodes (12.3+), so that do_whiles run on the
// device; the emulated driver reports QD_EMULATED_CUDA_DRIVER_VERSION when set.
template <class A>
bool cuda_device_loops() {
  if constexpr (A::arch != qd::arch::cuda) {
    return false;
  } else {
    int version = 0;
    REQUIRE(qd::backend::cuda::driver().driver_version(&version) == 0);
    return version >= 12030;
  }
}

// Plain C++ for kernels::graph_replay: its effect, and the do_while passes it ran.
int graph_replay_on_host(std::vector<float>& x, std::vector<float>& y, float s) {
  for (float& v : x) v += s;
  for (float& v : y) v *= 2.0f;
  int passes = 0;
  do {
    for (float& v : x) v *= 0.5f;
    ++passes;
  } while (x[0] > 1.0f);
  return passes;
}

// Device graphs (issue 13, docs/graphs.md): on a GPU each run of a graph kernel's tasks
// between do_while marks is recorded once and replayed while the arguments are the
// same; a different array or scalar records again. On CUDA 12.3+ a do_while is one
// recording (a conditional WHILE node), else the host loop replays its body each pass.
// The CPU launches plainly. The results are plain C++'s on every arch.
TEST_CASE_TEMPLATE("suite: graph kernels record device graphs once and replay them while the arguments stay the same",
                   A, QD_SUITE_ARCHES) {
  auto k = kernels::graph_replay();
  qd_test::scratch_directory cache(std::string("suite-graph-replay-") + A::name);
  for (const std::uint64_t limit : {std::uint64_t{0}, std::uint64_t{100}}) {
    CAPTURE(limit);
    if (!start<A>({.offline_cache_file_path = cache.str(), .graph_max_iterations = limit})) return;
    const bool graphs = on_gpu<A>();
    // With graph_max_iterations the host loop counts the passes: no device loop.
    const bool device_loops = cuda_device_loops<A>() && limit == 0;
    const std::string mode =
        std::string(A::name) + (device_loops ? ": do_while on the device" : graphs ? ": do_while on the host" : ": plain");
    MESSAGE(mode);
    std::vector<float> hx{40.0f, 2.0f, 3.0f, 5.0f}, hy{1.0f, 2.0f};
    qd::ndarray<float, 1> x(4), y(2), other(4);
    qd::ndarray<std::int32_t, 0> flag;
    x.from_host(hx);
    y.from_host(hy);
    const auto before = k.per_offload_cache_observations();
    std::uint64_t builds = before.device_graph_builds, replays = before.device_graph_replays;
    auto launch = [&](qd::ndarray<float, 1>& xs, std::vector<float>& hxs, float s, int new_builds) {
      const int passes = graph_replay_on_host(hxs, hy, s);
      k(xs, y, flag, s);
      CHECK(xs.to_host() == hxs);
      CHECK(y.to_host() == hy);
      CHECK(flag.to_host()[0] == 0);
      if (graphs) {
        builds += static_cast<std::uint64_t>(new_builds);
        // Two runs: the top level once; the loop once on the device, or its body once per pass.
        const int runs = device_loops ? 2 : 1 + passes;
        replays += static_cast<std::uint64_t>(runs - new_builds);
      }
      const auto o = k.per_offload_cache_observations();
      CHECK(o.device_graph_builds == builds);
      CHECK(o.device_graph_replays == replays);
    };
    launch(x, hx, 1.0f, 2);  // first launch: both runs recorded
    launch(x, hx, 1.0f, 0);  // the same arguments: replayed
    launch(x, hx, 1.0f, 0);
    std::vector<float> ho{9.0f, 1.0f, 1.0f, 1.0f};
    other.from_host(ho);
    launch(other, ho, 1.0f, 2);  // another array: recorded again
    launch(other, ho, 1.0f, 0);
    launch(other, ho, 3.0f, 2);  // another scalar: recorded again
    qd::reset();
  }

  // A limit the loop exceeds is still a qd::user_error (the host loop counts).
  if (!start<A>({.offline_cache_file_path = cache.str(), .graph_max_iterations = 2})) return;
  {
    qd::ndarray<float, 1> x(4), y(2);
    qd::ndarray<std::int32_t, 0> flag;
    x.from_host(std::vector<float>{40.0f, 2.0f, 3.0f, 5.0f});
    CHECK_THROWS_AS(k(x, y, flag, 1.0f), qd::user_error);
  }
  qd::reset();

  // Bounds checks read the error record after each task: such launches stay plain.
  if (!start<A>({.offline_cache_file_path = cache.str(), .check_out_of_bound = true})) return;
  qd::ndarray<float, 1> bx(4), by(2);
  qd::ndarray<std::int32_t, 0> bflag;
  std::vector<float> cx{40.0f, 2.0f, 3.0f, 5.0f}, cy{1.0f, 2.0f};
  bx.from_host(cx);
  by.from_host(cy);
  auto checked = kernels::graph_replay();
  for (int i = 0; i < 2; ++i) {
    graph_replay_on_host(cx, cy, 1.0f);
    checked(bx, by, bflag, 1.0f);
  }
  CHECK(bx.to_host() == cx);
  CHECK(by.to_host() == cy);
  CHECK(checked.per_offload_cache_observations().device_graph_builds == 0);
  CHECK(checked.per_offload_cache_observations().device_graph_replays == 0);
  qd::reset();
}

// A graph kernel without do_while or forks: its constructs are one device graph on a GPU.
TEST_CASE_TEMPLATE("suite: a graph kernel of plain constructs is one device graph, replayed", A, QD_SUITE_ARCHES) {
  auto k = qd::kernel("graph_plain", qd::graph::on, [](qd::types::ndarray<float, 1> x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] + 1.0f; });
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * 3.0f; });
  });
  qd_test::scratch_directory cache(std::string("suite-graph-plain-") + A::name);
  if (!start<A>({.offline_cache_file_path = cache.str()})) return;
  qd::ndarray<float, 1> x(5);
  std::vector<float> hx{0.0f, 1.0f, 2.0f, 3.0f, 4.0f};
  x.from_host(hx);
  for (int launch = 0; launch < 3; ++launch) {
    for (float& v : hx) v = (v + 1.0f) * 3.0f;
    k(x);
  }
  CHECK(x.to_host() == hx);
  const auto o = k.per_offload_cache_observations();
  CHECK(o.device_graph_builds == (on_gpu<A>() ? 1u : 0u));
  CHECK(o.device_graph_replays == (on_gpu<A>() ? 2u : 0u));
  qd::reset();
}

// Two host threads launching one graph kernel with their own arrays: one holds the
// variant's device graphs at a time, the other launches plainly meanwhile; both get
// plain C++'s results.
TEST_CASE_TEMPLATE("suite: two threads launching one graph kernel each get their own results", A, QD_SUITE_ARCHES) {
  auto k = kernels::graph_replay();
  qd_test::scratch_directory cache(std::string("suite-graph-threads-") + A::name);
  if (!start<A>({.offline_cache_file_path = cache.str()})) return;
  qd::ndarray<float, 1> warm(4), warm_y(2);
  qd::ndarray<std::int32_t, 0> warm_flag;
  k(warm, warm_y, warm_flag, 1.0f);  // compiled before the threads start
  std::vector<float> got[2], want[2];
  auto worker = [&](int t) {
    qd::ndarray<float, 1> x(4), y(2);
    qd::ndarray<std::int32_t, 0> flag;
    std::vector<float> hx{30.0f + static_cast<float>(t), 2.0f, 3.0f, 5.0f}, hy{1.0f, 2.0f};
    x.from_host(hx);
    y.from_host(hy);
    for (int launch = 0; launch < 8; ++launch) {
      graph_replay_on_host(hx, hy, 1.0f + static_cast<float>(t));
      k(x, y, flag, 1.0f + static_cast<float>(t));
    }
    got[t] = x.to_host();
    want[t] = hx;
  };
  std::thread other(worker, 1);
  worker(0);
  other.join();
  CHECK(got[0] == want[0]);
  CHECK(got[1] == want[1]);
  qd::reset();
}

// qd::graph::parallel in a graph kernel on a GPU: the branches are parallel paths of the
// recorded graph (their launches captured on streams of their own), replayed later.
TEST_CASE_TEMPLATE("suite: graph::parallel branches in a do_while run as parallel paths of a device graph", A,
                   QD_SUITE_ARCHES) {
  auto k = kernels::graph_parallel();
  qd_test::scratch_directory cache(std::string("suite-graph-parallel-") + A::name);
  if (!start<A>({.offline_cache_file_path = cache.str()})) return;
  qd::ndarray<float, 1> a(7), b(3);
  qd::ndarray<std::int32_t, 0> flag;
  std::vector<float> ha(7, 0.0f), hb{1.0f, 2.0f, 3.0f};
  a.from_host(ha);
  b.from_host(hb);
  for (int launch = 0; launch < 3; ++launch) {
    CAPTURE(launch);
    do {  // plain C++
      for (float& v : ha) v += 1.0f;
      for (float& v : hb) v *= 2.0f;
    } while (ha[0] < 5.0f);
    k(a, b, flag);
    CHECK(a.to_host() == ha);
    CHECK(b.to_host() == hb);
    const auto o = k.per_offload_cache_observations();
    if (on_gpu<A>()) {
      // Recorded once (its fork on branch streams), replayed by the later launches.
      CHECK(o.device_graph_builds == 1);
      CHECK(o.device_stream_forks == 1);
      CHECK(o.device_graph_replays >= static_cast<std::uint64_t>(launch));
    } else {
      CHECK(o.device_graph_builds == 0);
      CHECK(o.device_stream_forks == 0);
    }
  }
  qd::reset();
}

// Meshes (issue 14, SPEC §11.7): relations built on the host, uploaded, read by
// qd::for_each on every arch; the kernel stays whole (`mesh`) when the split is on.
TEST_CASE_TEMPLATE("suite: a mesh Laplacian and cell means match plain C++", A, QD_SUITE_ARCHES) {
  auto k = kernels::mesh_laplacian();
  qd_test::scratch_directory cache(std::string("suite-mesh-") + A::name);
  const int n = 3;
  const auto tets = qd_test::cube_tets(n);
  const std::int32_t nv = qd_test::cube_vertices(n);
  std::vector<float> u(static_cast<std::size_t>(nv));
  for (std::int32_t i = 0; i < nv; ++i) u[static_cast<std::size_t>(i)] = static_cast<float>((i * 7) % 13) * 0.5f;
  const auto nb = qd_test::edge_neighbours(nv, tets);
  std::vector<float> want_lap(u.size()), want_mean(tets.size());
  for (std::size_t v = 0; v < u.size(); ++v) {
    float acc = 0.0f;
    for (std::int32_t w : nb[v]) acc += u[static_cast<std::size_t>(w)] - u[v];
    want_lap[v] = acc;
  }
  for (std::size_t c = 0; c < tets.size(); ++c) {
    float sum = 0.0f;
    for (std::int32_t w : tets[c]) sum += u[static_cast<std::size_t>(w)];
    want_mean[c] = sum / 4.0f;
  }
  if (!start<A>({.offline_cache_file_path = cache.str(), .per_offload = qd::per_offload_mode::on})) return;
  qd::mesh m = qd::mesh::tetrahedral(nv, tets);
  qd::ndarray<float, 1> du(nv), lap(nv), mean(static_cast<std::int64_t>(tets.size()));
  du.from_host(u);
  k(m, du, lap, mean);
  CHECK(lap.to_host() == want_lap);
  CHECK(mean.to_host() == want_mean);
  CHECK(k.per_offload_cache_observations().fallback == qd::fallback_reason::mesh);
  qd::reset();
}
