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
