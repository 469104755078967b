// qd::ad::gradcheck, the tape's clear_gradients option and forward mode (SPEC §13.9):
// gradcheck against hand-derived gradients, its report at a kink, its options, and arrays
// left as they were; clear_gradients against the default accumulation; kernel.fwd against
// central differences and against the adjoint (v.(J u) == u.(J^T v)), and its refusals.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "runtime/runtime_test_support.hpp"

using doctest::Contains;

namespace {

using vec = std::vector<double>;
using d1 = qd::types::ndarray<double, 1, qd::needs_grad>;
using d0 = qd::types::ndarray<double, 0, qd::needs_grad>;

qd::ndarray<double, 1> array_of(const vec& v) {
  qd::ndarray<double, 1> a(static_cast<std::int64_t>(v.size()), qd::needs_grad);
  a.from_host(v);
  return a;
}

}  // namespace

TEST_CASE("gradcheck: a correct adjoint passes; the arrays and gradients are as before the call") {
  for (qd::arch a : qd_test::cpu_and_reference) {
    qd_test::init_arch(a);
    CAPTURE(std::string(qd::name(a)));
    auto k = qd::kernel("smooth", {"x", "y", "c"}, [](d1 x, d1 y, qd::f64 c) {
      qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] += qd::sin(x[i]) * x[i] * c + qd::exp(0.5 * x[i]); });
    });
    const vec x0{0.3, -0.7, 1.2, 0.05}, y0{1, 2, 3, 4}, g0{0.5, 0.25, 0, -1};
    auto x = array_of(x0), y = array_of(y0);
    x.grad().from_host(g0);
    const qd::ad::gradcheck_result r = qd::ad::gradcheck(k, x, y, 1.5);
    CHECK_MESSAGE(r.ok, r.worst);
    CHECK(r.max_relative_error < 1e-6);
    CHECK(!r.worst.empty());
    CHECK(x.to_host() == x0);
    CHECK(y.to_host() == y0);
    CHECK(x.grad().to_host() == g0);
    CHECK(y.grad().to_host() == vec(4, 0.0));
  }
}

TEST_CASE("gradcheck reports the element where adjoint and differences disagree (a step at an integer)") {
  qd_test::init_arch(qd::arch::reference);
  auto k = qd::kernel("steps", {"x", "y"},
                      [](d1 x, d1 y) { qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = qd::floor(x[i]) + x[i]; }); });
  auto x = array_of({0.5, 1.0, 2.5}), y = array_of({0, 0, 0});
  const qd::ad::gradcheck_result r = qd::ad::gradcheck(k, x, y);
  CHECK_FALSE(r.ok);
  CHECK(r.max_relative_error > 0.9);
  CHECK_MESSAGE(r.worst.find("array argument 0, element 1") != std::string::npos, r.worst);
  // samples = 1 with a wide tolerance: one element, and the step's jump within it does not count.
  qd::ad::gradcheck_options wide{.eps = 1e-6, .rtol = 1e9, .atol = 0, .samples = 1, .seed = 3};
  CHECK(qd::ad::gradcheck(wide, k, x, y).ok);
}

TEST_CASE("gradcheck on a kernel whose adjoint is refused: the user_error, and the arrays as they were") {
  qd_test::init_arch(qd::arch::reference);
  auto k = qd::kernel("drag_in_place", {"v"},
                      [](d1 v) { qd::range_for(v.shape(0), [&](qd::i32 i) { v[i] += -0.3 * v[i] * v[i]; }); });
  const vec v0{0.4, 0.9};
  auto v = array_of(v0);
  CHECK_THROWS_WITH_AS(qd::ad::gradcheck(k, v), Contains("the accumulation into 'v'"), qd::user_error);
  CHECK(v.to_host() == v0);
  CHECK(v.grad().to_host() == vec(2, 0.0));
}

