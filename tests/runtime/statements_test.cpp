// Every statement and expression kind of the DSL, run on the CPU backend and
// checked against the same computation written in plain C++ on the host.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/runtime_test_support.hpp"
#include "support/host_semantics.hpp"

namespace {

using doctest::Contains;
using qd_test::init_cpu;
using namespace qd_test;  // host_semantics.hpp
template <class T>
using lim = std::numeric_limits<T>;

}  // namespace

TEST_CASE("signed overflow wraps instead of being assumed away by the compiler") {
  init_cpu();
  auto k = qd::kernel("overflow_compare", {"x", "out", "total"},
                      [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> out,
                         qd::types::ndarray<std::int32_t, 0> total) {
                        qd::var<std::int32_t> sum = 0;
                        qd::range_for(x.shape(0), [&](qd::i32 i) {
                          qd::i32 v = x[i];
                          out[i] = qd::cast<std::int32_t>(v + 1 > v) + 2 * qd::cast<std::int32_t>(-v < 0) +
                                   4 * qd::cast<std::int32_t>(v * 2 / 2 == v);
                          sum += v;  // a reduction: wraps like the additions it stands for
                        });
                        total() = sum;
                      });
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


TEST_CASE("mixed operand types promote as documented") {
  init_cpu();
  using I = qd::i32;
  static_assert(std::is_same_v<decltype(std::declval<I>() + std::declval<qd::f32>()), qd::f32>);
  static_assert(std::is_same_v<decltype(std::declval<I>() / 2.0), qd::f32>);  // float literal, integer operand
  static_assert(std::is_same_v<decltype(std::declval<I>() / 2), qd::i32>);
  static_assert(std::is_same_v<decltype(std::declval<qd::i64>() + std::declval<qd::f32>()), qd::f32>);
  static_assert(std::is_same_v<decltype(std::declval<qd::f32>() + std::declval<qd::f64>()), qd::f64>);
  static_assert(std::is_same_v<decltype(std::declval<qd::u32>() + std::declval<I>()), qd::u32>);
  static_assert(std::is_same_v<decltype(std::declval<qd::u8>() + std::declval<qd::u8>()), qd::i32>);
  static_assert(std::is_same_v<decltype(std::declval<qd::u8>() * 2), qd::i32>);
  static_assert(std::is_same_v<decltype(std::declval<I>() + std::declval<qd::i64>()), qd::i64>);
  static_assert(std::is_same_v<decltype(std::declval<I>() < std::declval<qd::f32>()), qd::boolean>);
  static_assert(std::is_same_v<decltype(qd::sqrt(std::declval<I>())), qd::f32>);
  static_assert(std::is_same_v<decltype(qd::sqrt(std::declval<qd::f64>())), qd::f64>);
  static_assert(std::is_same_v<decltype(qd::pow(std::declval<I>(), 2)), qd::f32>);
  static_assert(std::is_same_v<decltype(qd::abs(std::declval<I>())), qd::i32>);
  static_assert(std::is_same_v<decltype(qd::min(std::declval<I>(), std::declval<qd::f32>())), qd::f32>);
  static_assert(std::is_same_v<decltype(qd::fma(std::declval<I>(), 2, 1)), qd::f32>);
  static_assert(std::is_same_v<decltype(qd::fma(2, 3, std::declval<I>())), qd::f32>);
  static_assert(std::is_same_v<decltype(qd::fma(1.0, std::declval<qd::f32>(), std::declval<qd::f64>())), qd::f64>);
  static_assert(std::is_same_v<decltype(qd::select(std::declval<qd::boolean>(), std::declval<I>(), 1.0)), qd::f32>);

  auto k = qd::kernel(
      "promotions", {"i", "u", "b", "l", "f", "d", "out"},
      [](qd::types::ndarray<std::int32_t, 1> i32s, qd::types::ndarray<std::uint32_t, 1> u32s,
         qd::types::ndarray<std::uint8_t, 1> u8s, qd::types::ndarray<std::int64_t, 1> i64s,
         qd::types::ndarray<float, 1> f32s, qd::types::ndarray<double, 1> f64s, qd::types::ndarray<double, 2> out) {
        qd::range_for(i32s.shape(0), [&](qd::i32 r) {
          auto i = i32s[r];
          auto u = u32s[r];
          auto b = u8s[r];
          auto l = i64s[r];
          auto f = f32s[r];
          auto d = f64s[r];
          int c = 0;
          auto put = [&](const auto& v) { out(r, c++) = v; };
          put(i + f), put(i / 2.0), put(l + f), put(f + d), put(u + i), put(b + b), put(b * 2), put(i + l);
          put(i * 3 / 2), put(qd::sqrt(i)), put(qd::pow(i, 2)), put(qd::abs(i)), put(qd::min(i, f)), put(qd::fma(i, 2, 1));
          put(qd::select(i > 0, i, 1.5));
        });
      });
  const std::vector<std::int32_t> is = {7, -3, lim<std::int32_t>::max(), 0};
  const std::vector<std::uint32_t> us = {1, 4000000000u, 5, 0};
  const std::vector<std::uint8_t> bs = {200, 255, 0, 17};
  const std::vector<std::int64_t> ls = {(std::int64_t{1} << 40) + 1, -5, 1, 16777217};
  const std::vector<float> fs = {0.0f, 0.1f, -2.5f, 1e-8f};
  const std::vector<double> ds = {0.1, 1e-300, -0.25, 3.0};
  const std::int64_t n = 4, columns = 15;
  qd::ndarray<std::int32_t, 1> i32s(n);
  qd::ndarray<std::uint32_t, 1> u32s(n);
  qd::ndarray<std::uint8_t, 1> u8s(n);
  qd::ndarray<std::int64_t, 1> i64s(n);
  qd::ndarray<float, 1> f32s(n);
  qd::ndarray<double, 1> f64s(n);
  qd::ndarray<double, 2> out({n, columns});
  i32s.from_host(is), u32s.from_host(us), u8s.from_host(bs), i64s.from_host(ls), f32s.from_host(fs), f64s.from_host(ds);
  k(i32s, u32s, u8s, i64s, f32s, f64s, out);
  auto got = out.to_host();
  for (std::size_t r = 0; r < 4; ++r) {
    std::int32_t i = is[r];
    std::uint32_t u = us[r];
    std::uint8_t b = bs[r];
    std::int64_t l = ls[r];
    float f = fs[r];
    double d = ds[r];
    const std::vector<double> want = {
        static_cast<float>(i) + f,
        static_cast<float>(i) / 2.0f,
        static_cast<float>(l) + f,
        static_cast<double>(f) + d,
        static_cast<double>(u + static_cast<std::uint32_t>(i)),
        static_cast<double>(b + b),
        static_cast<double>(b * 2),
        static_cast<double>(i + l),
        static_cast<double>(host_div(wrap_mul(i, 3), 2)),
        std::sqrt(static_cast<float>(i)),
        std::pow(static_cast<float>(i), 2.0f),
        static_cast<double>(i < 0 ? -i : i),
        std::min(static_cast<float>(i), f),
        std::fma(static_cast<float>(i), 2.0f, 1.0f),
        i > 0 ? static_cast<double>(static_cast<float>(i)) : 1.5};
    for (std::size_t c = 0; c < want.size(); ++c) {
      CAPTURE(r);
      CAPTURE(c);
      CHECK(same_float(got[r * columns + c], want[c]));
    }
  }
}

TEST_CASE("qd::var is a mutable local: per iteration inside a loop, a top-level value outside") {
  init_cpu();
  auto k = qd::kernel(
      "variables", {"x", "out", "fout", "s", "top"},
      [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 2> out,
         qd::types::ndarray<float, 1> fout, qd::i32 s, qd::types::ndarray<std::int32_t, 0> top) {
        qd::var<std::int32_t> t = s;  // a top-level value, updated at the top level
        t *= 3;
        t += 4;
        t %= 1000;
        qd::range_for(x.shape(0), [&](qd::i32 i) {
          qd::var<std::int32_t> v = x[i];  // one per iteration
          v += 3;
          out(i, 0) = v;
          v -= 10;
          out(i, 1) = v;
          v *= -4;
          out(i, 2) = v;
          v /= 3;
          out(i, 3) = v;
          v %= 7;
          out(i, 4) = v;
          v &= 0x3c;
          out(i, 5) = v;
          v |= 0x101;
          out(i, 6) = v;
          v ^= 0x55;
          out(i, 7) = v;
          qd::var<std::int32_t> w = v;  // a copy is a new variable, not an alias
          w += 1000;
          out(i, 8) = v;
          out(i, 9) = w;
          qd::var<qd::i32> z;  // zero-initialized; qd::var<qd::i32> is qd::var<std::int32_t>
          out(i, 10) = z;
          z = w;
          z = z * 2;
          out(i, 11) = z;
          out(i, 12) = t + i;
          qd::i32 cube = x[i];  // a C++ loop runs while tracing; rebinding a handle in its own block is allowed
          for (int power = 1; power < 3; ++power) cube = cube * x[i];
          out(i, 13) = cube;
          qd::var<qd::f32> f = 1.5f;
          static_assert(std::is_base_of_v<qd::var<float>, qd::var<qd::f32>>);
          f *= x[i];
          f /= 4;
          f -= 0.25;
          fout[i] = f;
        });
        top() = t;
      });
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
      CAPTURE(i);
      CAPTURE(c);
      CHECK(got[i * 14 + c] == want[c]);
    }
    float f = 1.5f;
    f *= static_cast<float>(xs[i]);
    f /= 4.0f;
    f -= 0.25f;
    CHECK(fgot[i] == f);
  }
}

