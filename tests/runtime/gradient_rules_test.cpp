// No silent wrong gradient (issue 27 item 1): accumulations into data whose value the
// adjoint needs are refused, inside one kernel and across a tape's launches, naming the
// statement and its line; the patterns next to them that the adjoint does make exact
// agree with central finite differences in f64.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "runtime/runtime_test_support.hpp"
#include "support/finite_differences.hpp"

using doctest::Contains;

namespace {

using qd_test::central_differences;
using qd_test::check_close;
using vec = std::vector<double>;
using d1 = qd::types::ndarray<double, 1, qd::needs_grad>;
using d0 = qd::types::ndarray<double, 0, qd::needs_grad>;
constexpr double dt = 0.1;

qd::ndarray<double, 1> array_of(const vec& v) {
  qd::ndarray<double, 1> a(static_cast<std::int64_t>(v.size()), qd::needs_grad);
  a.from_host(v);
  a.grad().fill(0.0);
  return a;
}

vec start(std::size_t n, double phase) {
  vec v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = 0.8 + 0.4 * std::sin(1.3 * static_cast<double>(i) + phase);
  return v;
}

template <class K, class... A>
std::string grad_error(K& k, A&&... args) {
  try {
    k.grad(args...);
  } catch (const qd::user_error& e) {
    return e.what();
  }
  return "(no error)";
}

auto energy_kernel() {
  return qd::kernel("energy", {"x", "loss"},
                    [](d1 x, d0 loss) { qd::range_for(x.shape(0), [&](qd::i32 i) { loss() += x[i] * x[i]; }); });
}

}  // namespace

TEST_CASE("v[i] += -c * v[i] * v[i] * dt (nonlinear drag in place) is refused, naming the statement and line") {
  qd_test::init_arch(qd::arch::reference);
  auto drag = qd::kernel("drag", {"v", "c"}, [](d1 v, qd::f64 c) {
    qd::range_for(v.shape(0), [&](qd::i32 i) { v[i] += -c * v[i] * v[i] * dt; });
  });
  auto v = array_of(start(4, 0.2));
  drag(v, 0.7);
  const std::string e = grad_error(drag, v, 0.7);
  CHECK_MESSAGE(e.find("kernel 'drag'") != std::string::npos, e);
  CHECK_MESSAGE(e.find("the accumulation into 'v'[...]") != std::string::npos, e);
  CHECK_MESSAGE(e.find("gradient_rules_test.cpp:") != std::string::npos, e);  // the user's line
  CHECK_MESSAGE(e.find("another array") != std::string::npos, e);             // the remedy
  CHECK_MESSAGE(grad_error(drag, v, 0.7) == e, "refused again on the next call");
}

TEST_CASE("a linear in-place update, a read after the owned update, and the drag through a copy are exact") {
  for (qd::arch a : qd_test::cpu_and_reference) {
    qd_test::init_arch(a);
    CAPTURE(std::string(qd::name(a)));
    // v[i] += c * v[i] * dt: the increment's derivative does not depend on v.
    auto damp = qd::kernel("damp", {"v", "loss"}, [](d1 v, d0 loss) {
      qd::range_for(v.shape(0), [&](qd::i32 i) { v[i] += -0.7 * v[i] * dt; });
      qd::range_for(v.shape(0), [&](qd::i32 i) { loss() += v[i] * v[i] * v[i]; });  // reads after: sees the new v
    });
    auto run_damp = [&](const vec& v0, bool backward) {
      auto v = array_of(v0);
      qd::ndarray<double, 0> loss(qd::needs_grad);
      damp(v, loss);
      if (backward) {
        loss.grad().fill(1.0);
        damp.grad(v, loss);
      }
      return std::pair{loss.to_host()[0], v.grad().to_host()};
    };
    const vec v0 = start(5, 0.4);
    check_close(run_damp(v0, true).second,
                central_differences([&](const vec& v) { return run_damp(v, false).first; }, v0));

    // The drag, with the increment read from a copy made by an earlier launch, on a tape.
    auto copy = qd::kernel("copy", {"from", "to"},
                           [](d1 from, d1 to) { qd::range_for(from.shape(0), [&](qd::i32 i) { to[i] = from[i]; }); });
    auto drag = qd::kernel("drag_from_copy", {"v", "old", "c"}, [](d1 v, d1 old, qd::f64 c) {
      qd::range_for(v.shape(0), [&](qd::i32 i) { v[i] += -c * old[i] * old[i] * dt; });
    });
    auto energy = energy_kernel();
    auto run_drag = [&](const vec& v0s, bool backward) {
      auto v = array_of(v0s);
      std::vector<qd::ndarray<double, 1>> olds;  // one copy per step: a tape's launch may not overwrite an earlier read
      for (int step = 0; step < 3; ++step) olds.push_back(array_of(vec(v0s.size(), 0.0)));
      qd::ndarray<double, 0> loss(qd::needs_grad);
      qd::ad::tape tape(loss);
      for (auto& old : olds) {
        copy(v, old);
        drag(v, old, 0.7);
      }
      energy(v, loss);
      if (backward) tape.backward();
      return std::pair{loss.to_host()[0], v.grad().to_host()};
    };
    check_close(run_drag(v0, true).second,
                central_differences([&](const vec& v) { return run_drag(v, false).first; }, v0));
  }
}