TEST_CASE("tape option clear_gradients zeroes every recorded gradient at backward(); the default accumulates") {
  qd_test::init_arch(qd::arch::reference);
  auto square = qd::kernel("square_sum", {"x", "loss"},
                           [](d1 x, d0 loss) { qd::range_for(x.shape(0), [&](qd::i32 i) { loss() += x[i] * x[i]; }); });
  for (bool clear : {true, false}) {
    CAPTURE(clear);
    auto x = array_of({1.0, -2.0, 0.5});
    x.grad().fill(5.0);  // left over from an earlier step
    qd::ndarray<double, 0> loss(qd::needs_grad);
    qd::ad::tape tape(loss, {.clear_gradients = clear});
    square(x, loss);
    tape.backward();
    const vec want = clear ? vec{2.0, -4.0, 1.0} : vec{7.0, 1.0, 6.0};
    CHECK(x.grad().to_host() == want);
    CHECK(loss.grad().to_host()[0] == 1.0);
  }
}

namespace {

// One f64 array of a forward-mode case, whatever its rank, as flat host vectors.
struct slot {
  std::function<vec()> get, dual, grad;
  std::function<void(const vec&)> set, set_dual, set_grad;
};
template <int N>
slot slot_of(qd::ndarray<double, N>& a) {
  return {[&a] { return a.to_host(); },
          [&a] { return a.dual().to_host(); },
          [&a] { return a.grad().to_host(); },
          [&a](const vec& v) { a.from_host(v); },
          [&a](const vec& v) { a.dual().from_host(v); },
          [&a](const vec& v) { a.grad().from_host(v); }};
}

// Checks kernel.fwd (`fwd`) on the arrays' current values against central differences of
// the forward launch (`run`), for a random tangent u of every array; the arrays' values
// after fwd against those after run; with `grad`, v.(J u) against u.(J^T v) from the
// adjoint for a random seed v. Leaves the arrays as they were.
void check_forward_mode(const std::vector<slot>& arrays, const std::function<void()>& run,
                        const std::function<void()>& fwd, const std::function<void()>& grad) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  const double eps = 1e-5;
  std::vector<vec> start, u, v;
  for (const slot& a : arrays) {
    start.push_back(a.get());
    vec r(start.back().size()), s(start.back().size());
    for (double& e : r) e = unit(rng);
    for (double& e : s) e = unit(rng);
    u.push_back(r);
    v.push_back(s);
  }
  auto set_all = [&](double step) {
    for (std::size_t k = 0; k < arrays.size(); ++k) {
      vec x = start[k];
      for (std::size_t e = 0; e < x.size(); ++e) x[e] += step * u[k][e];
      arrays[k].set(x);
    }
  };
  auto get_all = [&](auto member) {
    std::vector<vec> out;
    for (const slot& a : arrays) out.push_back(member(a));
    return out;
  };
  set_all(eps);
  run();
  const std::vector<vec> plus = get_all([](const slot& a) { return a.get(); });
  set_all(-eps);
  run();
  const std::vector<vec> minus = get_all([](const slot& a) { return a.get(); });
  set_all(0);
  run();
  const std::vector<vec> value = get_all([](const slot& a) { return a.get(); });
  set_all(0);
  for (std::size_t k = 0; k < arrays.size(); ++k) arrays[k].set_dual(u[k]);
  fwd();
  const std::vector<vec> jvp = get_all([](const slot& a) { return a.dual(); });
  const std::vector<vec> fwd_value = get_all([](const slot& a) { return a.get(); });
  double lhs = 0;
  for (std::size_t k = 0; k < arrays.size(); ++k)
    for (std::size_t e = 0; e < jvp[k].size(); ++e) {
      CAPTURE(k);
      CAPTURE(e);
      const double fd = (plus[k][e] - minus[k][e]) / (2 * eps);
      CHECK(std::abs(jvp[k][e] - fd) <= 1e-7 * (1 + std::abs(fd)));
      CHECK(std::abs(fwd_value[k][e] - value[k][e]) <= 1e-12 * (1 + std::abs(value[k][e])));
      lhs += v[k][e] * jvp[k][e];
    }
  if (grad) {
    set_all(0);
    run();
    for (std::size_t k = 0; k < arrays.size(); ++k) arrays[k].set_grad(v[k]);
    grad();
    double rhs = 0;
    for (std::size_t k = 0; k < arrays.size(); ++k) {
      const vec g = arrays[k].grad();
      for (std::size_t e = 0; e < g.size(); ++e) rhs += u[k][e] * g[e];
    }
    CHECK(std::abs(lhs - rhs) <= 1e-10 * (1 + std::abs(lhs)));
  }
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    arrays[k].set(start[k]);
    arrays[k].set_grad(vec(start[k].size(), 0.0));
  }
}

}  // namespace

