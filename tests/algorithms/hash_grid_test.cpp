// qd::hash_grid and qd::for_each_neighbor against brute force: every position within the
// radius found exactly once, none beyond it, for uniform, clustered, far-away and
// degenerate inputs; on the CPU (1 and 2 threads), the reference backend and the GPUs.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <quadrants/algorithms.hpp>

#include "support/arches.hpp"

namespace {

using doctest::Contains;

using namespace qd_algorithm_test;

using point = std::array<float, 3>;

// For each query i: how many times each position was reported (found(i, j) counts) is
// too big to keep; the kernel writes, per query, the number of reports and the sum and
// the sum of squares of the reported indices, which brute force predicts exactly when
// every neighbour is reported once.
auto query_kernel() {
  return qd::kernel("neighbors", {"grid", "queries", "radius", "count", "sum", "squares"},
                    [](qd::types::hash_grid grid, qd::types::ndarray<qd::vec3f, 1> queries, qd::f32 radius,
                       qd::types::ndarray<std::int32_t, 1> count, qd::types::ndarray<std::int64_t, 1> sum,
                       qd::types::ndarray<std::int64_t, 1> squares) {
                      qd::range_for(queries.shape(0), [&](qd::i32 i) {
                        qd::var<std::int32_t> c = 0;
                        qd::var<std::int64_t> s = 0, q = 0;
                        qd::for_each_neighbor(grid, queries[i], radius, [&](qd::i32 j) {
                          c += 1;
                          s += qd::cast<std::int64_t>(j);
                          q += qd::cast<std::int64_t>(j) * qd::cast<std::int64_t>(j);
                        });
                        count[i] = c;
                        sum[i] = s;
                        squares[i] = q;
                      });
                    });
}

float distance_squared(const point& a, const point& b) {
  const float x = a[0] - b[0], y = a[1] - b[1], z = a[2] - b[2];
  return x * x + y * y + z * z;
}

// Brute force with a band of a few ulps around the radius, where the device's rounding
// may differ (a contracted multiply-add): positions strictly inside must be reported,
// positions strictly outside must not, each at most once.
void check_queries(const std::vector<point>& positions, const std::vector<point>& queries, float cell_size,
                   float radius) {
  qd::hash_grid grid(cell_size);
  qd::ndarray<qd::vec3f, 1> pos(static_cast<std::int64_t>(positions.size()));
  if (!positions.empty()) pos.from_host(positions);
  grid.build(pos);
  CHECK(grid.size() == static_cast<std::int64_t>(positions.size()));
  const auto nq = static_cast<std::int64_t>(queries.size());
  qd::ndarray<qd::vec3f, 1> q(nq);
  q.from_host(queries);
  qd::ndarray<std::int32_t, 1> count(nq);
  qd::ndarray<std::int64_t, 1> sum(nq), squares(nq);
  query_kernel()(grid, q, radius, count, sum, squares);
  const auto c = count.to_host();
  const auto s = sum.to_host();
  const auto sq = squares.to_host();
  const float r2 = radius * radius;
  int bad = 0;
  for (std::size_t i = 0; i < queries.size(); ++i) {
    std::int64_t inside = 0, inside_sum = 0, inside_sq = 0, band = 0;
    for (std::size_t j = 0; j < positions.size(); ++j) {
      const float d2 = distance_squared(positions[j], queries[i]);
      if (std::isnan(d2) || !(radius >= 0.0f)) continue;  // a negative or NaN radius finds nothing
      // radius^2 overflowing to infinity: every finite position (d2 may be infinite too) is in.
      if (std::isfinite(r2) && std::abs(d2 - r2) <= 4e-6f * (r2 + d2)) {
        ++band;
      } else if (d2 <= r2) {
        ++inside;
        inside_sum += static_cast<std::int64_t>(j);
        inside_sq += static_cast<std::int64_t>(j) * static_cast<std::int64_t>(j);
      }
    }
    const bool ok = band == 0 ? (c[i] == inside && s[i] == inside_sum && sq[i] == inside_sq)
                              : (c[i] >= inside && c[i] <= inside + band);
    if (!ok && ++bad <= 3) {
      CAPTURE(i);
      CAPTURE(queries[i][0]);
      CAPTURE(inside);
      CAPTURE(band);
      CHECK(c[i] == inside);
    }
  }
  CHECK(bad == 0);
}

std::vector<point> uniform(std::size_t n, float lo, float hi, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<point> out(n);
  for (auto& p : out) p = {u(g), u(g), u(g)};
  return out;
}

}  // namespace

