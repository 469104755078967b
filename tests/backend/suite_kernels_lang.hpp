// The third wave's language kernels of the per-backend suite (SPEC §13.4-§13.6), with
// their checks against plain C++: short-circuit && and || guarding loads and atomics,
// literal types, qd::assert_ under debug, template arguments, arrays of structs in both
// layouts, vector indices. gpu_suite_test runs them on every arch; the compile-only
// tests compile them with NVRTC and hipRTC.
#pragma once

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <quadrants/quadrants.hpp>

namespace qd_test {

namespace suite_lang {
struct body_k {
  qd::vec2f x, v;
  qd::f32 m;
  qd::i32 steps;
  qd::f64 e;
};
struct body {
  std::array<float, 2> x, v;
  float m;
  std::int32_t steps;
  double e;
};
}  // namespace suite_lang

namespace kernels {

inline auto short_circuit() {
  return qd::kernel("short_circuit", {"x", "out", "hits"},
                    [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 2> out,
                       qd::types::ndarray<std::int32_t, 1> hits) {
                      qd::range_for(x.shape(0) + 2, [&](qd::i32 i) {
                        const qd::i32 count = x.shape(0);
                        out(i, 0) = qd::select(i < count && x[i] > 0.0f, 1, 0);
                        out(i, 1) = qd::select(i >= count || x[i] < 0.0f, 1, 0);
                        out(i, 2) = qd::select(i < count && qd::atomic_add(hits[0], 1) >= 0, 1, 0);
                        out(i, 3) = qd::select(i < count && (x[i] > 1.0f || x[i] < -1.0f), 1, 0);
                      });
                    });
}

inline auto literal_select() {
  return qd::kernel("literal_select", [](qd::types::ndarray<double, 1> d, qd::types::ndarray<std::int32_t, 1> n) {
    qd::range_for(d.shape(0), [&](qd::i32 i) {
      d[i] = qd::select(i % 2 == 0, -9.8, 0.1);
      n[i] = qd::select(i % 2 == 0, 1, 2);
    });
  });
}

inline auto checked_sqrt() {
  return qd::kernel("checked_sqrt", {"x"}, [](qd::types::ndarray<float, 1> x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      qd::assert_(x[i] >= 0.0f, "x must not be negative");
      x[i] = qd::sqrt(x[i]);
    });
  });
}

inline auto substeps() {
  return qd::kernel("substeps", {"n_sub", "x"}, [](qd::types::template_arg<int> n_sub, qd::types::ndarray<float, 1> x) {
    for (int s = 0; s < n_sub; ++s) qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * 2.0f + 1.0f; });
  });
}

inline auto bodies() {
  return qd::kernel("bodies", {"p", "grid", "dt"},
                    [](qd::types::ndarray<suite_lang::body_k, 1> p, qd::types::ndarray<float, 2> grid, qd::f32 dt) {
                      qd::range_for(p.shape(0), [&](qd::i32 i) {
                        p[i].x = p[i].x + p[i].v * dt;
                        p[i].e = qd::cast<double>(0.5f * p[i].m * qd::dot(p[i].v, p[i].v));
                        p[i].steps = p[i].steps + 1;
                        qd::vec2i cell(i % grid.shape(0), i % grid.shape(1));
                        qd::atomic_add(grid[cell], p[i].m);
                        p[i].v = {p[i].v.x(), p[i].v.y() - 9.8f * dt};
                      });
                    });
}

}  // namespace kernels