TEST_CASE("forward mode: elementwise math, a stencil, a reduction into a 0-d, against differences and the adjoint") {
  for (qd::arch a : qd_test::cpu_and_reference) {
    qd_test::init_arch(a, {.per_offload = qd::per_offload_mode::on});
    CAPTURE(std::string(qd::name(a)));
    auto math = qd::kernel("fwd_math", {"x", "z", "y"}, [](d1 x, d1 z, d1 y) {
      qd::range_for(x.shape(0), [&](qd::i32 i) {
        const auto p = x[i], q = z[i];
        y[i] = qd::sin(p) * qd::exp(q) + qd::sqrt(p * p + 1.0) / (1.0 + q * q) + qd::pow(p * p + 0.5, q) +
               qd::tanh(p - q) + qd::log(1.0 + p * p) + qd::max(p, q) * qd::abs(q) + qd::atan2(p, q + 2.0) +
               qd::cos(q) / p + qd::min(p * q, 0.25) - qd::floor(p * 3.0) + 1.0 / (p * q + 2.0);
      });
    });
    auto stencil = qd::kernel("fwd_stencil", {"x", "y"}, [](d1 x, d1 y) {
      qd::range_for(1, x.shape(0) - 1, [&](qd::i32 i) { y[i] = x[i] * (x[i - 1] - 2.0 * x[i] + x[i + 1]); });
      qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] += 0.5 * x[i] * x[i]; });
    });
    auto reduce = qd::kernel("fwd_reduce", {"x", "w", "e"}, [](d1 x, d1 w, d0 e) {
      qd::range_for(x.shape(0), [&](qd::i32 i) { e() += x[i] * x[i] * w[i]; });
      qd::var<double> total = 0.0;
      qd::range_for(x.shape(0), [&](qd::i32 i) { total += qd::sin(x[i]); });
      e() += total * total;
    });
    auto x = array_of({0.3, -0.7, 1.2, 0.45, 0.9}), z = array_of({0.2, 0.6, -0.4, 1.1, -0.8});
    auto y = array_of(vec(5, 0.0));
    qd::ndarray<double, 0> e(qd::needs_grad);
    e.from_host({0.25});
    check_forward_mode(
        {slot_of(x), slot_of(z), slot_of(y)}, [&] { math(x, z, y); }, [&] { math.fwd(x, z, y); },
        [&] { math.grad(x, z, y); });
    check_forward_mode(
        {slot_of(x), slot_of(y)}, [&] { stencil(x, y); }, [&] { stencil.fwd(x, y); }, [&] { stencil.grad(x, y); });
    check_forward_mode(
        {slot_of(x), slot_of(z), slot_of(e)}, [&] { reduce(x, z, e); }, [&] { reduce.fwd(x, z, e); },
        [&] { reduce.grad(x, z, e); });
    if (a == qd::arch::cpu) {  // the tangent splits into constructs like any kernel (the reference runs whole)
      CHECK(stencil.fwd.per_offload_cache_observations().frontend_constructs_total == 2);
      CHECK(stencil.fwd.per_offload_cache_observations().fallback == qd::fallback_reason::none);
    }
  }
}

