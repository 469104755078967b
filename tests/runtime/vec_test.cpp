// qd::vec and qd::mat (SPEC §11.1) on the CPU and the reference backend: arithmetic,
// products and functions against plain C++, variables, arrays of vectors and
// matrices, and their host side.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/suite_kernels_vec.hpp"
#include "runtime/runtime_test_support.hpp"

namespace {

using doctest::Contains;

struct on_cpu {
  static constexpr qd::arch arch = qd::arch::cpu;
};
struct on_reference {
  static constexpr qd::arch arch = qd::arch::reference;
};
#define QD_VEC_ARCHES on_cpu, on_reference

template <class A>
void start() {
  qd::init({.arch = A::arch});
}

// Types follow the scalar rules component by component.
static_assert(std::is_same_v<decltype(std::declval<qd::vec3f>() + std::declval<qd::vec3f>()), qd::vec3f>);
static_assert(std::is_same_v<decltype(std::declval<qd::vec3i>() * 2.0f), qd::vec3f>);
static_assert(std::is_same_v<decltype(std::declval<qd::vec3f>() * std::declval<qd::vec3d>()), qd::vec3d>);
static_assert(std::is_same_v<decltype(qd::dot(std::declval<qd::vec3f>(), std::declval<qd::vec3f>())), qd::f32>);
static_assert(std::is_same_v<decltype(qd::norm(std::declval<qd::vec2i>())), qd::f32>);
static_assert(std::is_same_v<decltype(std::declval<qd::mat3f>() * std::declval<qd::vec3f>()), qd::vec3f>);
static_assert(std::is_same_v<decltype(std::declval<qd::mat<float, 2, 3>>() * std::declval<qd::mat<float, 3, 4>>()),
                             qd::mat<float, 2, 4>>);
static_assert(
    std::is_same_v<decltype(qd::outer(std::declval<qd::vec2f>(), std::declval<qd::vec3f>())), qd::mat<float, 2, 3>>);
static_assert(std::is_same_v<decltype(qd::transpose(std::declval<qd::mat<float, 2, 3>>())), qd::mat<float, 3, 2>>);
static_assert(std::is_same_v<decltype(qd::inverse(std::declval<qd::mat2i>())), qd::mat2f>);
static_assert(std::is_same_v<decltype(qd::determinant(std::declval<qd::mat4d>())), qd::f64>);
static_assert(
    std::is_same_v<decltype(qd::cross(std::declval<qd::var<qd::vec3f>>(), std::declval<qd::vec3f>())), qd::vec3f>);

}  // namespace

TEST_CASE_TEMPLATE("vector arithmetic and functions agree with plain C++", A, QD_VEC_ARCHES) {
  start<A>();
  qd_test::vec_checks::check_vec_ops();
}

TEST_CASE_TEMPLATE("matrix products, transpose, determinant, inverse and trace agree with plain C++", A,
                   QD_VEC_ARCHES) {
  start<A>();
  qd_test::vec_checks::check_mat_ops();
}

TEST_CASE_TEMPLATE("vector and matrix variables: per-iteration locals, components, top-level reductions", A,
                   QD_VEC_ARCHES) {
  start<A>();
  qd_test::vec_checks::check_vec_vars();
}

TEST_CASE_TEMPLATE("elements of vector and matrix arrays: assignment, component updates and atomics", A,
                   QD_VEC_ARCHES) {
  start<A>();
  qd_test::vec_checks::check_vec_elements();
}

TEST_CASE("host arrays of vectors: shapes, round trips, and a span of the wrong length") {
  qd_test::init_cpu();
  qd::ndarray<qd::vec2d, 2> a({3, 4});
  CHECK(a.shape(0) == 3);
  CHECK(a.shape(1) == 4);
  CHECK(a.size() == 12);
  CHECK(a.storage_shape() == std::array<std::int64_t, 3>{3, 4, 2});
  std::vector<std::array<double, 2>> h(12);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = {static_cast<double>(i), -static_cast<double>(i)};
  a.from_host(std::span<const std::array<double, 2>>(h));
  CHECK(a.to_host() == h);
  std::vector<std::array<double, 2>> short_span(5);
  CHECK_THROWS_AS(a.from_host(short_span), qd::user_error);
  CHECK_THROWS_WITH(a.from_host(short_span), Contains("from_host"));
  qd::ndarray<qd::mat2f, 1> m(2);
  m.fill({{{1, 2}, {3, 4}}});
  CHECK(m.to_host()[1] == std::array<std::array<float, 2>, 2>{{{1, 2}, {3, 4}}});
}

TEST_CASE_TEMPLATE("vectors and matrices as scalar parameters take std::array host values", A, QD_VEC_ARCHES) {
  start<A>();
  qd_test::vec_checks::check_vec_params();
}