TEST_CASE("range_for runs [begin, end) once per index; bounds may be literals, parameters or shapes") {
  init_cpu();
  auto k = qd::kernel("ranges", {"hits", "values", "lo", "hi", "fixed"},
                      [](qd::types::ndarray<std::int32_t, 1> hits, qd::types::ndarray<std::int32_t, 1> values,
                         qd::i32 lo, qd::i64 hi, qd::types::ndarray<std::int32_t, 1> fixed) {
                        qd::range_for(lo, hi, [&](qd::i32 i) {
                          hits[i] += 1;
                          values[i] = i * 2;
                        });
                        qd::range_for(7, [&](qd::i32 i) { fixed[i] += i + 1; });
                      });
  const std::int64_t n = 16;
  struct bounds {
    std::int32_t lo;
    std::int64_t hi;
  };
  for (bounds b : {bounds{3, 10}, bounds{0, n}, bounds{5, 5}, bounds{8, 2}}) {
    CAPTURE(b.lo);
    CAPTURE(b.hi);
    qd::ndarray<std::int32_t, 1> hits(n), values(n), fixed(n);
    values.fill(-1);
    k(hits, values, b.lo, b.hi, fixed);
    auto h = hits.to_host();
    auto v = values.to_host();
    auto f = fixed.to_host();
    for (std::int32_t i = 0; i < n; ++i) {
      bool inside = i >= b.lo && i < b.hi;
      CHECK(h[static_cast<std::size_t>(i)] == (inside ? 1 : 0));
      CHECK(v[static_cast<std::size_t>(i)] == (inside ? i * 2 : -1));
      CHECK(f[static_cast<std::size_t>(i)] == (i < 7 ? i + 1 : 0));
    }
  }
}