TEST_CASE("forward mode: a serial loop carrying a variable, branches, a while loop, and an in-place update") {
  qd_test::init_arch(qd::arch::reference);
  auto horner = qd::kernel("fwd_horner", {"x", "c", "y"}, [](d1 x, d1 c, d1 y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      qd::var<double> p = 1.0;
      qd::range_for(0, c.shape(0), [&](qd::i32 j) { p = p * x[i] + c[j] * qd::cos(p); });
      y[i] = p;
    });
  });
  auto branches = qd::kernel("fwd_branches", {"x", "y"}, [](d1 x, d1 y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      qd::var<double> v = x[i];
      qd::if_(x[i] > 0.0, [&] { v = v * v * 3.0; }).else_([&] { v = qd::sin(v) + 1.0; });
      y[i] = v * x[i];
    });
  });
  auto drag = qd::kernel("fwd_drag", {"v"},
                         [](d1 v) { qd::range_for(v.shape(0), [&](qd::i32 i) { v[i] += -0.7 * v[i] * v[i] * 0.1; }); });
  auto x = array_of({0.3, -0.7, 1.2, 0.45}), c = array_of({0.5, -0.25, 0.75}), y = array_of(vec(4, 0.0));
  check_forward_mode(
      {slot_of(x), slot_of(c), slot_of(y)}, [&] { horner(x, c, y); }, [&] { horner.fwd(x, c, y); },
      [&] { horner.grad(x, c, y); });
  check_forward_mode(
      {slot_of(x), slot_of(y)}, [&] { branches(x, y); }, [&] { branches.fwd(x, y); }, [&] { branches.grad(x, y); });
  // A while loop and a continue: the adjoint refuses both; the tangent follows the forward's own control flow.
  auto halving = qd::kernel("fwd_while", {"x", "y"}, [](d1 x, d1 y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      qd::var<double> v = x[i] * x[i] + 3.0;
      qd::while_([&] { return v > 1.0; }, [&] { v = v * 0.5 + 0.1 * x[i]; });
      qd::var<double> s = 0.0;
      qd::range_for(0, 4, [&](qd::i32 j) {
        qd::if_(qd::cast<double>(j) > v * 4.0, [&] { qd::continue_(); });
        s += qd::sin(v * qd::cast<double>(j + 1));
      });
      y[i] = v + s;
    });
  });
  CHECK_THROWS_AS(halving.grad(x, y), qd::user_error);
  check_forward_mode(
      {slot_of(x), slot_of(y)}, [&] { halving(x, y); }, [&] { halving.fwd(x, y); }, {});
  // v[i] += -c v[i]^2 dt in place: the adjoint refuses it; the tangent runs with the forward, so it is exact.
  CHECK_THROWS_AS(drag.grad(x), qd::user_error);
  check_forward_mode(
      {slot_of(x)}, [&] { drag(x); }, [&] { drag.fwd(x); }, {});
}

namespace {
struct fwd_pair {
  d1 x, y;
};
struct fwd_pair_host {
  const qd::ndarray<double, 1>& x;
  const qd::ndarray<double, 1>& y;
};
}  // namespace

TEST_CASE("forward mode through a struct argument: its arrays' tangents once .dual() made them") {
  qd_test::init_arch(qd::arch::reference);
  auto square = qd::kernel("fwd_struct", {"p"}, [](fwd_pair p) {
    qd::range_for(p.x.shape(0), [&](qd::i32 i) { p.y[i] = p.x[i] * p.x[i]; });
  });
  auto x = array_of({0.5, -1.5, 2.0}), y = array_of(vec(3, 0.0));
  x.dual().from_host({1.0, 2.0, -1.0});
  CHECK_THROWS_WITH_AS(square.fwd(fwd_pair_host{x, y}), Contains("call its .dual() once before kernel.fwd"),
                       qd::user_error);
  y.dual();
  square.fwd(fwd_pair_host{x, y});
  CHECK(y.to_host() == vec{0.25, 2.25, 4.0});
  CHECK(y.dual().to_host() == vec{1.0, -6.0, -4.0});
}

