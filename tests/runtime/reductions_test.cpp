// Deterministic, accurate reductions: a top-level reduction gives the same bits on 1 and
// 2 CPU threads and on the reference backend, an f32 sum of 10^7 values within 1e-6 of
// the exact sum, and on GPUs with deterministic_reductions the same bits run to run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "runtime/runtime_test_support.hpp"
#include "support/arches.hpp"

namespace {

using doctest::Contains;

// sum, min and max of x (f32), a sum of x in f64, an i32 sum and a sum over a nested loop.
struct results {
  float sum = 0, min = 0, max = 0;
  double wide = 0;
  std::int32_t count = 0;
  float nested = 0;
  bool operator==(const results& o) const {
    auto same = [](const auto& a, const auto& b) { return std::memcmp(&a, &b, sizeof(a)) == 0; };
    return same(sum, o.sum) && same(min, o.min) && same(max, o.max) && same(wide, o.wide) && count == o.count &&
           same(nested, o.nested);
  }
};

auto reductions_kernel() {
  return qd::kernel("reductions", {"x", "out", "wide", "count"},
                    [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out,
                       qd::types::ndarray<double, 1> wide, qd::types::ndarray<std::int32_t, 1> count) {
                      qd::var<float> sum = 0.0f, lo = std::numeric_limits<float>::infinity(),
                                     hi = -std::numeric_limits<float>::infinity(), nested = 0.0f;
                      qd::var<double> sum64 = 0.0;
                      qd::var<std::int32_t> positive = 0;
                      qd::range_for(x.shape(0), [&](qd::i32 i) {
                        const qd::f32 v = x[i];
                        sum += v;
                        qd::atomic_min(lo, v);
                        qd::atomic_max(hi, v);
                        sum64 += v * 0.5;
                        positive += qd::select(v > 0.5f, 1, 0);
                      });
                      // A body with a loop of its own: chunks of one iteration.
                      qd::range_for(x.shape(0) / 1000, [&](qd::i32 b) {
                        qd::var<float> part = 0.0f;
                        qd::range_for(b * 1000, b * 1000 + 1000, [&](qd::i32 i) { part += x[i] * x[i]; });
                        nested += part;
                      });
                      qd::range_for(1, [&](qd::i32) {
                        out[0] = sum;
                        out[1] = lo;
                        out[2] = hi;
                        out[3] = nested;
                        wide[0] = sum64;
                        count[0] = positive;
                      });
                    });
}

results run_reductions(const std::vector<float>& x) {
  auto k = reductions_kernel();
  qd::ndarray<float, 1> a(static_cast<std::int64_t>(x.size())), out(4);
  qd::ndarray<double, 1> wide(1);
  qd::ndarray<std::int32_t, 1> count(1);
  a.from_host(x);
  k(a, out, wide, count);
  const auto o = out.to_host();
  return {o[0], o[1], o[2], wide.to_host()[0], count.to_host()[0], o[3]};
}

std::vector<float> values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = u(g);
  return x;
}

}  // namespace

TEST_CASE("an f32 sum of 10^7 values: within 1e-6 of the exact sum, the same bits on 1 and 2 CPU threads") {
  const std::vector<float> x = values(10'000'000, 1);
  long double exact = 0;
  for (float v : x) exact += v;
  qd_test::init_cpu({.cpu_max_num_threads = 1});
  const results one = run_reductions(x);
  qd_test::init_cpu({.cpu_max_num_threads = 2});
  const results two = run_reductions(x);
  CHECK(std::abs(static_cast<long double>(one.sum) - exact) <= 1e-6L * exact);
  MESSAGE("relative error of the f32 sum: "
          << static_cast<double>(std::abs(static_cast<long double>(one.sum) - exact) / exact));
  CHECK(one == two);
}

TEST_CASE("reductions give the same bits on 1 and 2 CPU threads and on the reference backend") {
  for (std::size_t n : {1000u, 2049u, 300001u}) {
    CAPTURE(n);
    const std::vector<float> x = values(n, n);
    qd_test::init_cpu({.cpu_max_num_threads = 1});
    const results one = run_reductions(x);
    qd_test::init_cpu({.cpu_max_num_threads = 2});
    const results two = run_reductions(x);
    qd::init({.arch = qd::arch::reference});
    const results reference = run_reductions(x);
    CHECK(one == two);
    CHECK(one == reference);
    long double exact = 0;
    for (float v : x) exact += v;
    CHECK(std::abs(static_cast<long double>(one.sum) - exact) <= 1e-6L * exact);
  }
}

