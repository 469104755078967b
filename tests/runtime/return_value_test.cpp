// Kernel return values (SPEC §11.3): scalars, qd::var and tuples, whole and split, on
// the CPU and the reference backend, compared with plain C++.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include "runtime/runtime_test_support.hpp"

namespace {

const qd::arch arches[] = {qd::arch::cpu, qd::arch::reference};

auto sum_kernel() {
  return qd::kernel("sum", [](qd::types::ndarray<float, 1> x) -> qd::f32 {
    qd::var<float> s = 0.0f;
    qd::range_for(x.shape(0), [&](qd::i32 i) { s += x[i]; });
    return s;
  });
}

}  // namespace

TEST_CASE("a kernel returns a reduction as a host float, whole and split, and the split carries it") {
  for (qd::arch arch : arches)
    for (auto mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
      CAPTURE(arch);
      CAPTURE(mode);
      qd::init({.arch = arch, .per_offload = mode});
      auto sum = sum_kernel();
      const std::int64_t n = 1000;
      std::vector<float> h(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) h[static_cast<std::size_t>(i)] = static_cast<float>(i % 17) * 0.25f;
      qd::ndarray<float, 1> x(n);
      x.from_host(h);
      float total = sum(x);
      static_assert(std::is_same_v<decltype(sum(x)), float>);
      double want = 0.0;
      for (float v : h) want += v;
      CHECK(total == doctest::Approx(want).epsilon(1e-5));
      // Every element is a multiple of 0.25 below 4: the sum is exact in any order.
      CHECK(total == static_cast<float>(want));
      auto o = sum.per_offload_cache_observations();
      if (mode == qd::per_offload_mode::on) {
        CHECK(o.fallback == qd::fallback_reason::none);
        // The reduction loop, and the store of the result: the value crosses them.
        CHECK(o.frontend_constructs_total >= 2);
      }
      x.fill(1.0f);
      CHECK(sum(x) == 1000.0f);  // a second call reads its own result
      qd::reset();
    }
}

TEST_CASE("a kernel returns a tuple of mixed scalars, a boolean and an element") {
  for (qd::arch arch : arches) {
    CAPTURE(arch);
    qd::init({.arch = arch});
    auto stats = qd::kernel("stats", {"x", "k"}, [](qd::types::ndarray<std::int32_t, 1> x, qd::i32 k) {
      qd::var<std::int32_t> lo = 1 << 30, hi = -(1 << 30), count = 0;
      qd::var<double> mean = 0.0;
      qd::range_for(x.shape(0), [&](qd::i32 i) {
        qd::atomic_min(lo, x[i]);
        qd::atomic_max(hi, x[i]);
        qd::if_(x[i] > k, [&] { count += 1; });
        mean += qd::cast<double>(x[i]);
      });
      qd::f64 m = mean / qd::cast<double>(x.shape(0));
      return std::tuple{qd::i32(lo), qd::i32(hi), m, count > 3, x[2]};
    });
    std::vector<std::int32_t> h = {5, -3, 9, 12, 0, 7, 7, -8, 4};
    qd::ndarray<std::int32_t, 1> x(static_cast<std::int64_t>(h.size()));
    x.from_host(h);
    auto [lo, hi, mean, many, third] = stats(x, 4);
    static_assert(
        std::is_same_v<decltype(stats(x, 4)), std::tuple<std::int32_t, std::int32_t, double, bool, std::int32_t>>);
    CHECK(lo == -8);
    CHECK(hi == 12);
    double sum = 0.0;
    int above = 0;
    for (std::int32_t v : h) sum += v, above += v > 4;
    CHECK(mean == doctest::Approx(sum / static_cast<double>(h.size())));
    CHECK(many == (above > 3));
    CHECK(third == 9);
    qd::reset();
  }
}