TEST_CASE("ndrange visits every index of a 2-D, 3-D and 4-D space exactly once, row-major") {
  init_cpu();
  auto k = qd::kernel("ndranges", {"a2", "a3", "a4"},
                      [](qd::types::ndarray<std::int32_t, 2> a2, qd::types::ndarray<std::int32_t, 3> a3,
                         qd::types::ndarray<std::int32_t, 4> a4) {
                        // += is atomic: an index visited twice would show as a doubled value.
                        qd::range_for(qd::ndrange(a2.shape(0), a2.shape(1)),
                                      [&](qd::i32 i, qd::i32 j) { a2(i, j) += i * 100 + j + 1; });
                        qd::range_for(qd::ndrange(a3.shape(0), a3.shape(1), a3.shape(2)),
                                      [&](qd::i32 i, qd::i32 j, qd::i32 l) { a3(i, j, l) += i * 10000 + j * 100 + l + 1; });
                        qd::range_for(qd::ndrange(2, 3, 4, 5), [&](qd::i32 i, qd::i32 j, qd::i32 l, qd::i32 m) {
                          a4(i, j, l, m) += i * 1000 + j * 100 + l * 10 + m + 1;
                        });
                      });
  qd::ndarray<std::int32_t, 2> a2({7, 9});
  qd::ndarray<std::int32_t, 3> a3({3, 4, 5});
  qd::ndarray<std::int32_t, 4> a4({2, 3, 4, 5});
  k(a2, a3, a4);
  auto h2 = a2.to_host();
  auto h3 = a3.to_host();
  auto h4 = a4.to_host();
  std::size_t p = 0;
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 9; ++j) CHECK(h2[p++] == i * 100 + j + 1);
  p = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 5; ++l) CHECK(h3[p++] == i * 10000 + j * 100 + l + 1);
  p = 0;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int l = 0; l < 4; ++l)
        for (int m = 0; m < 5; ++m) CHECK(h4[p++] == i * 1000 + j * 100 + l * 10 + m + 1);
}

TEST_CASE("empty and negative extents run no iterations; one compiled kernel serves arrays of any shape") {
  init_cpu();
  auto k = qd::kernel("any_shape", {"m", "hits", "h", "w"},
                      [](qd::types::ndarray<float, 2> m, qd::types::ndarray<std::int32_t, 0> hits, qd::i32 h,
                         qd::i32 w) {
                        qd::range_for(qd::ndrange(m.shape(0), m.shape(1)),
                                      [&](qd::i32 i, qd::i32 j) { m(i, j) = qd::cast<float>(i * m.shape(1) + j); });
                        qd::range_for(qd::ndrange(h, w), [&](qd::i32, qd::i32) { hits() += 1; });
                        qd::range_for(h * w, [&](qd::i32) { hits() += 1000; });
                      });
  struct extents {
    std::int64_t rows, cols;
    std::int32_t h, w;
  };
  for (extents e : {extents{3, 5, 2, 3}, extents{0, 4, 0, 5}, extents{1000, 1, -2, 3}, extents{1, 1, 4, -1},
                    extents{7, 0, -1, -1}}) {
    CAPTURE(e.rows);
    CAPTURE(e.h);
    CAPTURE(e.w);
    qd::ndarray<float, 2> m({e.rows, e.cols});
    qd::ndarray<std::int32_t, 0> hits;
    k(m, hits, e.h, e.w);
    std::vector<float> want;
    for (std::int64_t i = 0; i < e.rows * e.cols; ++i) want.push_back(static_cast<float>(i));
    CHECK(m.to_host() == want);
    const std::int32_t cells = e.h > 0 && e.w > 0 ? e.h * e.w : 0;
    CHECK(hits.to_host()[0] == cells + (e.h * e.w > 0 ? e.h * e.w * 1000 : 0));
  }
}