TEST_CASE("forward mode: refused kernels name the statement and its line; tapes do not record kernel.fwd") {
  qd_test::init_arch(qd::arch::reference);
  // clang-format off
  const int max_line = __LINE__ + 2;
  auto extremum = qd::kernel("fwd_max", {"x", "m"}, [](d1 x, d0 m) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { qd::atomic_max(m(), x[i]); });
  });
  const int race_line = __LINE__ + 2;
  auto racing = qd::kernel("fwd_race", {"b"}, [](d1 b) {
    qd::range_for(b.shape(0), [&](qd::i32 i) { b[i] += b[2] * 0.5; });
  });
  // clang-format on
  auto x = array_of({0.3, -0.7, 1.2}), b = array_of({1.0, 2.0, 3.0});
  qd::ndarray<double, 0> m(qd::needs_grad);
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const qd::user_error& error) {
      return error.what();
    }
    return "(no qd::user_error)";
  };
  const std::string max_error = message([&] { extremum.fwd(x, m); });
  CHECK_MESSAGE(max_error.find("kernel 'fwd_max': no tangent kernel (kernel.fwd): qd::atomic_max on a float") !=
                    std::string::npos,
                max_error);
  CHECK_MESSAGE(max_error.find("gradient_api_test.cpp:" + std::to_string(max_line)) != std::string::npos, max_error);
  const std::string race_error = message([&] { racing.fwd(b); });
  CHECK_MESSAGE(race_error.find("may read the elements of 'b'") != std::string::npos, race_error);
  CHECK_MESSAGE(race_error.find("gradient_api_test.cpp:" + std::to_string(race_line)) != std::string::npos, race_error);
  CHECK(b.to_host() == vec{1.0, 2.0, 3.0});  // refused before anything ran
  auto last = qd::kernel("fwd_last", {"x", "m"}, [](d1 x, d0 m) {
    qd::var<double> t = 0.0;
    qd::range_for(x.shape(0), [&](qd::i32 i) { t = x[i] * x[i]; });
    m() = t;
  });
  CHECK_THROWS_WITH_AS(last.fwd(x, m), Contains("a plain assignment to a top-level qd::var inside a parallel"),
                       qd::user_error);

  auto square = qd::kernel("fwd_square", {"x", "loss"},
                           [](d1 x, d0 loss) { qd::range_for(x.shape(0), [&](qd::i32 i) { loss() += x[i] * x[i]; }); });
  qd::ndarray<double, 0> loss(qd::needs_grad);
  {
    qd::ad::tape tape(loss);
    x.dual().from_host({1.0, 0.0, 0.0});
    square.fwd(x, loss);  // not recorded: backward runs nothing
    tape.backward();
  }
  CHECK(loss.dual().to_host()[0] == doctest::Approx(0.6));
  CHECK(x.grad().to_host() == vec(3, 0.0));
  qd::ndarray<double, 1> plain(3);
  CHECK_THROWS_WITH_AS(square.fwd(plain, loss), Contains("qd::needs_grad"), qd::user_error);
}

TEST_CASE("custom_grad: k.grad and a tape mixing it with ordinary kernels run the given backward kernel") {
  for (qd::arch a : qd_test::cpu_and_reference) {
    qd_test::init_arch(a);
    CAPTURE(std::string(qd::name(a)));
    auto scale = qd::kernel("scale", {"x", "s"}, [](d1 x, d1 s) {
      qd::range_for(x.shape(0), [&](qd::i32 i) { s[i] = 3.0 * x[i] + 0.25; });
    });
    // A rounding step whose gradient is taken as 1 (a straight-through estimator): the derived
    // adjoint would give 0.
    auto round_fwd = qd::kernel("round_fwd", {"s", "r"}, [](d1 s, d1 r) {
      qd::range_for(s.shape(0), [&](qd::i32 i) { r[i] = qd::floor(s[i] * 4.0) * 0.25; });
    });
    auto round_bwd = qd::kernel("round_bwd", {"s", "r"}, [](d1 s, d1 r) {
      qd::range_for(s.shape(0), [&](qd::i32 i) {
        s.grad()[i] += r.grad()[i];
        r.grad()[i] = 0.0;
      });
    });
    auto energy = qd::kernel("energy", {"r", "w", "loss"}, [](d1 r, d1 w, d0 loss) {
      qd::range_for(r.shape(0), [&](qd::i32 i) { loss() += w[i] * r[i] * r[i]; });
    });
    auto round = qd::ad::custom_grad(round_fwd, round_bwd);
    const vec x0{0.1, -0.45, 0.8, 1.3}, w0{1.0, -2.0, 0.5, 3.0};
    auto x = array_of(x0), s = array_of(vec(4, 0.0)), r = array_of(vec(4, 0.0)), w = array_of(w0);
    qd::ndarray<double, 0> loss(qd::needs_grad);
    {
      qd::ad::tape tape(loss, {.clear_gradients = true});
      scale(x, s);
      round(s, r);
      energy(r, w, loss);
      tape.backward();
    }
    vec want(4), rounded(4);
    for (std::size_t i = 0; i < 4; ++i) {
      rounded[i] = std::floor((3.0 * x0[i] + 0.25) * 4.0) * 0.25;
      want[i] = 3.0 * 2.0 * w0[i] * rounded[i];  // d(w r^2)/dr, through the straight-through step, times ds/dx
    }
    CHECK(r.to_host() == rounded);
    CHECK(x.grad().to_host() == want);
    // By hand: k.grad(args) runs the backward kernel.
    s.grad().fill(0.0);
    r.grad().from_host({1.0, 2.0, 3.0, 4.0});
    round.grad(s, r);
    CHECK(s.grad().to_host() == vec{1.0, 2.0, 3.0, 4.0});
    CHECK(r.grad().to_host() == vec(4, 0.0));
    // The forward kernel itself keeps its derived adjoint (the floor: zero gradient).
    s.grad().fill(0.0);
    r.grad().fill(1.0);
    round_fwd.grad(s, r);
    CHECK(s.grad().to_host() == vec(4, 0.0));
    // The backward kernel may read whatever the forward read: a later accumulation into s is refused.
    auto bump = qd::kernel("bump", {"s"}, [](d1 s) { qd::range_for(s.shape(0), [&](qd::i32 i) { s[i] += 1.0; }); });
    qd::ad::tape tape(loss);
    round(s, r);
    bump(s);
    energy(r, w, loss);
    CHECK_THROWS_WITH_AS(tape.backward(), Contains("round_fwd"), qd::user_error);
  }
}

