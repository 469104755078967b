// Kernels whose constructs communicate through top-level values: reductions,
// snapshots taken before a loop overwrites their array, loop bounds loaded from
// memory, serial constructs between loops. Every kernel runs under each
// per_offload mode: the results must not depend on how the kernel is split.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <deque>
#include <numeric>
#include <vector>

#include "runtime/runtime_test_support.hpp"

namespace {

// Picks the per_offload mode of this pass through the test case (one SUBCASE each).
qd::per_offload_mode per_offload_mode_subcase() {
  qd::per_offload_mode mode = qd::per_offload_mode::automatic;
  SUBCASE("per_offload = automatic") { mode = qd::per_offload_mode::automatic; }
  SUBCASE("per_offload = on") { mode = qd::per_offload_mode::on; }
  SUBCASE("per_offload = off") { mode = qd::per_offload_mode::off; }
  return mode;
}

std::vector<std::int32_t> iota_values(std::int64_t n, std::int32_t scale, std::int32_t offset) {
  std::vector<std::int32_t> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(static_cast<std::int32_t>(i) * scale + offset);
  return v;
}

}  // namespace

TEST_CASE("a reduction into a top-level qd::var is read by a later loop") {
  qd_test::init_cpu({.per_offload = per_offload_mode_subcase()});
  auto k = qd::kernel("running_total", {"x", "out", "fx", "fout"},
                      [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> out,
                         qd::types::ndarray<float, 1> fx, qd::types::ndarray<float, 1> fout) {
                        qd::var<std::int32_t> total = 0;
                        qd::range_for(x.shape(0), [&](qd::i32 i) { total += x[i]; });
                        qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = total + i; });
                        qd::var<float> ftotal = 0.0f;  // the SPEC's example, in floating point
                        qd::range_for(fx.shape(0), [&](qd::i32 i) { ftotal += fx[i]; });
                        qd::range_for(fout.shape(0), [&](qd::i32 i) { fout[i] = ftotal; });
                      });
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

TEST_CASE("an element read at the top level before a loop overwrites its array keeps the original value") {
  qd_test::init_cpu({.per_offload = per_offload_mode_subcase()});
  auto k = qd::kernel("stale_snapshot", {"a", "m", "out"},
                      [](qd::types::ndarray<std::int32_t, 1> a, qd::types::ndarray<std::int32_t, 2> m,
                         qd::types::ndarray<std::int32_t, 2> out) {
                        qd::i32 first = a[0];           // a snapshot, as a traced value
                        qd::var<std::int32_t> last = a[a.shape(0) - 1];  // and as a variable
                        qd::i32 corner = m(1, 2);
                        qd::range_for(a.shape(0), [&](qd::i32 i) { a[i] = a[i] * 10 + first; });
                        qd::range_for(qd::ndrange(m.shape(0), m.shape(1)), [&](qd::i32 i, qd::i32 j) { m(i, j) = -1; });
                        qd::i32 fresh = a[0];  // read after the loop: the new value
                        qd::range_for(out.shape(0), [&](qd::i32 i) {
                          out(i, 0) = first + i;
                          out(i, 1) = last;
                          out(i, 2) = corner;
                          out(i, 3) = fresh;
                        });
                      });
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

TEST_CASE("loop bounds may be loaded from an array, including one an earlier construct wrote") {
  qd_test::init_cpu({.per_offload = per_offload_mode_subcase()});
  auto k = qd::kernel("bounds_from_arrays", {"bounds", "x", "out", "count"},
                      [](qd::types::ndarray<std::int32_t, 1> bounds, qd::types::ndarray<std::int32_t, 1> x,
                         qd::types::ndarray<std::int32_t, 1> out, qd::types::ndarray<std::int32_t, 0> count) {
                        qd::range_for(bounds[0], [&](qd::i32 i) { out[i] = x[i] * 2; });
                        qd::range_for(bounds[1], bounds[2], [&](qd::i32 i) { out[i] = -x[i]; });
                        count() = x.shape(0) / 3;  // a serial construct writes the next bound
                        qd::range_for(count(), [&](qd::i32 i) { out[i] += 1000; });
                      });
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

TEST_CASE("a serial construct between loops sees the first loop's stores and feeds the next loop") {
  qd_test::init_cpu({.per_offload = per_offload_mode_subcase()});
  auto k = qd::kernel("serial_between_loops", {"x", "scratch", "out"},
                      [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> scratch,
                         qd::types::ndarray<std::int32_t, 1> out) {
                        qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] + 1; });
                        scratch[0] = x[0] + x[x.shape(0) - 1];  // top-level stores: a serial construct
                        scratch[1] = scratch[0] * 2;             // reads the store just made
                        qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = scratch[0] * i + scratch[1]; });
                      });
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