TEST_CASE("a read the adjoint needs, then an accumulation into the same element, in one kernel: refused") {
  qd_test::init_arch(qd::arch::reference);
  auto v = array_of(start(4, 0.1)), out = array_of(vec(4, 0.0));
  SUBCASE("in one iteration of a parallel loop") {
    auto k = qd::kernel("read_then_add", {"x", "y"}, [](d1 x, d1 y) {
      qd::range_for(x.shape(0), [&](qd::i32 i) {
        y[i] = x[i] * x[i];
        x[i] += 1.0;
      });
    });
    k(v, out);
    const std::string e = grad_error(k, v, out);
    CHECK_MESSAGE(e.find("the accumulation into 'x'[...]") != std::string::npos, e);
    CHECK_MESSAGE(e.find("gradient_rules_test.cpp:") != std::string::npos, e);
  }
  SUBCASE("in a later statement") {
    auto k = qd::kernel("read_then_add_later", {"x", "y"}, [](d1 x, d1 y) {
      qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = qd::sin(x[i]); });
      qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] += y[i]; });
    });
    k(v, out);
    CHECK_MESSAGE(grad_error(k, v, out).find("the accumulation into 'x'[...]") != std::string::npos,
                  grad_error(k, v, out));
  }
  SUBCASE("through qd::atomic_add into another iteration's element") {
    auto k = qd::kernel("scatter_into_read", {"x", "y"}, [](d1 x, d1 y) {
      qd::range_for(x.shape(0) - 1, [&](qd::i32 i) {
        y[i] = x[i] * x[i];
        qd::atomic_add(x[i + 1], 0.5);
      });
    });
    k(v, out);
    CHECK_MESSAGE(grad_error(k, v, out).find("other iterations of this parallel qd::range_for accumulate into 'x'") !=
                      std::string::npos,
                  grad_error(k, v, out));
  }
  SUBCASE("a plain store into another iteration's element, read in this one (a race the access rule now covers)") {
    auto k = qd::kernel("store_then_read_shifted", {"x", "y"}, [](d1 x, d1 y) {
      qd::range_for(x.shape(0) - 1, [&](qd::i32 i) {
        x[i + 1] = 2.0;
        y[i] = x[i] * x[i];
      });
    });
    const std::string e = grad_error(k, v, out);
    CHECK_MESSAGE(e.find("the plain store to 'x'[...] in a parallel qd::range_for whose iterations may write the same "
                         "elements") != std::string::npos,
                  e);
  }
  SUBCASE("in a serial loop whose later iterations add into what earlier ones read") {
    auto k = qd::kernel("serial_read_then_add", {"x", "y"}, [](d1 x, d1 y) {
      qd::range_for(1, [&](qd::i32) {
        qd::range_for(x.shape(0), [&](qd::i32 j) {
          y[j] = x[0] * x[0];
          x[0] += 1.0;
        });
      });
    });
    k(v, out);
    CHECK_MESSAGE(grad_error(k, v, out).find("the accumulation into 'x'[0]") != std::string::npos,
                  grad_error(k, v, out));
  }
}

