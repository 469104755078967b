// kernel.grad and qd::ad::tape (SPEC §11.5): each statement kind's gradient against
// its analytic derivative and against central finite differences in double
// precision, on the CPU and on the reference interpreter; the unsupported cases'
// errors; the autodiff fallback and the cache.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/runtime_test_support.hpp"

using doctest::Contains;

namespace {

using vec = std::vector<double>;

// Runs `body` once on the CPU and once on the reference interpreter.
template <class Body>
void on_each_arch(Body&& body) {
  for (qd::arch a : {qd::arch::cpu, qd::arch::reference}) {
    std::string arch_name(qd::name(a));
    CAPTURE(arch_name);
    qd::init({.arch = a});
    body();
  }
}

qd::ndarray<double, 1> array_of(const vec& v, bool grad = true) {
  qd::ndarray<double, 1> a = grad ? qd::ndarray<double, 1>(static_cast<std::int64_t>(v.size()), qd::needs_grad)
                                  : qd::ndarray<double, 1>(static_cast<std::int64_t>(v.size()));
  a.from_host(v);
  if (grad) a.grad().fill(0.0);
  return a;
}

vec inputs(std::size_t n, double scale = 1.0) {
  vec v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * (0.3 + 0.7 * std::sin(1.7 * static_cast<double>(i) + 0.4));
  return v;
}

// Central finite differences of f at x, one coordinate at a time.
vec finite_differences(const std::function<double(const vec&)>& f, const vec& x, double h = 1e-6) {
  vec g(x.size());
  for (std::size_t j = 0; j < x.size(); ++j) {
    vec hi = x, lo = x;
    hi[j] += h;
    lo[j] -= h;
    g[j] = (f(hi) - f(lo)) / (2 * h);
  }
  return g;
}

void check_close(const vec& got, const vec& want, double rel = 1e-6) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::abs(got[i] - want[i]) <= rel * std::max(1.0, std::abs(want[i])));
  }
}

double dot(const vec& a, const vec& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

TEST_CASE("an elementwise kernel's adjoint gives the analytic derivative and matches finite differences") {
  auto k = qd::kernel("elementwise", {"x", "y"},
                      [](qd::types::ndarray<double, 1, qd::needs_grad> x, qd::types::ndarray<double, 1, qd::needs_grad> y) {
                        qd::range_for(x.shape(0), [&](qd::i32 i) {
                          qd::f64 v = x[i];
                          y[i] = qd::sin(v) * v + qd::exp(v * 0.5) - v / (v * v + 1.0);
                        });
                      });
  const vec x0 = inputs(9), w = inputs(9, 2.0);
  on_each_arch([&] {
    auto forward = [&](const vec& xs) {
      auto x = array_of(xs), y = array_of(vec(xs.size(), 0.0));
      k(x, y);
      return dot(y.to_host(), w);
    };
    auto x = array_of(x0), y = array_of(vec(x0.size(), 0.0));
    k(x, y);
    y.grad().from_host(w);
    k.grad(x, y);
    vec analytic(x0.size());
    for (std::size_t i = 0; i < x0.size(); ++i) {
      double v = x0[i];
      analytic[i] = w[i] * (std::cos(v) * v + std::sin(v) + 0.5 * std::exp(0.5 * v) - (1 - v * v) / ((v * v + 1) * (v * v + 1)));
    }
    check_close(x.grad().to_host(), analytic, 1e-12);
    check_close(x.grad().to_host(), finite_differences(forward, x0));
    check_close(y.grad().to_host(), vec(x0.size(), 0.0));  // a plain store's adjoint zeroes what it read
  });
}

TEST_CASE("SPEC §11.5: energy accumulates 2 x into x.grad; the adjoint stays whole (autodiff)") {
  auto energy = qd::kernel("energy", [](qd::types::ndarray<float, 1, qd::needs_grad> x,
                                        qd::types::ndarray<float, 0, qd::needs_grad> e) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { e() += x[i] * x[i]; });
  });
  on_each_arch([&] {
    qd::ndarray<float, 1> x(5, qd::needs_grad);
    qd::ndarray<float, 0> e(qd::needs_grad);
    x.from_host(std::vector<float>{1, 2, 3, 4, 5});
    x.grad().fill(0.0f);
    e.fill(0.0f);
    energy(x, e);
    CHECK(e.to_host()[0] == doctest::Approx(55.0f));
    e.grad().fill(1.0f);
    energy.grad(x, e);
    CHECK(x.grad().to_host() == std::vector<float>{2, 4, 6, 8, 10});
    CHECK(e.grad().to_host()[0] == 1.0f);  // accumulation does not zero
    energy.grad(x, e);
    CHECK(x.grad().to_host() == std::vector<float>{4, 8, 12, 16, 20});  // gradients accumulate
    auto obs = energy.grad.per_offload_cache_observations();
    CHECK(obs.frontend_constructs_total == -1);
    CHECK(obs.fallback == qd::fallback_reason::autodiff);
  });
}
