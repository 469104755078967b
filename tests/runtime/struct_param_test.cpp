// Struct parameters (SPEC §11.2): kernel-side aggregates of parameter types, nested,
// matched member by member with host aggregates; each member its own parameter for
// keys, the run-time checks and messages. Checked against plain C++.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/runtime_test_support.hpp"

namespace {

using doctest::Contains;

struct particles_view {  // kernel side
  qd::types::ndarray<float, 1> pos, vel;
  qd::f32 mass;
};
struct particles {  // host side
  qd::ndarray<float, 1> pos, vel;
  float mass;
};

struct bounds_view {
  qd::f32 lo, hi;
};
struct world_view {  // nested
  particles_view p;
  bounds_view box;
  qd::types::ndarray<std::int32_t, 1> hits;
};
struct bounds {
  float lo, hi;
};
struct world {
  particles p;
  bounds box;
  qd::ndarray<std::int32_t, 1> hits;
};

static_assert(qd::detail::member_count<world_view>() == 3 && qd::detail::leaf_count<world_view>() == 6);

std::vector<float> ramp(int n, float scale, float offset) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i) * scale + offset;
  return v;
}

}  // namespace

TEST_CASE("a struct parameter: the SPEC's drift step, whole and split, on the CPU and the reference backend") {
  for (qd::arch arch : {qd::arch::cpu, qd::arch::reference})
    for (auto mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
      CAPTURE(arch);
      CAPTURE(mode);
      qd::init({.arch = arch, .per_offload = mode});
      auto drift = qd::kernel("drift", [](particles_view p, qd::f32 dt) {
        qd::range_for(p.pos.shape(0), [&](qd::i32 i) { p.pos[i] = p.pos[i] + p.vel[i] * dt * p.mass; });
      });
      const int n = 64;
      particles ps{qd::ndarray<float, 1>(n), qd::ndarray<float, 1>(n), 2.0f};
      auto x = ramp(n, 1.0f, 0.0f), v = ramp(n, 0.5f, -3.0f);
      ps.pos.from_host(x);
      ps.vel.from_host(v);
      drift(ps, 0.25f);
      auto got = ps.pos.to_host();
      for (int i = 0; i < n; ++i) {
        const auto k = static_cast<std::size_t>(i);
        CHECK(got[k] == x[k] + v[k] * 0.25f * 2.0f);
      }
      // Three kernel parameters for the struct's members (named after the struct's
      // position and the members), then dt (by position).
#if defined(__GNUC__) && !defined(__clang__)
      CHECK(drift.ir().find("kernel(#0.pos: ndarray<f32, 1>, #0.vel: ndarray<f32, 1>, #0.mass: f32, #3: f32)") !=
            std::string::npos);
#else
      CHECK(drift.ir().find("kernel(#0.0: ndarray<f32, 1>, #0.1: ndarray<f32, 1>, #0.2: f32, #3: f32)") !=
            std::string::npos);
#endif
      qd::reset();
    }
}

TEST_CASE("nested structs, a struct among other parameters, and a return value") {
  qd::init({.arch = qd::arch::cpu, .per_offload = qd::per_offload_mode::on});
  auto clamp_count = qd::kernel("clamp_count", {"scale", "w"}, [](qd::f32 scale, world_view w) {
    qd::var<std::int32_t> outside = 0;
    qd::range_for(w.p.pos.shape(0), [&](qd::i32 i) {
      qd::f32 x = w.p.pos[i] * scale + w.p.vel[i] * w.p.mass;
      qd::if_(x < w.box.lo || x > w.box.hi, [&] {
        w.hits[i] = 1;
        outside += 1;
      }).else_([&] { w.hits[i] = 0; });
      w.p.pos[i] = qd::min(qd::max(x, w.box.lo), w.box.hi);
    });
    return outside;
  });
  const int n = 40;
  world wd{{qd::ndarray<float, 1>(n), qd::ndarray<float, 1>(n), 0.5f}, {-5.0f, 12.0f}, qd::ndarray<std::int32_t, 1>(n)};
  auto x = ramp(n, 0.75f, -10.0f), v = ramp(n, -0.25f, 4.0f);
  wd.p.pos.from_host(x);
  wd.p.vel.from_host(v);
  std::int32_t outside = clamp_count(1.5f, wd);
  std::int32_t want_outside = 0;
  auto pos = wd.p.pos.to_host();
  auto hits = wd.hits.to_host();
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const float y = x[k] * 1.5f + v[k] * 0.5f;
    const bool out = y < -5.0f || y > 12.0f;
    want_outside += out;
    CHECK(hits[k] == (out ? 1 : 0));
    CHECK(pos[k] == std::min(std::max(y, -5.0f), 12.0f));
  }
  CHECK(outside == want_outside);
  CHECK(clamp_count.per_offload_cache_observations().fallback == qd::fallback_reason::none);
  qd::reset();
}