namespace lang_checks {

inline void check_short_circuit() {
  auto k = kernels::short_circuit();
  const int n = 100;
  std::vector<float> h(n);
  for (int i = 0; i < n; ++i) h[static_cast<std::size_t>(i)] = static_cast<float>(i % 9) * 0.5f - 2.0f;
  qd::ndarray<float, 1> x(n);
  x.from_host(h);
  qd::ndarray<std::int32_t, 2> out({n + 2, 4});
  qd::ndarray<std::int32_t, 1> hits(1);
  k(x, out, hits);
  const auto got = out.to_host();
  int bad = 0;
  for (int i = 0; i < n + 2; ++i) {
    const bool in = i < n;
    const float v = in ? h[static_cast<std::size_t>(i)] : 0.0f;
    const int want[4] = {in && v > 0.0f, !in || v < 0.0f, in, in && (v > 1.0f || v < -1.0f)};
    for (int c = 0; c < 4; ++c) bad += got[static_cast<std::size_t>(i * 4 + c)] != want[c];
  }
  CHECK(bad == 0);
  CHECK(hits.to_host()[0] == n);
}

inline void check_literal_select() {
  auto k = kernels::literal_select();
  qd::ndarray<double, 1> d(4);
  qd::ndarray<std::int32_t, 1> n(4);
  k(d, n);
  CHECK(d.to_host() == std::vector<double>{-9.8, 0.1, -9.8, 0.1});
  CHECK(n.to_host() == std::vector<std::int32_t>{1, 2, 1, 2});
}

// Runs under config.debug: the assertion holds, then fails with its message.
inline void check_assertion() {
  auto k = kernels::checked_sqrt();
  qd::ndarray<float, 1> x(3);
  x.from_host(std::vector<float>{4.0f, 9.0f, 0.25f});
  k(x);
  CHECK(x.to_host() == std::vector<float>{2.0f, 3.0f, 0.5f});
  x.from_host(std::vector<float>{4.0f, -9.0f, 0.25f});
  CHECK_THROWS_WITH_AS(k(x), doctest::Contains("kernel 'checked_sqrt': assertion failed at "), qd::user_error);
  CHECK_THROWS_WITH_AS(k(x), doctest::Contains("x must not be negative"), qd::user_error);
}

inline void check_template_args() {
  auto k = kernels::substeps();
  qd::ndarray<float, 1> x(8);
  k(3, x);  // 0 -> 1 -> 3 -> 7
  CHECK(x.to_host() == std::vector<float>(8, 7.0f));
  k(1, x);
  CHECK(x.to_host() == std::vector<float>(8, 15.0f));
}

inline void check_struct_arrays() {
  for (qd::layout l : {qd::layout::aos, qd::layout::soa}) {
    CAPTURE(static_cast<int>(l));
    auto k = kernels::bodies();
    const int n = 40;
    std::vector<suite_lang::body> h(n);
    for (int i = 0; i < n; ++i) {
      const float f = static_cast<float>(i);
      h[static_cast<std::size_t>(i)] = {{f, -f}, {0.5f * f, 1.0f}, 1.0f + 0.25f * f, i, 0.0};
    }
    qd::ndarray<suite_lang::body, 1> p(n, l);
    p.from_host(h);
    qd::ndarray<float, 2> grid({3, 4});
    const float dt = 0.125f;
    k(p, grid, dt);
    std::vector<float> want_grid(12, 0.0f);
    for (int i = 0; i < n; ++i) {
      auto& b = h[static_cast<std::size_t>(i)];
      for (std::size_t c = 0; c < 2; ++c) b.x[c] = b.x[c] + b.v[c] * dt;
      b.e = static_cast<double>(0.5f * b.m * (b.v[0] * b.v[0] + b.v[1] * b.v[1]));
      b.steps += 1;
      want_grid[static_cast<std::size_t>((i % 3) * 4 + i % 4)] += b.m;
      b.v[1] = b.v[1] - 9.8f * dt;
    }
    const auto got = p.to_host();
    int bad = 0;
    for (std::size_t i = 0; i < h.size(); ++i)
      bad += got[i].x != h[i].x || got[i].v != h[i].v || got[i].m != h[i].m || got[i].steps != h[i].steps ||
             got[i].e != h[i].e;
    CHECK(bad == 0);
    const auto g = grid.to_host();
    for (std::size_t c = 0; c < 12; ++c) CHECK(g[c] == doctest::Approx(want_grid[c]));
  }
}

}  // namespace lang_checks

}  // namespace qd_test