TEST_CASE("a loop bound beyond qd::i32 fails the launch and runs no iteration, instead of wrapping") {
  for (qd::arch arch : {qd::arch::cpu, qd::arch::reference})
    for (auto mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
      CAPTURE(arch);
      CAPTURE(mode);
      qd::init({.arch = arch, .per_offload = mode});
      auto k = qd::kernel("wide_bounds", {"hits", "lo", "hi", "n", "rows"},
                          [](qd::types::ndarray<std::int32_t, 1> hits, qd::i64 lo, qd::i64 hi, qd::u32 n,
                             qd::i64 rows) {
                            qd::range_for(lo, hi, [&](qd::i32) { hits[0] += 1; });
                            qd::range_for(n, [&](qd::i32) { hits[1] += 1; });
                            qd::range_for(qd::ndrange(rows, 2), [&](qd::i32, qd::i32) { hits[2] += 1; });
                          });
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
      launch(1, 2, 1, 1);  // the kernel still runs afterwards
      CHECK(hits.to_host() == std::vector<std::int32_t>{1, 1, 2});

      auto literal = qd::kernel("wide_literal", {"hits"}, [](qd::types::ndarray<std::int32_t, 1> hits) {
        qd::range_for(5000000000LL, [&](qd::i32) { hits[0] += 1; });
      });
      CHECK_THROWS_WITH_AS(literal(hits), Contains("kernel 'wide_literal': a qd::range_for bound of 5000000000 does not fit"),
                           qd::user_error);
      qd::reset();
    }
}

TEST_CASE("loops, branches and while_ nested inside a parallel construct run serially per iteration") {
  init_cpu();
  auto k = qd::kernel(
      "nested_loops", {"a", "v", "y"},
      [](qd::types::ndarray<std::int32_t, 2> a, qd::types::ndarray<std::int32_t, 1> v,
         qd::types::ndarray<std::int32_t, 2> y) {
        qd::range_for(a.shape(0), [&](qd::i32 i) {
          qd::var<std::int32_t> dot = 0;
          qd::range_for(a.shape(1), [&](qd::i32 j) { dot += a(i, j) * v[j]; });
          y(i, 0) = dot;
          qd::var<std::int32_t> pairs = 0;  // sum over j < i of (i - j), with a bound from the outer index
          qd::range_for(i, [&](qd::i32 j) { qd::range_for(j, i, [&](qd::i32) { pairs += 1; }); });
          y(i, 1) = pairs;
          qd::var<std::int32_t> evens = 0;
          qd::range_for(a.shape(1), [&](qd::i32 j) { qd::if_(v[j] % 2 == 0, [&] { evens += a(i, j); }); });
          y(i, 2) = evens;
          qd::var<std::int64_t> c = i + 1;  // Collatz steps of i + 1
          qd::var<std::int32_t> steps = 0;
          qd::while_([&] { return c != 1; }, [&] {
            qd::if_(c % 2 == 0, [&] { c = c / 2; }).else_([&] { c = c * 3 + 1; });
            steps += 1;
          });
          y(i, 3) = steps;
        });
      });
  const std::int64_t n = 300, m = 17;
  std::vector<std::int32_t> as, vs;
  for (std::int64_t i = 0; i < n * m; ++i) as.push_back(static_cast<std::int32_t>((i * 13) % 29 - 14));
  for (std::int64_t j = 0; j < m; ++j) vs.push_back(static_cast<std::int32_t>(j * 3 - 20));
  qd::ndarray<std::int32_t, 2> a({n, m}), y({n, 4});
  qd::ndarray<std::int32_t, 1> v(m);
  a.from_host(as), v.from_host(vs);
  k(a, v, y);
  auto got = y.to_host();
  for (std::int64_t i = 0; i < n; ++i) {
    std::int32_t dot = 0, evens = 0;
    for (std::int64_t j = 0; j < m; ++j) {
      dot += as[static_cast<std::size_t>(i * m + j)] * vs[static_cast<std::size_t>(j)];
      if (vs[static_cast<std::size_t>(j)] % 2 == 0) evens += as[static_cast<std::size_t>(i * m + j)];
    }
    std::int32_t steps = 0;
    for (std::int64_t c = i + 1; c != 1; ++steps) c = c % 2 == 0 ? c / 2 : c * 3 + 1;
    CAPTURE(i);
    CHECK(got[static_cast<std::size_t>(i * 4 + 0)] == dot);
    CHECK(got[static_cast<std::size_t>(i * 4 + 1)] == static_cast<std::int32_t>(i * (i + 1) / 2));
    CHECK(got[static_cast<std::size_t>(i * 4 + 2)] == evens);
    CHECK(got[static_cast<std::size_t>(i * 4 + 3)] == steps);
  }
}

TEST_CASE("a loop inside a top-level qd::if_ is serial: it sees its own earlier iterations") {
  init_cpu();
  auto k = qd::kernel("serial_loops_in_if", {"x", "prefix", "sign", "flag"},
                      [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> prefix,
                         qd::types::ndarray<std::int32_t, 0> sign, qd::i32 flag) {
                        qd::var<std::int32_t> alternating = 1;
                        qd::if_(flag != 0, [&] {
                          prefix[0] = x[0];
                          qd::range_for(1, x.shape(0), [&](qd::i32 i) {
                            prefix[i] = prefix[i - 1] + x[i];
                            alternating *= -1;  // allowed: this loop is not a parallel construct
                          });
                        }).else_([&] { qd::range_for(x.shape(0), [&](qd::i32 i) { prefix[i] = -x[i]; }); });
                        sign() = alternating;
                      });
  const std::int64_t n = 50001;
  std::vector<std::int32_t> xs;
  for (std::int64_t i = 0; i < n; ++i) xs.push_back(static_cast<std::int32_t>(i % 7));
  qd::ndarray<std::int32_t, 1> x(n), prefix(n);
  qd::ndarray<std::int32_t, 0> sign;
  x.from_host(xs);

  SUBCASE("then branch: a prefix sum") {
    k(x, prefix, sign, 1);
    auto got = prefix.to_host();
    std::vector<std::int32_t> want(xs.size());
    std::partial_sum(xs.begin(), xs.end(), want.begin());
    CHECK(got == want);
    CHECK(sign.to_host()[0] == ((n - 1) % 2 == 0 ? 1 : -1));
  }
  SUBCASE("else branch") {
    k(x, prefix, sign, 0);
    auto got = prefix.to_host();
    for (std::size_t i = 0; i < xs.size(); i += 997) CHECK(got[i] == -xs[i]);
    CHECK(sign.to_host()[0] == 1);
  }
}