TEST_CASE("each member is its own parameter: messages name the parameter and the member") {
  qd::init({.arch = qd::arch::cpu, .check_out_of_bound = true});
  auto step = qd::kernel("step", {"ps", "dt"}, [](particles_view p, qd::f32 dt) {
    qd::range_for(p.pos.shape(0), [&](qd::i32 i) { p.pos[i] = p.pos[i] + p.vel[i + 1] * dt; });
  });
  particles ps{qd::ndarray<float, 1>(8), qd::ndarray<float, 1>(8), 1.0f};
  // vel[i + 1] runs past the end of the vel member.
  CHECK_THROWS_WITH_AS(step(ps, 0.5f), Contains("kernel 'step'"), qd::user_error);
#if defined(__GNUC__) && !defined(__clang__)
  CHECK_THROWS_WITH_AS(step(ps, 0.5f), Contains("'ps.vel'"), qd::user_error);
#else
  CHECK_THROWS_WITH_AS(step(ps, 0.5f), Contains("'ps.1'"), qd::user_error);
#endif
  // Unnamed kernels name struct members by the parameter's position.
  auto unnamed = qd::kernel(
      "unnamed", [](particles_view p) { qd::range_for(p.pos.shape(0), [&](qd::i32 i) { p.pos[i] = p.vel[i + 1]; }); });
#if defined(__GNUC__) && !defined(__clang__)
  CHECK_THROWS_WITH_AS(unnamed(ps), Contains("'#0.vel'"), qd::user_error);
#endif
  qd::reset();
}

namespace {
struct one_member_view {  // one member: as many leaves as parameters, still a struct
  qd::types::ndarray<float, 1> pos;
};
struct one_member {
  qd::ndarray<float, 1> pos;
};
}  // namespace

TEST_CASE("a struct of one member: an out-of-range index names the member, not the position") {
  qd::init({.arch = qd::arch::cpu, .check_out_of_bound = true});
  auto named = qd::kernel("shift", {"ps"}, [](one_member_view p) {
    qd::range_for(p.pos.shape(0), [&](qd::i32 i) { p.pos[i] = p.pos[i + 1]; });
  });
  auto unnamed = qd::kernel("shift_unnamed", [](one_member_view p) {
    qd::range_for(p.pos.shape(0), [&](qd::i32 i) { p.pos[i] = p.pos[i + 1]; });
  });
  one_member ps{qd::ndarray<float, 1>(8)};
#if defined(__GNUC__) && !defined(__clang__)
  CHECK_THROWS_WITH_AS(named(ps), Contains("kernel 'shift', parameter 'ps.pos'"), qd::user_error);
  CHECK_THROWS_WITH_AS(unnamed(ps), Contains("parameter '#0.pos'"), qd::user_error);
#else
  CHECK_THROWS_WITH_AS(named(ps), Contains("kernel 'shift', parameter 'ps.0'"), qd::user_error);
  CHECK_THROWS_WITH_AS(unnamed(ps), Contains("parameter '#0.0'"), qd::user_error);
#endif
  qd::reset();
}

TEST_CASE("two members bound to one array: the run-time check sees each member, and names it") {
  qd_test::log_capture logs;
  qd::init({.arch = qd::arch::cpu, .per_offload = qd::per_offload_mode::on});
  struct pair_view {
    qd::types::ndarray<float, 1> a, b;
  };
  struct pair_host {  // members may be references to arrays
    const qd::ndarray<float, 1>& a;
    const qd::ndarray<float, 1>& b;
  };
  auto k = qd::kernel("snapshot", {"pr"}, [](pair_view pr) {
    qd::f32 first = pr.a[0];
    qd::range_for(pr.b.shape(0), [&](qd::i32 i) { pr.b[i] = 7.0f; });
    qd::range_for(pr.b.shape(0), [&](qd::i32 i) { pr.b[i] = pr.b[i] + first; });
  });
  qd::ndarray<float, 1> x(4), y(4);
  x.fill(1.0f);
  k(pair_host{x, y});  // distinct: the split
  CHECK(y.to_host() == std::vector<float>{8.0f, 8.0f, 8.0f, 8.0f});
  CHECK(k.per_offload_cache_observations().fallback == qd::fallback_reason::none);
  CHECK(k.per_offload_cache_observations().runtime_fallbacks == 0);
  k(pair_host{x, x});  // one array for both members: the whole kernel's answer (the snapshot is 1)
  CHECK(x.to_host() == std::vector<float>{8.0f, 8.0f, 8.0f, 8.0f});
  CHECK(k.per_offload_cache_observations().runtime_fallbacks == 1);
#if defined(__GNUC__) && !defined(__clang__)
  CHECK(logs.count(qd::log_level::warn, "parameters 'pr.a' and 'pr.b' share a buffer") == 1);
#endif
  qd::reset();
}