TEST_CASE("a returned qd::var, named parameters, and a value computed in a serial loop") {
  qd::init({.arch = qd::arch::cpu, .per_offload = qd::per_offload_mode::on});
  auto first_negative = qd::kernel("first_negative", {"x"}, [](qd::types::ndarray<float, 1> x) {
    qd::var<std::int32_t> at = -1;
    qd::range_for(x.shape(0), qd::loop_config{.serialize = true}, [&](qd::i32 i) {
      qd::if_(x[i] < 0.0f, [&] {
        at = i;
        qd::break_();
      });
    });
    return at;  // a qd::var: the call returns its final value
  });
  qd::ndarray<float, 1> x(6);
  x.from_host(std::vector<float>{1.0f, 2.0f, 0.0f, -1.0f, 3.0f, -2.0f});
  CHECK(first_negative(x) == 3);
  x.fill(1.0f);
  CHECK(first_negative(x) == -1);
  // The hidden result parameter is named after the kernel's own.
  CHECK(first_negative.ir().find("return: ndarray<i32, 0>") != std::string::npos);
  qd::reset();
}

TEST_CASE("a kernel returns vectors and matrices as std::arrays, alone and in a tuple") {
  const std::int64_t n = 37;
  std::vector<float> h(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) h[static_cast<std::size_t>(i)] = static_cast<float>(i % 5) - 1.5f;
  // Plain C++: the sums of x, x^2 and 1, and the 2x2 matrix [[sum x, 2], [n, sum x^2]].
  float sx = 0.0f, sxx = 0.0f;
  for (float v : h) {
    sx += v;
    sxx += v * v;
  }
  for (qd::arch arch : arches)
    for (auto mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
      CAPTURE(arch);
      CAPTURE(mode);
      qd::init({.arch = arch, .per_offload = mode});
      auto moments = qd::kernel("moments", [](qd::types::ndarray<float, 1> x) -> qd::vec3f {
        qd::var<qd::vec3f> acc = qd::vec3f(0.0f);
        qd::range_for(x.shape(0), [&](qd::i32 i) { acc += qd::vec3f(x[i], x[i] * x[i], 1.0f); });
        return acc;
      });
      auto both = qd::kernel("moments_matrix", [](qd::types::ndarray<float, 1> x) {
        qd::var<float> s = 0.0f, ss = 0.0f;
        qd::range_for(x.shape(0), [&](qd::i32 i) {
          s += x[i];
          ss += x[i] * x[i];
        });
        qd::mat2f m(qd::f32(s), 2.0f, qd::cast<float>(x.shape(0)), qd::f32(ss));
        return std::tuple{m, qd::vec2i(x.shape(0), 7), qd::f32(s)};
      });
      qd::ndarray<float, 1> x(n);
      x.from_host(h);
      std::array<float, 3> got = moments(x);
      CHECK(got[0] == doctest::Approx(sx));
      CHECK(got[1] == doctest::Approx(sxx));
      CHECK(got[2] == static_cast<float>(n));
      auto [m, counts, total] = both(x);
      static_assert(std::is_same_v<decltype(m), std::array<std::array<float, 2>, 2>>);
      static_assert(std::is_same_v<decltype(counts), std::array<std::int32_t, 2>>);
      CHECK(m[0][0] == doctest::Approx(sx));
      CHECK(m[0][1] == 2.0f);
      CHECK(m[1][0] == static_cast<float>(n));
      CHECK(m[1][1] == doctest::Approx(sxx));
      CHECK(counts == std::array<std::int32_t, 2>{static_cast<std::int32_t>(n), 7});
      CHECK(total == doctest::Approx(sx));
      qd::reset();
    }
}

TEST_CASE("threads calling one returning kernel each read their own result, call after call") {
  // Each thread reuses its own hidden result arrays (runtime/kernel.hpp): two threads
  // summing different arrays at once must never see each other's sums.
  qd::init({.arch = qd::arch::cpu});
  auto sum = sum_kernel();
  std::vector<qd::ndarray<float, 1>> xs;
  for (int t = 0; t < 2; ++t) {
    xs.emplace_back(std::int64_t{64});
    xs.back().fill(static_cast<float>(t + 1));
  }
  std::array<int, 2> wrong{};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 300; ++k)
        if (sum(xs[static_cast<std::size_t>(t)]) != 64.0f * static_cast<float>(t + 1))
          ++wrong[static_cast<std::size_t>(t)];
    });
  for (auto& th : threads) th.join();
  CHECK(wrong[0] == 0);
  CHECK(wrong[1] == 0);
  qd::reset();
}