// A sum as docs/dsl.md describes it, computed here in f64 (the accumulator of an f32 and
// an f64 sum): chunks of max(ceil(n / 128), 2048) iterations; in each, four lanes
// (iteration j of the chunk into lane j % 4 while j < its length rounded down to 4, the
// rest into lane 0) combined as (l0 + l1) + (l2 + l3); the chunks' sums in a pairwise tree
// (pairs at distance 1, 2, 4, ...).
double documented_sum(const std::vector<double>& terms) {
  const auto n = static_cast<std::int64_t>(terms.size());
  const std::int64_t chunk = std::max<std::int64_t>((n + 127) / 128, 2048);
  std::vector<double> partials;
  for (std::int64_t lo = 0; lo < n; lo += chunk) {
    const std::int64_t length = std::min(chunk, n - lo), laned = length / 4 * 4;
    double lane[4] = {0, 0, 0, 0};
    for (std::int64_t j = 0; j < length; ++j) lane[j < laned ? j % 4 : 0] += terms[static_cast<std::size_t>(lo + j)];
    partials.push_back((lane[0] + lane[1]) + (lane[2] + lane[3]));
  }
  for (std::size_t w = 1; w < partials.size(); w *= 2)
    for (std::size_t i = 0; i + w < partials.size(); i += 2 * w) partials[i] += partials[i + w];
  return partials[0];
}

TEST_CASE("a sum has the bits of the documented order: chunks, four lanes, a pairwise tree") {
  for (std::size_t n : {3u, 1000u, 2049u, 8195u, 300001u, 1000003u}) {
    CAPTURE(n);
    // Signs and exponents over 2^-40 .. 2^40: f64 sums round, so the order shows in the bits.
    std::vector<float> x = values(n, n + 11);
    std::mt19937_64 g(n);
    for (float& v : x) v = std::ldexp(g() % 2 ? v : -v, static_cast<int>(g() % 81) - 40);
    std::vector<double> terms, halves;
    for (float v : x) terms.push_back(v), halves.push_back(static_cast<double>(v * 0.5f));
    const float want = 0.0f + static_cast<float>(documented_sum(terms));  // the f32 variable
    const double want_wide = 0.0 + documented_sum(halves);                // sum64 += x[i] * 0.5
    auto check = [&](const results& got) {
      CHECK(std::memcmp(&got.sum, &want, sizeof(float)) == 0);
      CHECK(std::memcmp(&got.wide, &want_wide, sizeof(double)) == 0);
    };
    for (int threads : {1, 2}) {
      CAPTURE(threads);
      qd_test::init_cpu({.cpu_max_num_threads = threads});
      check(run_reductions(x));
    }
    qd::init({.arch = qd::arch::reference});
    check(run_reductions(x));
  }
}

using qd_algorithm_test::on_amdgpu;
using qd_algorithm_test::on_cuda;
using qd_algorithm_test::start;

TEST_CASE_TEMPLATE("deterministic_reductions: the same bits run to run on a GPU, whole and split", A, on_cuda,
                   on_amdgpu) {
  const std::vector<float> x = values(30011, 7);  // 15 chunks of 2048 (the GPUs are emulated on the CPU in the tests)
  long double exact = 0;
  for (float v : x) exact += v;
  for (auto mode : {qd::per_offload_mode::on, qd::per_offload_mode::off}) {
    if (!start<A>({.per_offload = mode, .deterministic_reductions = true})) return;
    const results first = run_reductions(x);
    for (int run = 0; run < 2; ++run) CHECK(run_reductions(x) == first);
    CHECK(std::abs(static_cast<long double>(first.sum) - exact) <= 1e-6L * exact);
    CHECK(first.min == *std::min_element(x.begin(), x.end()));
  }
  // Off (the default): each GPU thread adds its partial with an f32 atomic, one rounding
  // of the running total (~1e5 here) per thread, in any order: right within ~sqrt(threads) ulps.
  if (!start<A>({})) return;
  const results any = run_reductions(x);
  CHECK(std::abs(static_cast<long double>(any.sum) - exact) <= 1e-4L * exact);
}

TEST_CASE_TEMPLATE("deterministic_reductions: too many reductions in one loop is a qd::user_error", A, on_cuda,
                   on_amdgpu) {
  if (!start<A>({.deterministic_reductions = true})) return;
  auto k = qd::kernel("many_reductions", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out) {
    std::vector<qd::var<float>> sums;
    sums.reserve(17);
    for (int r = 0; r < 17; ++r) sums.emplace_back(0.0f);
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      for (int r = 0; r < 17; ++r) sums[static_cast<std::size_t>(r)] += x[i] * static_cast<float>(r);
    });
    qd::range_for(1, [&](qd::i32) {
      for (int r = 0; r < 17; ++r) out[r] = sums[static_cast<std::size_t>(r)];
    });
  });
  qd::ndarray<float, 1> x(100), out(17);
  CHECK_THROWS_WITH_AS(k(x, out), Contains("at most 16 per loop"), qd::user_error);
}

TEST_CASE("QD_DETERMINISTIC_REDUCTIONS sets the field; the field wins") {
  qd_test::scoped_env env("QD_DETERMINISTIC_REDUCTIONS", "1");
  qd_test::init_cpu();
  CHECK(qd::current_settings().deterministic_reductions);
  qd_test::init_cpu({.deterministic_reductions = false});
  CHECK(!qd::current_settings().deterministic_reductions);
}