TEST_CASE("if_ and else_ branch per element inside loops and at the top level") {
  init_cpu();
  auto k = qd::kernel(
      "branches", {"x", "cls", "big", "top", "s"},
      [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> cls,
         qd::types::ndarray<std::int32_t, 1> big, qd::types::ndarray<std::int32_t, 0> top, qd::i32 s) {
        qd::range_for(x.shape(0), [&](qd::i32 i) {
          auto v = x[i];
          qd::if_(v < 0, [&] { cls[i] = -1; }).else_([&] {
            qd::if_(v == 0, [&] { cls[i] = 0; }).else_([&] { cls[i] = 1; });
          });
          qd::if_(v % 2 == 0, [&] { cls[i] += 10; });  // no else_
          qd::var<std::int32_t> count = 0;
          qd::range_for(3, [&](qd::i32 j) { qd::if_(v > j * 10, [&] { count += 1; }); });
          qd::var<bool> negative = v < 0;  // a boolean variable as a condition
          qd::if_(!negative && v != 0, [&] { count += 100; });
          big[i] = count;
        });
        qd::if_(s > 5, [&] { top() = 1; }).else_([&] { top() = 2; });
      });
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

TEST_CASE("while_ repeats while its condition holds, also zero times, at the top level") {
  init_cpu();
  auto k = qd::kernel("euclid", {"g", "a", "b"},
                      [](qd::types::ndarray<std::int32_t, 1> g, qd::i32 a, qd::i32 b) {
                        qd::var<std::int32_t> p = a, q = b, rounds = 0;
                        qd::while_([&] { return q != 0; }, [&] {
                          qd::var<std::int32_t> t = q;
                          q = p % q;
                          p = t;
                          rounds += 1;
                        });
                        g[0] = p;
                        g[1] = rounds;
                      });
  qd::ndarray<std::int32_t, 1> g(2);
  for (auto [a, b] : {std::pair{1071, 462}, std::pair{12, 18}, std::pair{7, 0}, std::pair{0, 5}}) {
    k(g, a, b);
    std::int32_t p = a, q = b, rounds = 0;
    while (q != 0) {
      std::int32_t t = q;
      q = p % q;
      p = t;
      ++rounds;
    }
    CAPTURE(a);
    CAPTURE(b);
    CHECK(g.to_host() == std::vector<std::int32_t>{p, rounds});
    CHECK(p == std::gcd(a, b));
  }
}

TEST_CASE("atomics on array elements and on qd::var return the old value (serial construct, deterministic)") {
  init_cpu();
  auto k = qd::kernel("atomics_serial", {"a", "f", "olds", "folds"},
                      [](qd::types::ndarray<std::int32_t, 1> a, qd::types::ndarray<float, 1> f,
                         qd::types::ndarray<std::int32_t, 1> olds, qd::types::ndarray<float, 1> folds) {
                        olds[0] = qd::atomic_add(a[0], 5);
                        olds[1] = qd::atomic_sub(a[1], 5);
                        olds[2] = qd::atomic_min(a[2], 5);
                        olds[3] = qd::atomic_max(a[3], 5);
                        folds[0] = qd::atomic_add(f[0], 0.5f);
                        folds[1] = qd::atomic_sub(f[1], 0.5f);
                        folds[2] = qd::atomic_min(f[2], 0.5f);
                        folds[3] = qd::atomic_max(f[3], 0.5f);
                        qd::var<qd::i32> v = a[4];  // the traced name works for qd::var and its atomics
                        olds[4] = qd::atomic_add(v, 3);
                        olds[5] = qd::atomic_sub(v, 1);
                        olds[6] = qd::atomic_min(v, 7);
                        olds[7] = qd::atomic_max(v, 9);
                        a[4] = v;
                      });
  std::vector<std::int32_t> ha = {1, 2, 10, 4, 10};
  std::vector<float> hf = {0.25f, 1.0f, -1.5f, 2.0f};
  qd::ndarray<std::int32_t, 1> a(5), olds(8);
  qd::ndarray<float, 1> f(4), folds(4);
  a.from_host(ha);
  f.from_host(hf);
  for (int launch = 0; launch < 2; ++launch) {  // the second launch starts from the first one's results
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

TEST_CASE("atomics inside a parallel construct: contended elements, top-level qd::var reductions, old values") {
  init_cpu();
  auto k = qd::kernel(
      "atomics_parallel", {"x", "acc", "olds", "facc", "tops", "mine"},
      [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> acc,
         qd::types::ndarray<std::int32_t, 2> olds, qd::types::ndarray<float, 1> facc,
         qd::types::ndarray<std::int32_t, 1> tops, qd::types::ndarray<std::int32_t, 1> mine) {
        qd::var<std::int32_t> sum = 0, down = 0, lo = lim<std::int32_t>::max(), hi = lim<std::int32_t>::min();
        qd::range_for(x.shape(0), [&](qd::i32 i) {
          auto v = x[i];
          qd::atomic_add(acc[0], v);
          qd::atomic_sub(acc[1], v);
          olds(i, 0) = qd::atomic_min(acc[2], v);
          olds(i, 1) = qd::atomic_max(acc[3], v);
          qd::atomic_add(facc[0], 1.0f);
          qd::atomic_min(facc[1], qd::cast<float>(v) * 0.5f);
          qd::atomic_max(facc[2], qd::cast<float>(v) * 0.5f);
          sum += v;  // += / -= on a top-level var inside a parallel loop: a reduction
          down -= v;
          qd::atomic_min(lo, v);
          qd::atomic_max(hi, v);
          qd::var<std::int32_t> own = i;  // per iteration: its atomics are plain updates
          auto old = qd::atomic_add(own, 2);
          mine[i] = old * 1000 + own;
        });
        tops[0] = sum;
        tops[1] = down;
        tops[2] = lo;
        tops[3] = hi;
      });
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
  CHECK(acc.to_host() == std::vector<std::int32_t>{static_cast<std::int32_t>(total), static_cast<std::int32_t>(-total), mn, mx});
  CHECK(facc.to_host() == std::vector<float>{static_cast<float>(n), 0.5f * static_cast<float>(mn), 0.5f * static_cast<float>(mx)});
  CHECK(tops.to_host() == std::vector<std::int32_t>{static_cast<std::int32_t>(total), static_cast<std::int32_t>(-total), mn, mx});

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
}

TEST_CASE("atomic_add's old value gives each selected element a unique slot (stream compaction)") {
  init_cpu();
  auto k = qd::kernel("compaction", {"x", "picked", "count", "picked2", "count2"},
                      [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> picked,
                         qd::types::ndarray<std::int32_t, 0> count, qd::types::ndarray<std::int32_t, 1> picked2,
                         qd::types::ndarray<std::int32_t, 0> count2) {
                        qd::var<std::int32_t> c = 0;
                        qd::range_for(x.shape(0), [&](qd::i32 i) {
                          qd::if_(x[i] % 3 == 0, [&] {
                            auto slot = qd::atomic_add(count(), 1);
                            picked[slot] = x[i];
                            auto slot2 = qd::atomic_add(c, 1);  // a top-level var: one shared counter
                            picked2[slot2] = x[i];
                          });
                        });
                        count2() = c;
                      });
  const std::int64_t n = 30000;
  std::vector<std::int32_t> xs;
  for (std::int64_t i = 0; i < n; ++i) xs.push_back(static_cast<std::int32_t>((i * 7919) % 100003 - 50000));
  std::vector<std::int32_t> want;
  std::copy_if(xs.begin(), xs.end(), std::back_inserter(want), [](std::int32_t v) { return v % 3 == 0; });
  std::sort(want.begin(), want.end());
  REQUIRE(want.size() > 1000);

  qd::ndarray<std::int32_t, 1> x(n), picked(n), picked2(n);
  qd::ndarray<std::int32_t, 0> count, count2;
  x.from_host(xs);
  k(x, picked, count, picked2, count2);
  for (auto* arrays : {&picked, &picked2}) {
    auto got = arrays->to_host();
    got.resize(want.size());
    std::sort(got.begin(), got.end());
    CHECK(got == want);
  }
  CHECK(count.to_host()[0] == static_cast<std::int32_t>(want.size()));
  CHECK(count2.to_host()[0] == static_cast<std::int32_t>(want.size()));
}

TEST_CASE_TEMPLATE("x[i] += v inside a parallel loop is atomic for every element type", T, std::int32_t,
                   std::uint32_t, std::int64_t, std::uint8_t, float, double) {
  init_cpu();
  auto k = qd::kernel("histogram", {"keys", "up", "down", "all"},
                      [](qd::types::ndarray<std::int32_t, 1> keys, qd::types::ndarray<T, 1> up,
                         qd::types::ndarray<T, 1> down, qd::types::ndarray<T, 0> all) {
                        qd::range_for(keys.shape(0), [&](qd::i32 i) {
                          up[keys[i] % 16] += 1;
                          down[keys[i] % 16] -= 2;
                          all() += 1;  // every iteration hits one element
                        });
                      });
  // u8 bins must not wrap: 250 hits per bin.
  const std::int64_t n = std::is_same_v<T, std::uint8_t> ? 4000 : 400000;
  std::vector<std::int32_t> keys;
  for (std::int64_t i = 0; i < n; ++i) keys.push_back(static_cast<std::int32_t>((i * 7) % 1601));
  std::vector<T> up(16, T(0)), down(16, T(0));
  T all = 0;
  for (std::int32_t key : keys) {
    up[static_cast<std::size_t>(key % 16)] = static_cast<T>(up[static_cast<std::size_t>(key % 16)] + 1);
    down[static_cast<std::size_t>(key % 16)] = static_cast<T>(down[static_cast<std::size_t>(key % 16)] - 2);
    all = static_cast<T>(all + 1);
  }
  qd::ndarray<std::int32_t, 1> dkeys(n);
  qd::ndarray<T, 1> dup(16), ddown(16);
  qd::ndarray<T, 0> dall;
  dkeys.from_host(keys);
  k(dkeys, dup, ddown, dall);
  CHECK(dup.to_host() == up);
  CHECK(ddown.to_host() == down);
  CHECK(dall.to_host()[0] == all);
}

namespace {

struct random_draws {
  std::vector<float> f;
  std::vector<double> d;
  std::vector<std::uint32_t> u;
  std::vector<std::int32_t> s;
  float serial = 0;
  std::vector<float> grid;
};

// A fresh program with `seed`, then `launches` launches of the same kernel; the last one's draws.
random_draws draw(std::uint64_t seed, int launches) {
  init_cpu({.random_seed = seed});
  auto k = qd::kernel("uniforms", {"f", "d", "u", "s", "serial", "grid"},
                      [](qd::types::ndarray<float, 1> f, qd::types::ndarray<double, 1> d,
                         qd::types::ndarray<std::uint32_t, 1> u, qd::types::ndarray<std::int32_t, 1> s,
                         qd::types::ndarray<float, 0> serial, qd::types::ndarray<float, 2> grid) {
                        qd::range_for(qd::ndrange(grid.shape(0), grid.shape(1)),
                                      [&](qd::i32 i, qd::i32 j) { grid(i, j) = qd::random<float>(); });
                        qd::range_for(f.shape(0), [&](qd::i32 i) {
                          f[i] = qd::random<float>();
                          d[i] = qd::random<double>();
                          u[i] = qd::random<std::uint32_t>();
                          s[i] = qd::random<std::int32_t>();
                        });
                        serial() = qd::random();  // float by default, in a serial construct
                      });
  const std::int64_t n = 100000;
  qd::ndarray<float, 1> f(n);
  qd::ndarray<double, 1> d(n);
  qd::ndarray<std::uint32_t, 1> u(n);
  qd::ndarray<std::int32_t, 1> s(n);
  qd::ndarray<float, 0> serial;
  qd::ndarray<float, 2> grid({300, 200});
  for (int l = 0; l < launches; ++l) k(f, d, u, s, serial, grid);
  return {f.to_host(), d.to_host(), u.to_host(), s.to_host(), serial.to_host()[0], grid.to_host()};
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

TEST_CASE("qd::random draws uniform values, reproducible for a seed and different across seeds and launches") {
  random_draws a = draw(7, 1);
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
    random_draws b = draw(7, 1);
    CHECK(a.f == b.f);
    CHECK(a.d == b.d);
    CHECK(a.u == b.u);
    CHECK(a.s == b.s);
    CHECK(a.serial == b.serial);
    CHECK(a.grid == b.grid);
  }
  SUBCASE("another seed, or a later launch, draws different values") {
    for (const random_draws& other : {draw(8, 1), draw(7, 2)}) {
      std::size_t same = 0;
      for (std::size_t i = 0; i < a.f.size(); ++i) same += a.f[i] == other.f[i];
      CHECK(same < 100);
      CHECK(a.u != other.u);
    }
  }
}

TEST_CASE("qd::print writes its arguments separated by spaces, one line per call, to stdout") {
  init_cpu();
  auto serial = qd::kernel("print_serial", {"x", "n", "big", "u", "b", "flag", "d"},
                           [](qd::types::ndarray<float, 1> x, qd::i32 n, qd::i64 big, qd::u32 u, qd::u8 b,
                              qd::boolean flag, qd::f64 d) {
                             qd::print("x0 =", x[0], "n =", n, "100% done");
                             qd::print(big, u, b, flag, d, 42, 2.5, "tab\there", "quote\"s");
                           });
  auto parallel = qd::kernel("print_parallel", {"n"}, [](qd::i32 n) {
    qd::print("before");
    qd::range_for(n, [&](qd::i32 i) { qd::print("item", i, "squared", i * i); });
    qd::print("after");
  });
  qd::ndarray<float, 1> x(1);
  x.from_host(std::vector<float>{2.5f});
  const std::int64_t big = -9000000000LL;
  const double d = 0.125;
  std::string out = qd_test::capture_stdout([&] { serial(x, 7, big, 4000000000u, 200, true, d); });
  char number[64];
  std::snprintf(number, sizeof number, "%g", static_cast<double>(2.5f));
  std::string first = std::string("x0 = ") + number + " n = 7 100% done";
  std::snprintf(number, sizeof number, "%g", d);
  std::string second = std::to_string(big) + " 4000000000 200 1 " + number + " 42 2.5 tab\there quote\"s";
  CHECK(qd_test::lines_of(out) == std::vector<std::string>{first, second});

  out = qd_test::capture_stdout([&] { parallel(5); });
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

TEST_CASE("volatile_load re-reads memory where a plain element read is a snapshot") {
  init_cpu();
  auto k = qd::kernel("volatile_reads", {"x", "out"},
                      [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 2> out) {
                        qd::range_for(x.shape(0), [&](qd::i32 i) {
                          auto before = x[i];  // the load happens here
                          x[i] = before * 2 + 1;
                          out(i, 0) = before;
                          out(i, 1) = qd::volatile_load(before);  // loads again, after the store
                          out(i, 2) = qd::volatile_load(x[i]);
                        });
                      });
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

TEST_CASE("clamped indexing moves an out-of-range index to the nearest edge, for reads and writes") {
  init_cpu();
  auto k = qd::kernel(
      "clamped", {"x", "m", "edges", "medges", "blur", "hits"},
      [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 2> m, qd::types::ndarray<float, 1> edges,
         qd::types::ndarray<std::int32_t, 1> medges, qd::types::ndarray<float, 1> blur,
         qd::types::ndarray<float, 1> hits) {
        auto n = x.shape(0);
        edges[0] = x.at(-5, qd::boundary::clamp);
        edges[1] = x.at(-1, qd::boundary::clamp);
        edges[2] = x.at(2, qd::boundary::clamp);
        edges[3] = x.at(n - 1, qd::boundary::clamp);
        edges[4] = x.at(n, qd::boundary::clamp);
        edges[5] = x.at(n + 1000, qd::boundary::clamp);
        auto h = m.shape(0), w = m.shape(1);
        medges[0] = m.at(-1, -1, qd::boundary::clamp);
        medges[1] = m.at(h, w, qd::boundary::clamp);
        medges[2] = m.at(-3, 2, qd::boundary::clamp);
        medges[3] = m.at(1, w + 10, qd::boundary::clamp);
        medges[4] = m.at(h + 1, -2, qd::boundary::clamp);
        medges[5] = m.at(1, 2, qd::boundary::clamp);
        qd::range_for(n, [&](qd::i32 i) { blur[i] = x.at(i - 1, qd::boundary::clamp) + x.at(i + 1, qd::boundary::clamp); });
        qd::range_for(n + 4, [&](qd::i32 i) { qd::atomic_add(hits.at(i - 2, qd::boundary::clamp), 1.0f); });
      });
  const std::int64_t n = 10, h = 4, w = 6;
  std::vector<float> xs;
  for (int i = 0; i < n; ++i) xs.push_back(static_cast<float>(i * i) + 0.5f);
  std::vector<std::int32_t> ms;
  for (int i = 0; i < h * w; ++i) ms.push_back(i * 3 + 1);
  qd::ndarray<float, 1> x(n), edges(6), blur(n), hits(n);
  qd::ndarray<std::int32_t, 2> m({h, w});
  qd::ndarray<std::int32_t, 1> medges(6);
  x.from_host(xs);
  m.from_host(ms);
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

}  // namespace

TEST_CASE_TEMPLATE("every element type works in arrays of 0 to 4 dimensions", T, float, double, std::int32_t,
                   std::int64_t, std::uint32_t, std::uint8_t) {
  init_cpu();
  SUBCASE("0-d") { check_copy_scale<T, 0>(); }
  SUBCASE("1-d") { check_copy_scale<T, 1>(); }
  SUBCASE("2-d") { check_copy_scale<T, 2>(); }
  SUBCASE("3-d") { check_copy_scale<T, 3>(); }
  SUBCASE("4-d") { check_copy_scale<T, 4>(); }
}

TEST_CASE("needs_grad arrays carry a gradient buffer of the same shape, read and written through .grad()") {
  init_cpu();
  auto k = qd::kernel(
      "gradients", {"x", "m", "s", "plain"},
      [](qd::types::ndarray<float, 1, qd::needs_grad> x, qd::types::ndarray<double, 2, qd::needs_grad> m,
         qd::types::ndarray<float, 0, qd::needs_grad> s, qd::types::ndarray<float, 1> plain) {
        qd::range_for(x.shape(0), [&](qd::i32 i) {
          x.grad()[i] = x[i] * 2;
          plain[i] = x.grad()[i] + 1;  // reads the gradient just written
        });
        qd::range_for(qd::ndrange(m.grad().shape(0), m.grad().shape(1)),
                      [&](qd::i32 i, qd::i32 j) { m.grad()(i, j) += m(i, j) * 3; });
        s.grad()() = s() * 4 + s.grad()();
      });
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
  x.from_host(xs);
  m.from_host(ms);
  m.grad().from_host(mgrad);
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

TEST_CASE("scalar parameters of every type arrive with their run-time values") {
  init_cpu();
  auto k = qd::kernel("scalars", {"f", "d", "i", "l", "u", "b", "flag", "floats", "ints", "wide"},
                      [](qd::f32 f, qd::f64 d, qd::i32 i, qd::i64 l, qd::u32 u, qd::u8 b, qd::boolean flag,
                         qd::types::ndarray<double, 1> floats, qd::types::ndarray<std::int64_t, 1> ints,
                         qd::types::ndarray<std::uint32_t, 1> wide) {
                        floats[0] = f;
                        floats[1] = d;
                        ints[0] = i;
                        ints[1] = l;
                        ints[2] = b;
                        ints[3] = qd::select(flag, 1, qd::i32(0));
                        wide[0] = u;
                        qd::range_for(4, [&](qd::i32 k) {  // scalars reach parallel constructs too
                          floats[k + 2] = f * k + d;
                          ints[k + 4] = l - k;
                          wide[k + 1] = u + qd::cast<std::uint32_t>(k);
                        });
                      });
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
  // C++ numbers convert to the parameter's type as static_cast does.
  k(2, 3, 4.9, 5, 6, 7, 1, floats, ints, wide);
  CHECK(floats.to_host()[0] == 2.0);
  CHECK(ints.to_host()[0] == 4);
}
