// qd::ad::gradcheck and the tape's clear_gradients option (SPEC §13.9): gradcheck
// against hand-derived gradients, its report at a kink, its options, and arrays left as
// they were; clear_gradients against the default accumulation.
#include <doctest/doctest.h>

#include <cmath>
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