TEST_CASE("custom_grad with gradcheck: a correct hand-written backward passes, a straight-through one does not") {
  qd_test::init_arch(qd::arch::reference);
  auto cube = qd::kernel("cube", {"x", "y"},
                         [](d1 x, d1 y) { qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = x[i] * x[i] * x[i]; }); });
  auto exact = qd::kernel("cube_bwd", {"x", "y"}, [](d1 x, d1 y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      x.grad()[i] += 3.0 * x[i] * x[i] * y.grad()[i];
      y.grad()[i] = 0.0;
    });
  });
  auto straight = qd::kernel("cube_bwd_straight", {"x", "y"}, [](d1 x, d1 y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      x.grad()[i] += y.grad()[i];
      y.grad()[i] = 0.0;
    });
  });
  auto x = array_of({0.5, -1.2, 2.0}), y = array_of(vec(3, 0.0));
  auto good = qd::ad::custom_grad(cube, exact);
  const qd::ad::gradcheck_result r = qd::ad::gradcheck(good, x, y);
  CHECK_MESSAGE(r.ok, r.worst);
  auto bad = qd::ad::custom_grad(cube, straight);
  CHECK_FALSE(qd::ad::gradcheck(bad, x, y).ok);
}

TEST_CASE("custom_grad: a backward kernel whose parameters differ is refused, naming both kernels") {
  qd_test::init_arch(qd::arch::reference);
  auto f = qd::kernel("f", {"x", "y"}, [](d1 x, d1 y) { qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = x[i]; }); });
  auto b_type = qd::kernel("b_type", {"x", "y"}, [](d1 x, qd::types::ndarray<float, 1, qd::needs_grad> y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x.grad()[i] += qd::cast<double>(y.grad()[i]); });
  });
  auto b_count = qd::kernel("b_count", {"x"}, [](d1 x) { qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 0.0; }); });
  auto b_grad = qd::kernel("b_grad", {"x", "y"}, [](d1 x, qd::types::ndarray<double, 1> y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x.grad()[i] += y[i]; });
  });
  CHECK_THROWS_WITH_AS(qd::ad::custom_grad(f, b_type),
                       Contains("the backward kernel 'b_type' does not take the forward kernel 'f''s parameters: "
                                "parameter 1"),
                       qd::user_error);
  CHECK_THROWS_WITH_AS(qd::ad::custom_grad(f, b_count), Contains("parameter 1 is parameter 'y'"), qd::user_error);
  CHECK_THROWS_WITH_AS(qd::ad::custom_grad(f, b_count), Contains("and missing in 'b_count'"), qd::user_error);
  CHECK_THROWS_WITH_AS(qd::ad::custom_grad(f, b_grad), Contains("parameter 1"), qd::user_error);
}

namespace {

// A slot for an array of vectors or matrices of doubles: its components, flat.
template <class E, int N>
slot composite_slot_of(qd::ndarray<E, N>& a) {
  using host = typename qd::ndarray<E, N>::host_value_type;
  constexpr std::size_t k = sizeof(host) / sizeof(double);
  auto flat = [](const std::vector<host>& v) {
    vec out(v.size() * k);
    std::memcpy(out.data(), v.data(), out.size() * sizeof(double));
    return out;
  };
  auto elements = [](const vec& v) {
    std::vector<host> out(v.size() / k);
    std::memcpy(out.data(), v.data(), v.size() * sizeof(double));
    return out;
  };
  return {[&a, flat] { return flat(a.to_host()); },
          [&a, flat] { return flat(a.dual().to_host()); },
          [&a, flat] { return flat(a.grad().to_host()); },
          [&a, elements](const vec& v) { a.from_host(elements(v)); },
          [&a, elements](const vec& v) { a.dual().from_host(elements(v)); },
          [&a, elements](const vec& v) { a.grad().from_host(elements(v)); }};
}

}  // namespace