TEST_CASE_TEMPLATE("the docs/dsl.md example: a step with vectors, matrices and a vector parameter", A, QD_VEC_ARCHES) {
  start<A>();
  auto step = qd::kernel("step", {"pos", "vel", "rot", "g", "dt"},
                         [](qd::types::ndarray<qd::vec3f, 1> pos, qd::types::ndarray<qd::vec3f, 1> vel,
                            qd::types::ndarray<qd::mat3f, 1> rot, qd::vec3f g, qd::f32 dt) {
                           qd::var<qd::vec3f> momentum = qd::vec3f(0.0f);
                           qd::range_for(pos.shape(0), [&](qd::i32 i) {
                             qd::vec3f v = vel[i] + g * dt;
                             qd::mat3f r = rot[i];
                             vel[i] = v;
                             pos[i] += r * v * dt;
                             pos[i][1] = qd::max(pos[i].y(), 0.0f);
                             momentum += v;
                           });
                         });
  CHECK(step.ir().find("owned") != std::string::npos);  // pos[i] += ... is demoted
  const int n = 32;
  std::vector<std::array<float, 3>> hp(n), hv(n);
  std::vector<std::array<std::array<float, 3>, 3>> hr(n);
  for (int i = 0; i < n; ++i) {
    auto f = static_cast<float>(i);
    hp[static_cast<std::size_t>(i)] = {f, 0.25f * f - 2.0f, 1.0f};
    hv[static_cast<std::size_t>(i)] = {1.0f, -f, 0.5f};
    hr[static_cast<std::size_t>(i)] = {{{1, 0, 0}, {0, 0, -1}, {0, 1, 0}}};
  }
  qd::ndarray<qd::vec3f, 1> pos(n), vel(n);
  qd::ndarray<qd::mat3f, 1> rot(n);
  pos.from_host(hp);
  vel.from_host(hv);
  rot.from_host(hr);
  const std::array<float, 3> g{0.0f, -9.8f, 0.0f};
  const float dt = 0.01f;
  step(pos, vel, rot, g, dt);
  auto gp = pos.to_host();
  auto gv = vel.to_host();
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
    std::array<float, 3> v{hv[i][0] + g[0] * dt, hv[i][1] + g[1] * dt, hv[i][2] + g[2] * dt};
    CHECK(gv[i] == v);
    std::array<float, 3> rv{v[0], -v[2], v[1]};  // the rotation about x
    std::array<float, 3> p{hp[i][0] + rv[0] * dt, hp[i][1] + rv[1] * dt, hp[i][2] + rv[2] * dt};
    p[1] = std::max(p[1], 0.0f);
    for (std::size_t c = 0; c < 3; ++c) CHECK(gp[i][c] == doctest::Approx(p[c]).epsilon(1e-6));
  }
}

TEST_CASE("a kernel over vector arrays splits per construct and gives the whole kernel's results") {
  // With `stale`, construct 2 uses `first = p[0]` (components p(0, c)), read before
  // construct 1 writes p: the split sees ordinary array accesses and hands the
  // snapshot on (the persisted buffer) instead of re-reading it.
  auto run = [](qd::per_offload_mode mode, bool stale) {
    qd::init({.arch = qd::arch::cpu, .per_offload = mode});  // the offline cache on: split allowed
    auto k = qd::kernel("vec_split", {"p", "q"},
                        [stale](qd::types::ndarray<qd::vec3f, 1> p, qd::types::ndarray<qd::vec3f, 1> q) {
                          qd::vec3f first = stale ? p[0].value() : qd::vec3f(1.0f, 2.0f, 3.0f);
                          qd::range_for(p.shape(0), [&](qd::i32 i) { p[i] += qd::vec3f(1.0f); });
                          qd::range_for(q.shape(0), [&](qd::i32 i) { q[i] = p[i] * 2.0f + first; });
                        });
    const int n = 8;
    std::vector<std::array<float, 3>> h(n);
    for (int i = 0; i < n; ++i) h[static_cast<std::size_t>(i)] = {static_cast<float>(i), -1.0f, 0.5f};
    qd::ndarray<qd::vec3f, 1> p(n), q(n);
    p.from_host(h);
    k(p, q);
    return std::make_pair(q.to_host(), k.per_offload_cache_observations());
  };
  for (bool stale : {false, true}) {
    auto [split_q, split_o] = run(qd::per_offload_mode::on, stale);
    auto [whole_q, whole_o] = run(qd::per_offload_mode::off, stale);
    CAPTURE(stale);
    CHECK(split_q == whole_q);
    CHECK(split_o.fallback == qd::fallback_reason::none);
    CHECK(split_o.frontend_constructs_total >= 2);
    std::array<float, 3> want0{(0.0f + 1.0f) * 2.0f + (stale ? 0.0f : 1.0f),
                               (-1.0f + 1.0f) * 2.0f + (stale ? -1.0f : 2.0f),
                               (0.5f + 1.0f) * 2.0f + (stale ? 0.5f : 3.0f)};
    CHECK(split_q[0] == want0);
  }
}

TEST_CASE_TEMPLATE("clamped access to a vector array moves the element index to the nearest edge", A, QD_VEC_ARCHES) {
  start<A>();
  auto k = qd::kernel("vec_clamped", [](qd::types::ndarray<qd::vec2f, 1> p, qd::types::ndarray<qd::vec2f, 1> out) {
    qd::range_for(out.shape(0),
                  [&](qd::i32 i) { out[i] = p.at(i - 2, qd::boundary::clamp) + p.at(i + 2, qd::boundary::clamp); });
  });
  const int n = 6;
  std::vector<std::array<float, 2>> h(n);
  for (int i = 0; i < n; ++i) h[static_cast<std::size_t>(i)] = {static_cast<float>(i), 10.0f * static_cast<float>(i)};
  qd::ndarray<qd::vec2f, 1> p(n), out(n);
  p.from_host(h);
  k(p, out);
  auto got = out.to_host();
  for (int i = 0; i < n; ++i) {
    const auto& a = h[static_cast<std::size_t>(std::clamp(i - 2, 0, n - 1))];
    const auto& b = h[static_cast<std::size_t>(std::clamp(i + 2, 0, n - 1))];
    CHECK(got[static_cast<std::size_t>(i)] == std::array<float, 2>{a[0] + b[0], a[1] + b[1]});
  }
}