namespace {
struct cloud_view {  // SPEC §11.2's example: arrays of qd::vec3f in a struct
  qd::types::ndarray<qd::vec3f, 1> pos, vel;
  qd::f32 mass;
};
struct cloud {
  qd::ndarray<qd::vec3f, 1> pos, vel;
  float mass;
};
struct energy_view {  // autodiff through struct members
  qd::types::ndarray<float, 1, qd::needs_grad> x;
  qd::types::ndarray<float, 0, qd::needs_grad> e;
};
struct energy_host {
  qd::ndarray<float, 1> x;
  qd::ndarray<float, 0> e;
};
}  // namespace

TEST_CASE("SPEC §11.2's drift with qd::vec3f arrays, and a gradient through struct members") {
  qd::init({.arch = qd::arch::cpu});
  auto drift = qd::kernel("drift", [](cloud_view p, qd::f32 dt) {
    qd::range_for(p.pos.shape(0), [&](qd::i32 i) { p.pos[i] = p.pos[i] + p.vel[i] * dt; });
  });
  const int n = 10;
  cloud ps{qd::ndarray<qd::vec3f, 1>(n), qd::ndarray<qd::vec3f, 1>(n), 1.0f};
  std::vector<std::array<float, 3>> x, v;
  for (int i = 0; i < n; ++i) {
    const auto f = static_cast<float>(i);
    x.push_back({f, 2.0f * f, -f});
    v.push_back({1.0f, -0.5f, 0.25f * f});
  }
  ps.pos.from_host(std::span<const std::array<float, 3>>(x));
  ps.vel.from_host(std::span<const std::array<float, 3>>(v));
  drift(ps, 0.01f);
  auto got = ps.pos.to_host();
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t c = 0; c < 3; ++c) CHECK(got[i][c] == x[i][c] + v[i][c] * 0.01f);

  auto energy = qd::kernel(
      "energy", [](energy_view s) { qd::range_for(s.x.shape(0), [&](qd::i32 i) { s.e() += s.x[i] * s.x[i]; }); });
  {  // a member without the gradient buffer its kernel member needs: named by position and member
    energy_host bad{qd::ndarray<float, 1>(n), qd::ndarray<float, 0>(qd::needs_grad)};
    CHECK_THROWS_WITH_AS(energy(bad), Contains("kernel 'energy'"), qd::user_error);
#if defined(__GNUC__) && !defined(__clang__)
    CHECK_THROWS_WITH_AS(energy(bad), Contains("parameter '#0.x' (#0, ndarray<f32, 1, needs_grad>)"), qd::user_error);
#endif
  }
  energy_host h{qd::ndarray<float, 1>(n, qd::needs_grad), qd::ndarray<float, 0>(qd::needs_grad)};
  std::vector<float> hx;
  for (int i = 0; i < n; ++i) hx.push_back(static_cast<float>(i) - 3.0f);
  h.x.from_host(hx);
  energy(h);
  h.e.grad().fill(1.0f);
  energy.grad(h);
  auto g = h.x.grad().to_host();
  for (int i = 0; i < n; ++i) CHECK(g[static_cast<std::size_t>(i)] == 2.0f * hx[static_cast<std::size_t>(i)]);
  qd::reset();
  // Arrays of an ended program: the member is named.
  qd::init({.arch = qd::arch::cpu});
  CHECK_THROWS_WITH_AS(drift(ps, 0.01f), Contains("created before qd::reset()"), qd::user_error);
#if defined(__GNUC__) && !defined(__clang__)
  CHECK_THROWS_WITH_AS(drift(ps, 0.01f), Contains("parameter '#0.pos'"), qd::user_error);
#endif
  qd::reset();
}
