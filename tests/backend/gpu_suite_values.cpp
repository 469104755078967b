// The per-backend suite (gpu_suite_test.cpp), continued: random numbers, print, bounds
// checks; top-level values, split against whole, the seed's fallbacks.
#include <cstdlib>
#include <string_view>

#include "backend/gpu_suite.hpp"
#include "support/huge_array.hpp"

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

QD_SUITE_CASE("suite: qd::random draws uniform values, reproducible for a seed, different across seeds and launches", A,
              QD_SUITE_ARCHES) {
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

QD_SUITE_CASE("suite: qd::print writes one line per call, in program order across constructs", A, QD_SUITE_ARCHES) {
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
  CHECK(qd_test::lines_of(out) ==
        std::vector<std::string>{"x0 = 2.5 n = 7 100% done",
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

QD_SUITE_CASE("suite: an out-of-range index under check_out_of_bound is an error naming the parameter", A,
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

QD_SUITE_CASE("suite: a reduction into a top-level qd::var is read by a later loop", A, QD_SUITE_ARCHES) {
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

QD_SUITE_CASE("suite: an element read at the top level before a loop overwrites its array keeps the original value", A,
              QD_SUITE_ARCHES) {
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

QD_SUITE_CASE("suite: loop bounds may be loaded from an array, including one an earlier construct wrote", A,
              QD_SUITE_ARCHES) {
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

QD_SUITE_CASE("suite: a serial construct between loops sees the first loop's stores and feeds the next loop", A,
              QD_SUITE_ARCHES) {
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

QD_SUITE_CASE("suite: top-level values and variables cross several constructs", A, QD_SUITE_ARCHES) {
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

QD_SUITE_CASE("suite: a top-level qd::var changed in qd::if_ and qd::while_ at the top level bounds a later loop", A,
              QD_SUITE_ARCHES) {
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

QD_SUITE_CASE(
    "suite: forty top-level values and forty reduced variables cross constructs without mixing up their slots", A,
    QD_SUITE_ARCHES) {
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

QD_SUITE_CASE(
    "suite: a random draw and a volatile read at the top level happen once and every construct sees the same value", A,
    QD_SUITE_ARCHES) {
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
QD_SUITE_CASE(
    "suite: qd::atomic_min and atomic_max on a top-level qd::var ignore a NaN and keep the old zero, however it is kept",
    A, QD_SUITE_ARCHES) {
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

QD_SUITE_CASE("suite: a min reduction into a top-level qd::var skips NaN elements wherever they are", A,
              QD_SUITE_ARCHES) {
  if (!start<A>({.per_offload = per_offload_mode_subcase()})) return;
  auto k = kernels::nan_reduction();
  qd::ndarray<float, 1> x(3), out(1);
  x.from_host(std::vector<float>{0.0f, std::numeric_limits<float>::quiet_NaN(), 5.0f});
  k(x, out);
  CHECK(out.to_host()[0] == 0.0f);  // the accumulator used to restart after the NaN and give 5
}

// Found by the differential fuzzer (kernels::assign_then_add says how).
QD_SUITE_CASE(
    "suite: a loop that assigns a top-level qd::var and reduces into it gives the result of some order of its iterations",
    A, QD_SUITE_ARCHES) {
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

QD_SUITE_CASE("suite: split and whole variants give bitwise-identical results", A, QD_SUITE_ARCHES) {
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
QD_SUITE_CASE("suite: a new user's energy kernel splits, reductions read later, the whole kernel's values", A,
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
    CHECK(count.to_host()[0] == n - 2);                  // v[17] was set to 0, and v[16] is 0 by construction
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

QD_SUITE_CASE("suite: the seed's kernels split through the persisted buffer and compute the whole kernel's values", A,
              QD_SUITE_ARCHES) {
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

// An array of 2^31 elements or more on the GPUs: CUDA's variants have 32-bit element offsets, so
// such a launch runs the whole kernel built with 64-bit ones (compiled on that launch); HIP's
// have 64-bit offsets already (backend::device_traits::wide_offsets), so it runs the kernel's own
// variant and compiles nothing. Where the GPU is the emulation, whose device memory is host
// memory, the array is a host mapping 2^31 bytes into a reservation: an offset wrapped to 32 bits
// lands inside it, where it can be seen. A real GPU cannot address a host mapping: skipped there.
QD_SUITE_CASE("suite: an array of 2^31 elements or more is addressed with 64-bit offsets", A, on_cuda, on_amdgpu) {
  const char* library = std::getenv(A::arch == qd::arch::cuda ? "QD_CUDA_PATH" : "QD_HIP_PATH");
  if (library == nullptr || std::string_view(library).find("libqd_emulated_") == std::string_view::npos) {
    MESSAGE("skipped on " << A::name << ": needs the emulated GPU, whose device memory is host memory");
    return;
  }
  qd_test::scratch_directory cache(std::string("suite-wide-") + A::name);
  if (!start<A>({.offline_cache_file_path = cache.str(), .per_offload = qd::per_offload_mode::on})) return;
  auto poke = qd_test::make_poke_kernel();
  qd_test::huge_array_mapping huge;
  qd::ndarray<std::uint8_t, 2> small({4, 16});
  small.fill(0);
  using at = qd_test::huge_array_mapping;
  poke(small, 2, 3, 10);
  const auto compiles = qd::offline_cache_statistics().compiles;
  poke(huge.array(), at::i, at::j, 20);
  const auto huge_compiles = qd::offline_cache_statistics().compiles - compiles;
  poke(small, 1, 0, 30);
  CHECK(huge_compiles == (A::arch == qd::arch::cuda ? 1u : 0u));
  qd_test::check_pokes(huge, small.to_host());
  CHECK(poke.per_offload_cache_observations().frontend_constructs_total == 2);  // the small launches' split
  qd::reset();
}