TEST_CASE("needs_grad on arrays of qd::vec and qd::mat: .grad() and .dual() of the same element type") {
  using v2 = qd::types::ndarray<qd::vec2d, 1, qd::needs_grad>;
  using m2 = qd::types::ndarray<qd::mat2d, 1, qd::needs_grad>;
  for (qd::arch a : qd_test::cpu_and_reference) {
    qd_test::init_arch(a);
    CAPTURE(std::string(qd::name(a)));
    auto apply = qd::kernel("apply", {"m", "v", "y"}, [](m2 m, v2 v, v2 y) {
      qd::range_for(v.shape(0), [&](qd::i32 i) { y[i] = m[i] * v[i]; });
    });
    const std::vector<std::array<std::array<double, 2>, 2>> m0{{{{1.0, 2.0}, {-0.5, 3.0}}},
                                                               {{{0.25, -1.0}, {4.0, 0.5}}}};
    const std::vector<std::array<double, 2>> v0{{0.5, -1.5}, {2.0, 0.75}}, seed{{1.0, -2.0}, {0.5, 3.0}};
    qd::ndarray<qd::mat2d, 1> m(2, qd::needs_grad);
    qd::ndarray<qd::vec2d, 1> v(2, qd::needs_grad), y(2, qd::needs_grad);
    m.from_host(m0);
    v.from_host(v0);
    apply(m, v, y);
    y.grad().from_host(seed);
    apply.grad(m, v, y);
    // y = m v: v.grad = m^T seed, m.grad = seed v^T (computed here on the host).
    const auto gv = v.grad().to_host();
    const auto gm = m.grad().to_host();
    for (std::size_t e = 0; e < 2; ++e)
      for (std::size_t r = 0; r < 2; ++r) {
        CHECK(gv[e][r] == m0[e][0][r] * seed[e][0] + m0[e][1][r] * seed[e][1]);
        for (std::size_t c = 0; c < 2; ++c) CHECK(gm[e][r][c] == seed[e][r] * v0[e][c]);
      }
    // In a kernel, v.grad()[i] is a vector of the gradient buffer.
    auto twice = qd::kernel("twice_grad", {"v", "out"}, [](v2 v, qd::types::ndarray<qd::vec2d, 1> out) {
      qd::range_for(v.shape(0), [&](qd::i32 i) { out[i] = v.grad()[i] * 2.0; });
    });
    qd::ndarray<qd::vec2d, 1> out(2);
    twice(v, out);
    const auto doubled = out.to_host();
    for (std::size_t e = 0; e < 2; ++e)
      for (std::size_t r = 0; r < 2; ++r) CHECK(doubled[e][r] == 2.0 * gv[e][r]);
    m.grad().fill({{{0, 0}, {0, 0}}});
    v.grad().fill({0, 0});
    // A nonlinear kernel on vectors: forward mode against central differences, and against the adjoint.
    auto spin = qd::kernel("spin", {"m", "v", "y"}, [](m2 m, v2 v, v2 y) {
      qd::range_for(v.shape(0), [&](qd::i32 i) {
        qd::mat2d mm = m[i];
        qd::vec2d w = mm * v[i];
        y[i] += qd::vec2d(qd::sin(w[0]) * w[1], w[0] * w[0]) + v[i] * mm(0, 1);
      });
    });
    check_forward_mode(
        {composite_slot_of(m), composite_slot_of(v), composite_slot_of(y)}, [&] { spin(m, v, y); },
        [&] { spin.fwd(m, v, y); }, [&] { spin.grad(m, v, y); });
  }
  qd::ndarray<qd::vec3f, 1> plain(2);
  CHECK_FALSE(plain.has_grad());
  CHECK_THROWS_AS(plain.grad(), qd::user_error);
}