TEST_CASE("top-level values and variables cross several constructs") {
  qd_test::init_cpu({.per_offload = per_offload_mode_subcase()});
  auto k = qd::kernel("relay", {"x", "out", "sign"},
                      [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 2> out,
                         qd::types::ndarray<std::int32_t, 0> sign) {
                        auto n = out.shape(0);
                        qd::i32 a = x[0] * 2 + n;  // a load and arithmetic at the top level
                        qd::var<std::int32_t> acc = a;
                        qd::range_for(n, [&](qd::i32 i) { out(i, 0) = a + i; });
                        qd::range_for(x.shape(0), [&](qd::i32 i) { acc += x[i]; });
                        qd::i32 b = acc * 3;  // computed from the reduced variable
                        qd::range_for(n, [&](qd::i32 i) { out(i, 1) = a + b; });
                        qd::if_(b > 0, [&] { sign() = 1; }).else_([&] { sign() = -1; });
                        acc -= a;  // a top-level update between constructs
                        qd::range_for(n, [&](qd::i32 i) {
                          out(i, 2) = acc;
                          out(i, 3) = a - b + sign();
                        });
                      });
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

TEST_CASE("a top-level qd::var changed in qd::if_ and qd::while_ at the top level bounds a later loop") {
  qd_test::init_cpu({.per_offload = per_offload_mode_subcase()});
  auto k = qd::kernel("bound_from_var", {"x", "out", "limit"},
                      [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> out,
                         qd::i32 limit) {
                        qd::var<std::int32_t> n = x.shape(0);
                        qd::if_(limit < n, [&] { n = limit; });
                        qd::range_for(n, [&](qd::i32 i) { out[i] = x[i] + 1; });
                        qd::var<std::int32_t> root = x.shape(0);  // integer square root, serially
                        qd::while_([&] { return root * root > x.shape(0); }, [&] { root -= 1; });
                        qd::range_for(root, [&](qd::i32 i) { out[i] += 100; });
                      });
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

TEST_CASE("forty top-level values and forty reduced variables cross constructs without mixing up their slots") {
  qd_test::init_cpu({.per_offload = per_offload_mode_subcase()});
  constexpr int count = 40;
  auto k = qd::kernel("many_values", {"x", "out"},
                      [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 2> out) {
                        std::vector<qd::i32> values;  // trace-time C++ containers of traced handles
                        std::deque<qd::var<std::int32_t>> sums;
                        for (int c = 0; c < count; ++c) {
                          values.push_back(x[c] * (c + 1) + c);
                          sums.emplace_back(c);
                        }
                        qd::range_for(x.shape(0), [&](qd::i32 i) {
                          for (int c = 0; c < count; ++c) sums[static_cast<std::size_t>(c)] += x[i] * c;
                        });
                        qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = -1; });  // the snapshots must survive
                        qd::range_for(out.shape(0), [&](qd::i32 i) {
                          for (int c = 0; c < count; ++c) {
                            out(i, c) = values[static_cast<std::size_t>(c)] + i;
                            out(i, c + count) = sums[static_cast<std::size_t>(c)];
                          }
                        });
                      });
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

TEST_CASE("a random draw and a volatile read at the top level happen once and every construct sees the same value") {
  qd_test::init_cpu({.per_offload = per_offload_mode_subcase(), .random_seed = 11});
  auto k = qd::kernel("shared_draw", {"flag", "out"},
                      [](qd::types::ndarray<std::int32_t, 1> flag, qd::types::ndarray<float, 2> out) {
                        qd::f32 r = qd::random<float>();
                        qd::i32 seen = qd::volatile_load(flag[0]);
                        qd::range_for(flag.shape(0), [&](qd::i32 i) { flag[i] = flag[i] + 1; });
                        qd::range_for(out.shape(0), [&](qd::i32 i) { out(i, 0) = r; });
                        qd::range_for(out.shape(0), [&](qd::i32 i) {
                          out(i, 1) = r;
                          out(i, 2) = qd::cast<float>(seen);
                        });
                      });
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

// Found by the differential fuzzer (tests/fuzz): a top-level variable kept in a global
// temporary (whole kernel) was updated with the atomics' rule (v < old ? v : old), the
// same variable recomputed task-locally (split) with old < v ? old : v, so a NaN or a
// zero of the other sign gave different results in the two variants.
TEST_CASE("qd::atomic_min and atomic_max on a top-level qd::var ignore a NaN and keep the old zero, however it is kept") {
  qd_test::init_cpu({.per_offload = per_offload_mode_subcase()});
  auto k = qd::kernel("nan_bounds", {"x", "out"}, [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 2> out) {
    qd::var<float> lo = 1.0f, hi = -1.0f, zero = 0.0f;
    qd::atomic_min(lo, x[0]);
    qd::atomic_max(hi, x[0]);
    qd::atomic_min(zero, x[1]);
    qd::range_for(out.shape(0), [&](qd::i32 i) {
      out(i, 0) = lo;
      out(i, 1) = hi;
      out(i, 2) = zero;
    });
  });
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

TEST_CASE("a min reduction into a top-level qd::var skips NaN elements wherever they are") {
  qd_test::init_cpu({.per_offload = per_offload_mode_subcase()});
  auto k = qd::kernel("nan_reduction", {"x", "out"}, [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out) {
    qd::var<float> lo = 100.0f;
    qd::range_for(x.shape(0), [&](qd::i32 i) { qd::atomic_min(lo, x[i]); });
    out[0] = lo;
  });
  qd::ndarray<float, 1> x(3), out(1);
  x.from_host(std::vector<float>{0.0f, std::numeric_limits<float>::quiet_NaN(), 5.0f});
  k(x, out);
  CHECK(out.to_host()[0] == 0.0f);  // the accumulator used to restart after the NaN and give 5
}

// Found by the differential fuzzer: a loop that both assigned a top-level qd::var (a
// race, allowed) and reduced into it accumulated the reduction per chunk and flushed
// it after the chunk's last assignment, a result no order of the iterations gives.
TEST_CASE("a loop that assigns a top-level qd::var and reduces into it gives the result of some order of its iterations") {
  qd_test::init_cpu({.per_offload = per_offload_mode_subcase()});
  auto k = qd::kernel("assign_then_add", {"x", "out"},
                      [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> out) {
                        qd::var<std::int32_t> v = 0;
                        qd::range_for(x.shape(0), [&](qd::i32 i) {
                          v += x[i];
                          v = 0;  // every iteration resets it after its own update
                        });
                        out[0] = v;
                      });
  qd::ndarray<std::int32_t, 1> x(6), out(1);
  x.fill(5);
  k(x, out);
  // Each iteration's reset follows its own addition, so at most five additions can follow
  // the last reset; the per-chunk accumulator used to add all six (30) after it.
  const std::int32_t v = out.to_host()[0];
  CHECK(v % 5 == 0);
  CHECK(v <= 25);
}