TEST_CASE("a linear read racing with other iterations' accumulations, and racing stores: refused") {
  qd_test::init_arch(qd::arch::reference);
  auto v = array_of(start(4, 0.1)), out = array_of(vec(4, 0.0));
  auto shifted_sum = qd::kernel("shifted_sum", {"x", "y"}, [](d1 x, d1 y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] += x[2] + y[i]; });  // linear, but x[2] changes as others run
  });
  CHECK_MESSAGE(
      grad_error(shifted_sum, v, out).find("other iterations of this parallel qd::range_for") != std::string::npos,
      grad_error(shifted_sum, v, out));
  auto last_wins = qd::kernel("last_wins", {"x", "y"},
                              [](d1 x, d1 y) { qd::range_for(x.shape(0), [&](qd::i32 i) { y[0] = x[i]; }); });
  CHECK_MESSAGE(grad_error(last_wins, v, out).find("may write the same elements of 'y'") != std::string::npos,
                grad_error(last_wins, v, out));
  // One iteration: nothing races (the serial-block idiom).
  auto single = qd::kernel("single_iteration", {"x", "y"},
                           [](d1 x, d1 y) { qd::range_for(1, [&](qd::i32) { y[0] = x[1] * x[2]; }); });
  single(v, out);
  CHECK(grad_error(single, v, out) == "(no error)");
}

TEST_CASE("an in-place integrator on one tape: the drift's += into x is refused at backward(), naming both kernels") {
  qd_test::init_arch(qd::arch::reference);
  auto force = qd::kernel("cubic_force", {"x", "v"}, [](d1 x, d1 v) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { v[i] += -0.5 * x[i] * x[i] * x[i] * dt; });
  });
  auto drift = qd::kernel("drift", {"x", "v"},
                          [](d1 x, d1 v) { qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] += v[i] * dt; }); });
  auto energy = energy_kernel();
  auto x = array_of(start(3, 0.5)), v = array_of(start(3, 1.5));
  qd::ndarray<double, 0> loss(qd::needs_grad);
  qd::ad::tape tape(loss);
  force(x, v);
  drift(x, v);
  energy(x, loss);
  CHECK_THROWS_WITH_AS(
      tape.backward(),
      Contains("launch 2 (kernel 'drift') accumulates into elements of parameter 'x' (#0, "
               "ndarray<f64, 1, needs_grad>) that launch 1 (kernel 'cubic_force') read as parameter 'x'"),
      qd::user_error);
}

TEST_CASE("a tape: a later += into data an earlier launch read linearly is exact; a later atomic_max is refused") {
  for (qd::arch a : qd_test::cpu_and_reference) {
    qd_test::init_arch(a);
    CAPTURE(std::string(qd::name(a)));
    auto scale = qd::kernel("scale", {"x", "y"},
                            [](d1 x, d1 y) { qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] += 3.0 * x[i]; }); });
    auto bump = qd::kernel("bump", {"x", "y"},
                           [](d1 x, d1 y) { qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] += y[i] * dt; }); });
    auto energy = energy_kernel();
    auto run = [&](const vec& x0, bool backward) {
      auto x = array_of(x0), y = array_of(start(x0.size(), 2.0));
      qd::ndarray<double, 0> loss(qd::needs_grad);
      qd::ad::tape tape(loss);
      scale(x, y);
      bump(x, y);
      energy(x, loss);
      energy(y, loss);
      if (backward) tape.backward();
      return std::pair{loss.to_host()[0], x.grad().to_host()};
    };
    const vec x0 = start(4, 0.7);
    check_close(run(x0, true).second, central_differences([&](const vec& x) { return run(x, false).first; }, x0));
  }
  qd_test::init_arch(qd::arch::reference);
  auto square = qd::kernel("square", {"x", "y"},
                           [](d1 x, d1 y) { qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = x[i] * x[i]; }); });
  auto clamp_up = qd::kernel("clamp_up", {"x"}, [](qd::types::ndarray<double, 1> x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { qd::atomic_max(x[i], 0.9); });
  });
  auto x = array_of(start(3, 0.3)), y = array_of(vec(3, 0.0));
  qd::ndarray<double, 0> loss(qd::needs_grad);
  qd::ad::tape tape(loss);
  square(x, y);
  clamp_up(x);
  CHECK_THROWS_WITH_AS(tape.backward(), Contains("launch 2 (kernel 'clamp_up') overwrites elements of parameter 'x'"),
                       qd::user_error);
}