TEST_CASE_TEMPLATE("for_each_neighbor finds every position within the radius once", A, on_cpu1, on_cpu2, on_reference,
                   on_cuda, on_amdgpu) {
  if (!start<A>()) return;
  const bool small = A::arch != qd::arch::cpu;
  const std::size_t n = small ? 400 : 20000;
  const auto positions = uniform(n, 0.0f, 10.0f, 1);
  const auto queries = uniform(small ? 60 : 2000, -0.5f, 10.5f, 2);
  SUBCASE("radius = cell size") { check_queries(positions, queries, 0.5f, 0.5f); }
  SUBCASE("radius below the cell size") { check_queries(positions, queries, 1.0f, 0.3f); }
  SUBCASE("radius over many cells (the wrapped grid's cells all visited once)") {
    check_queries(positions, queries, 0.05f, 2.0f);
  }
  SUBCASE("clustered and negative coordinates, far from the origin") {
    auto clustered = uniform(n, -1000.01f, -1000.0f, 3);
    auto far = uniform(n / 4, 1e6f, 1e6f + 64.0f, 4);
    clustered.insert(clustered.end(), far.begin(), far.end());
    auto qs = uniform(20, -1000.02f, -999.99f, 5);
    auto qf = uniform(20, 1e6f, 1e6f + 64.0f, 6);
    qs.insert(qs.end(), qf.begin(), qf.end());
    check_queries(clustered, qs, 0.002f, 0.002f);
  }
  SUBCASE("a flat sheet and a thin rod (each axis wraps at its own size), queried inside and beyond them") {
    auto sheet = uniform(n, 0.0f, 10.0f, 7);
    for (auto& p : sheet) p[2] = 3.0f;  // one cell thick
    auto rod = uniform(n / 8, 0.0f, 0.25f, 8);
    for (auto& p : rod) p[0] = p[0] * 160.0f - 20.0f;  // x in [-20, 20), y and z within one cell
    sheet.insert(sheet.end(), rod.begin(), rod.end());
    auto qs = uniform(small ? 60 : 500, -0.5f, 10.5f, 9);
    for (std::size_t i = 0; i < qs.size(); ++i) qs[i][2] = i % 3 == 0 ? 3.2f : (i % 3 == 1 ? 0.1f : 2.6f);
    auto qr = uniform(40, -21.0f, 21.0f, 10);
    for (auto& p : qr) p[1] = p[2] = 0.1f;
    qs.insert(qs.end(), qr.begin(), qr.end());
    check_queries(sheet, qs, 0.5f, 0.5f);
  }
}

TEST_CASE("for_each_neighbor: degenerate inputs give documented results") {
  start<on_cpu2>();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<point> positions{{0, 0, 0}, {0, 0, 0}, {0.1f, 0, 0}, {nan, 0, 0}, {1e30f, -1e30f, 0}};
  // Coincident points, a NaN position (never found), a huge coordinate, a NaN query, a
  // negative radius (nothing found) and a huge one (everything finite found).
  check_queries(positions, {{0, 0, 0}, {nan, 0, 0}, {1e30f, -1e30f, 0}}, 0.25f, 0.2f);
  check_queries(positions, {{0, 0, 0}}, 0.25f, -1.0f);
  check_queries(positions, {{0, 0, 0}}, 0.25f, 3e30f);
  check_queries({}, {{0, 0, 0}}, 0.25f, 1.0f);  // an empty grid
}

TEST_CASE("hash_grid: a bad cell size or a grid never built is a qd::user_error") {
  start<on_cpu1>();
  CHECK_THROWS_WITH_AS(qd::hash_grid(0.0f), Contains("positive finite"), qd::user_error);
  CHECK_THROWS_WITH_AS(qd::hash_grid(-1.0f), Contains("positive finite"), qd::user_error);
  CHECK_THROWS_WITH_AS(qd::hash_grid{std::numeric_limits<float>::quiet_NaN()}, Contains("positive finite"),
                       qd::user_error);
  CHECK_THROWS_WITH_AS(qd::hash_grid{std::numeric_limits<float>::infinity()}, Contains("positive finite"),
                       qd::user_error);
  qd::hash_grid grid(0.5f);
  qd::ndarray<qd::vec3f, 1> q(1);
  qd::ndarray<std::int32_t, 1> count(1);
  qd::ndarray<std::int64_t, 1> sum(1), squares(1);
  CHECK_THROWS_WITH_AS(query_kernel()(grid, q, 0.5f, count, sum, squares), Contains("never built"), qd::user_error);
}

TEST_CASE("hash_grid: a rebuild sees moved positions; a grid from an ended program is a qd::user_error") {
  start<on_cpu1>();
  qd::hash_grid grid(1.0f);
  qd::ndarray<qd::vec3f, 1> pos(2);
  pos.from_host(std::vector<point>{{0, 0, 0}, {5, 5, 5}});
  grid.build(pos);
  qd::ndarray<qd::vec3f, 1> q(1);
  q.from_host(std::vector<point>{{5, 5, 5.5f}});
  qd::ndarray<std::int32_t, 1> count(1);
  qd::ndarray<std::int64_t, 1> sum(1), squares(1);
  auto k = query_kernel();
  k(grid, q, 1.0f, count, sum, squares);
  CHECK(sum.to_host()[0] == 1);
  pos.from_host(std::vector<point>{{5, 5, 5}, {0, 0, 0}});
  k(grid, q, 1.0f, count, sum, squares);
  CHECK(sum.to_host()[0] == 1);  // the grid keeps the positions of its last build
  grid.build(pos);
  k(grid, q, 1.0f, count, sum, squares);
  CHECK(sum.to_host()[0] == 0);
  start<on_cpu1>();  // a new program
  qd::ndarray<qd::vec3f, 1> q2(1);
  qd::ndarray<std::int32_t, 1> count2(1);
  qd::ndarray<std::int64_t, 1> sum2(1), squares2(1);
  CHECK_THROWS_AS(k(grid, q2, 1.0f, count2, sum2, squares2), qd::user_error);
}

TEST_CASE("for_each_neighbor outside a loop is a qd::user_error") {
  start<on_cpu1>();
  auto k = qd::kernel("top_level_query", [](qd::types::hash_grid grid, qd::types::ndarray<std::int32_t, 0> out) {
    qd::var<std::int32_t> c = 0;
    qd::for_each_neighbor(grid, qd::vec3f(0.0f), 1.0f, [&](qd::i32) { c += 1; });
    out() = c;
  });
  qd::hash_grid grid(1.0f);
  qd::ndarray<qd::vec3f, 1> pos(1);
  grid.build(pos);
  qd::ndarray<std::int32_t, 0> out;
  CHECK_THROWS_WITH_AS(k(grid, out), Contains("inside a qd::range_for"), qd::user_error);
}
