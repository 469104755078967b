// kernel.grad and qd::ad::tape (SPEC §11.5): each statement kind's gradient against
// its analytic derivative and against central finite differences in double
// precision, on the CPU and on the reference interpreter; the unsupported cases'
// errors; the autodiff fallback and the cache.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <string>
#include <vector>

#include "runtime/runtime_test_support.hpp"
#include "support/finite_differences.hpp"
#include "support/log_capture.hpp"

using doctest::Contains;

namespace {

using qd_test::central_differences;
using qd_test::check_close;
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

double dot(const vec& a, const vec& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

TEST_CASE("an elementwise kernel's adjoint gives the analytic derivative and matches finite differences") {
  auto k =
      qd::kernel("elementwise", {"x", "y"},
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
      analytic[i] =
          w[i] * (std::cos(v) * v + std::sin(v) + 0.5 * std::exp(0.5 * v) - (1 - v * v) / ((v * v + 1) * (v * v + 1)));
    }
    check_close(x.grad().to_host(), analytic, 1e-12);
    check_close(x.grad().to_host(), central_differences(forward, x0));
    check_close(y.grad().to_host(), vec(x0.size(), 0.0));  // a plain store's adjoint zeroes what it read
  });
}

TEST_CASE("SPEC §11.5: energy accumulates 2 x into x.grad; the adjoint stays whole (autodiff)") {
  auto energy = qd::kernel(
      "energy", [](qd::types::ndarray<float, 1, qd::needs_grad> x, qd::types::ndarray<float, 0, qd::needs_grad> e) {
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

namespace {

using d1 = qd::types::ndarray<double, 1, qd::needs_grad>;

vec positive(std::size_t n, double phase) {
  vec v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = 1.1 + 0.5 * std::sin(1.3 * static_cast<double>(i) + phase);
  return v;
}

struct gradients {
  vec x, z;
};

// Checks the gradient of L = sum_i w_i y_i for kernel k(x, z, y) with respect to x
// and z: against `analytic(x, z, w)` and against central finite differences of the
// forward kernel itself, on the CPU and the reference interpreter.
template <class K, class Analytic>
void check_gradients(K& k, const vec& x0, const vec& z0, Analytic analytic, bool finite_check = true,
                     double analytic_rel = 1e-10) {
  const vec w = positive(x0.size(), 2.0);
  const vec zeros(x0.size(), 0.0);
  on_each_arch([&] {
    auto loss = [&](const vec& xs, const vec& zs) {
      auto x = array_of(xs), z = array_of(zs), y = array_of(zeros);
      k(x, z, y);
      return dot(y.to_host(), w);
    };
    auto x = array_of(x0), z = array_of(z0), y = array_of(zeros);
    k(x, z, y);
    y.grad().from_host(w);
    k.grad(x, z, y);
    gradients want = analytic(x0, z0, w);
    check_close(x.grad().to_host(), want.x, analytic_rel);
    check_close(z.grad().to_host(), want.z, analytic_rel);
    if (!finite_check) return;
    check_close(x.grad().to_host(), central_differences([&](const vec& xs) { return loss(xs, z0); }, x0));
    check_close(z.grad().to_host(), central_differences([&](const vec& zs) { return loss(x0, zs); }, z0));
  });
}

// y[i] = f(x[i], z[i]), with the derivatives df/dx and df/dz given per element.
template <class F, class DX, class DZ>
void check_pointwise(const char* name, F f, DX dx, DZ dz, bool finite_check = true) {
  auto k = qd::kernel(name, {"x", "z", "y"}, [f](d1 x, d1 z, d1 y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = f(qd::f64(x[i]), qd::f64(z[i])); });
  });
  const vec x0 = positive(7, 0.3), z0 = positive(7, 1.9);
  check_gradients(
      k, x0, z0,
      [&](const vec& xs, const vec& zs, const vec& w) {
        gradients g{vec(xs.size()), vec(xs.size())};
        for (std::size_t i = 0; i < xs.size(); ++i) {
          g.x[i] = w[i] * dx(xs[i], zs[i]);
          g.z[i] = w[i] * dz(xs[i], zs[i]);
        }
        return g;
      },
      finite_check, finite_check ? 1e-10 : 1e-6);
}

double sq(double v) { return v * v; }

}  // namespace

TEST_CASE("arithmetic: + - * / and negation") {
  check_pointwise(
      "arithmetic", [](auto a, auto b) { return a * b + a / b - (a - b) * a - a + -b * 2.0; },
      [](double a, double b) { return 2 * b + 1 / b - 2 * a - 1; },
      [](double a, double b) { return 2 * a - a / (b * b) - 2; });
}

TEST_CASE("math functions: sqrt exp log sin cos tanh") {
  check_pointwise(
      "math",
      [](auto a, auto b) {
        return qd::sqrt(a) + qd::exp(b) + qd::log(a) + qd::sin(a * b) + qd::cos(b) + qd::tanh(a - b);
      },
      [](double a, double b) { return 0.5 / std::sqrt(a) + 1 / a + b * std::cos(a * b) + 1 - sq(std::tanh(a - b)); },
      [](double a, double b) { return std::exp(b) + a * std::cos(a * b) - std::sin(b) - (1 - sq(std::tanh(a - b))); });
}

TEST_CASE("math functions: pow abs min max floor ceil fma") {
  check_pointwise(
      "math2",
      [](auto a, auto b) {
        return qd::pow(a, b) + qd::abs(a - b) + qd::min(a, b) * 2.0 + qd::max(a * a, b) + qd::floor(a * 3.0) +
               qd::ceil(b) + qd::fma(a, b, a);
      },
      [](double a, double b) {
        return b * std::pow(a, b - 1) + (a > b ? 1.0 : -1.0) + (a < b ? 2.0 : 0.0) + (a * a > b ? 2 * a : 0.0) + b + 1;
      },
      [](double a, double b) {
        return std::pow(a, b) * std::log(a) - (a > b ? 1.0 : -1.0) + (a < b ? 0.0 : 2.0) + (a * a > b ? 0.0 : 1.0) + a;
      });
}

TEST_CASE("math functions: tan asin acos atan2 rsqrt log2 exp2 fmod floormod") {
  // x, z in [0.6, 1.6]: asin and acos take x - 1 and z / 2, inside (-1, 1).
  check_pointwise(
      "math3",
      [](auto a, auto b) {
        return qd::tan(a) + qd::asin(a - 1.0) * 2.0 + qd::acos(b * 0.5) + qd::atan2(a, b - 1.2) + qd::rsqrt(a * b) +
               qd::log2(a + b) + qd::exp2(a - b) + qd::fmod(a * 5.0, b) + qd::floormod(-a * 3.0, b);
      },
      [](double a, double b) {
        const double r2 = a * a + (b - 1.2) * (b - 1.2);
        return 1 + sq(std::tan(a)) + 2 / std::sqrt(1 - sq(a - 1)) + (b - 1.2) / r2 - 0.5 * b / std::pow(a * b, 1.5) +
               1 / ((a + b) * std::log(2.0)) + std::exp2(a - b) * std::log(2.0) + 5 - 3;
      },
      [](double a, double b) {
        const double r2 = a * a + (b - 1.2) * (b - 1.2);
        return -0.5 / std::sqrt(1 - sq(b * 0.5)) - a / r2 - 0.5 * a / std::pow(a * b, 1.5) +
               1 / ((a + b) * std::log(2.0)) - std::exp2(a - b) * std::log(2.0) - std::trunc(a * 5 / b) -
               std::floor(-a * 3 / b);
      });
}

TEST_CASE("steps and selections: round trunc fract sign clamp step floordiv have the derivative of their pieces") {
  check_pointwise(
      "steps",
      [](auto a, auto b) {
        return qd::round(a * 3.0) + qd::trunc(b * 2.0) + qd::fract(a * 4.0) * b + qd::sign(a - b) * a +
               qd::clamp(a * 2.0, 1.5, 2.5) + qd::step(1.0, b) * a + qd::floordiv(a * 7.0, b) + qd::mix(a, b, 0.25) +
               qd::smoothstep(0.5, 2.0, b);
      },
      [](double a, double b) {
        const double c = a * 2.0;
        return 4 * b +
               (a > b   ? 1.0
                : a < b ? -1.0
                        : 0.0) +
               (c > 1.5 && c < 2.5 ? 2.0 : 0.0) + (b < 1.0 ? 0.0 : 1.0) + 0.75;
      },
      [](double a, double b) {
        const double t = (b - 0.5) / 1.5;
        return (a * 4.0 - std::floor(a * 4.0)) + 0.25 + (t > 0 && t < 1 ? 6 * t * (1 - t) / 1.5 : 0.0);
      });
}

TEST_CASE("qd::select routes the gradient to the chosen side") {
  check_pointwise(
      "select", [](auto a, auto b) { return qd::select(a > b, a * a, b * 3.0); },
      [](double a, double b) { return a > b ? 2 * a : 0.0; }, [](double a, double b) { return a > b ? 0.0 : 3.0; });
}

TEST_CASE("casts: f64 -> f32 -> f64 passes the gradient; integers carry none") {
  // Through f32 the forward and the gradient lose precision: no finite differences, and f32's tolerance.
  check_pointwise(
      "casts",
      [](auto a, auto b) {
        return qd::cast<double>(qd::cast<float>(a) * 2.0f) + qd::cast<double>(qd::cast<qd::i32>(b * 10.0)) * a;
      },
      [](double, double b) { return 2 + static_cast<double>(static_cast<int>(b * 10)); },
      [](double, double) { return 0.0; }, false);
}

TEST_CASE("qd::if_ / else_ with qd::var: each branch's gradient") {
  auto k = qd::kernel("branches", {"x", "z", "y"}, [](d1 x, d1 z, d1 y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      qd::f64 a = x[i], b = z[i];
      qd::var<double> v = a;
      qd::if_(a > b, [&] { v = v * b; }).else_([&] { v = v + b * b; });
      y[i] = v * v;
    });
  });
  check_gradients(k, positive(8, 0.1), positive(8, 2.2), [](const vec& xs, const vec& zs, const vec& w) {
    gradients g{vec(xs.size()), vec(xs.size())};
    for (std::size_t i = 0; i < xs.size(); ++i) {
      double a = xs[i], b = zs[i];
      double v = a > b ? a * b : a + b * b;
      g.x[i] = w[i] * 2 * v * (a > b ? b : 1.0);
      g.z[i] = w[i] * 2 * v * (a > b ? a : 2 * b);
    }
    return g;
  });
}

TEST_CASE("qd::var reassigned in sequence inside a parallel loop") {
  auto k = qd::kernel("var_chain", {"x", "z", "y"}, [](d1 x, d1 z, d1 y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      qd::f64 a = x[i];
      qd::var<double> v = a;
      v = v * v + z[i];
      v += qd::sin(v);
      y[i] = v * a;
    });
  });
  check_gradients(k, positive(6, 0.5), positive(6, 1.0), [](const vec& xs, const vec& zs, const vec& w) {
    gradients g{vec(xs.size()), vec(xs.size())};
    for (std::size_t i = 0; i < xs.size(); ++i) {
      double a = xs[i], v1 = a * a + zs[i], v2 = v1 + std::sin(v1);
      g.x[i] = w[i] * (a * (1 + std::cos(v1)) * 2 * a + v2);
      g.z[i] = w[i] * a * (1 + std::cos(v1));
    }
    return g;
  });
}

TEST_CASE("a nested loop with a run-time bound accumulating into a qd::var") {
  // y[i] = sum_j sin(x[j] * z[i]): every x[j] feeds every y[i].
  auto k = qd::kernel("nested_sum", {"x", "z", "y"}, [](d1 x, d1 z, d1 y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      qd::var<double> s = 0.0;
      qd::range_for(x.shape(0), [&](qd::i32 j) { s += qd::sin(x[j] * z[i]); });
      y[i] = s;
    });
  });
  check_gradients(k, positive(6, 0.7), positive(6, 1.4), [](const vec& xs, const vec& zs, const vec& w) {
    gradients g{vec(xs.size(), 0.0), vec(xs.size(), 0.0)};
    for (std::size_t i = 0; i < xs.size(); ++i)
      for (std::size_t j = 0; j < xs.size(); ++j) {
        g.x[j] += w[i] * zs[i] * std::cos(xs[j] * zs[i]);
        g.z[i] += w[i] * xs[j] * std::cos(xs[j] * zs[i]);
      }
    return g;
  });
}

TEST_CASE("a nested loop carrying a qd::var nonlinearly (Horner), with trace-time and run-time bounds") {
  // p = 1; for j < (i % 4) + 1: p = p * x[i] + z[i] * j; then a second loop of 3 (trace-time bound): p = p * p * 0.5
  auto k = qd::kernel("horner", {"x", "z", "y"}, [](d1 x, d1 z, d1 y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      qd::var<double> p = 1.0;
      qd::range_for(0, i % 4 + 1, [&](qd::i32 j) { p = p * x[i] + z[i] * qd::cast<double>(j); });
      qd::range_for(3, [&](qd::i32) { p = p * p * 0.5; });
      y[i] = p;
    });
  });
  vec x0 = positive(7, 0.2), z0 = positive(7, 0.9);
  for (double& v : x0) v *= 0.7;  // keeps p small enough for finite differences in f64
  check_gradients(k, x0, z0, [](const vec& xs, const vec& zs, const vec& w) {
    gradients g{vec(xs.size()), vec(xs.size())};
    for (std::size_t i = 0; i < xs.size(); ++i) {
      double p = 1, dpa = 0, dpb = 0;  // forward-mode derivatives
      for (std::size_t j = 0; j < i % 4 + 1; ++j) {
        dpa = dpa * xs[i] + p;
        dpb = dpb * xs[i] + static_cast<double>(j);
        p = p * xs[i] + zs[i] * static_cast<double>(j);
      }
      for (int r = 0; r < 3; ++r) {
        dpa = p * dpa;
        dpb = p * dpb;
        p = p * p * 0.5;
      }
      g.x[i] = w[i] * dpa;
      g.z[i] = w[i] * dpb;
    }
    return g;
  });
}

TEST_CASE("a top-level reduction used by a later construct, and top-level values in a serial construct") {
  auto k = qd::kernel("reduction", {"x", "z", "y"}, [](d1 x, d1 z, d1 y) {
    qd::var<double> total = 0.0;
    qd::range_for(x.shape(0), [&](qd::i32 i) { total += x[i] * z[i]; });
    qd::f64 s = x[0] * z[1];  // a top-level value
    y[0] = s * s + total;     // a serial construct
    qd::range_for(1, x.shape(0), [&](qd::i32 i) { y[i] = total * x[i] + s; });
  });
  check_gradients(k, positive(6, 0.4), positive(6, 1.1), [](const vec& xs, const vec& zs, const vec& w) {
    const std::size_t n = xs.size();
    double total = 0, wx = 0, wsum = 0;
    for (std::size_t i = 0; i < n; ++i) total += xs[i] * zs[i];
    for (std::size_t i = 1; i < n; ++i) {
      wx += w[i] * xs[i];
      wsum += w[i];
    }
    const double s = xs[0] * zs[1];
    const double dtotal = w[0] + wx, ds = 2 * s * w[0] + wsum;
    gradients g{vec(n, 0.0), vec(n, 0.0)};
    for (std::size_t i = 0; i < n; ++i) {
      g.x[i] = dtotal * zs[i] + (i >= 1 ? w[i] * total : 0.0);
      g.z[i] = dtotal * xs[i];
    }
    g.x[0] += ds * zs[1];
    g.z[1] += ds * xs[0];
    return g;
  });
}

TEST_CASE("top-level control flow: a reduced qd::var reassigned, a top-level if_, and a copy used by a later loop") {
  auto k = qd::kernel("top_level_flow", {"x", "z", "y"}, [](d1 x, d1 z, d1 y) {
    qd::var<double> t = 0.0;
    qd::range_for(x.shape(0), [&](qd::i32 i) { t += x[i]; });
    t = t * t;
    qd::if_(t > 1.0, [&] { y[0] = t * z[0]; }).else_([&] { y[0] = t; });
    qd::var<double> u = t;
    qd::range_for(1, x.shape(0), [&](qd::i32 i) { y[i] = u * x[i] + t; });
  });
  for (double scale : {1.0, 0.05}) {  // both branches of the top-level if_
    CAPTURE(scale);
    vec x0 = positive(5, 0.6);
    for (double& v : x0) v *= scale;
    check_gradients(k, x0, positive(5, 1.7), [](const vec& xs, const vec& zs, const vec& w) {
      const std::size_t n = xs.size();
      double S = 0;
      for (double v : xs) S += v;
      const double t = S * S;
      double dt = w[0] * (t > 1 ? zs[0] : 1.0);
      for (std::size_t i = 1; i < n; ++i) dt += w[i] * (xs[i] + 1);
      gradients g{vec(n), vec(n, 0.0)};
      for (std::size_t j = 0; j < n; ++j) g.x[j] = dt * 2 * S + (j >= 1 ? w[j] * t : 0.0);
      if (t > 1) g.z[0] = w[0] * t;
      return g;
    });
  }
}

TEST_CASE("a loop-carried qd::var updated in branches inside a nested loop") {
  auto k = qd::kernel("carried_branches", {"x", "z", "y"}, [](d1 x, d1 z, d1 y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      qd::var<double> m = x[i];
      qd::range_for(4, [&](qd::i32) { qd::if_(m > 1.0, [&] { m = m * 0.5; }).else_([&] { m = m * m + z[i]; }); });
      y[i] = m;
    });
  });
  check_gradients(k, positive(7, 0.2), positive(7, 1.2), [](const vec& xs, const vec& zs, const vec& w) {
    gradients g{vec(xs.size()), vec(xs.size())};
    for (std::size_t i = 0; i < xs.size(); ++i) {
      double m = xs[i], dmx = 1, dmz = 0;
      for (int r = 0; r < 4; ++r) {
        if (m > 1) {
          dmx *= 0.5, dmz *= 0.5, m *= 0.5;
        } else {
          dmx = 2 * m * dmx, dmz = 2 * m * dmz + 1, m = m * m + zs[i];
        }
      }
      g.x[i] = w[i] * dmx;
      g.z[i] = w[i] * dmz;
    }
    return g;
  });
}

namespace {

// p <- 0.5 p + 0.4 sin(p x[j]) + 0.1 x[j] for j < n, from p = start; the gradients of
// w * p_n by reverse sweep on the host over every stored p_j: an implementation
// independent of the adjoint's value stacks.
struct long_carry_reference {
  double p = 0, dstart = 0;
  vec dx;
};
long_carry_reference long_carry_host(const vec& xs, double start, double w) {
  const std::size_t n = xs.size();
  vec ps(n + 1);
  ps[0] = start;
  for (std::size_t j = 0; j < n; ++j) ps[j + 1] = 0.5 * ps[j] + 0.4 * std::sin(ps[j] * xs[j]) + 0.1 * xs[j];
  long_carry_reference r{ps[n], 0.0, vec(n, 0.0)};
  double g = w;
  for (std::size_t j = n; j-- > 0;) {
    const double c = std::cos(ps[j] * xs[j]);
    r.dx[j] = g * (0.4 * c * ps[j] + 0.1);
    g = g * (0.5 + 0.4 * c * xs[j]);
  }
  r.dstart = g;
  return r;
}

}  // namespace

TEST_CASE("a long serial loop carrying a qd::var: value stacks, exact at every length (issue 27, item 4)") {
  // Lengths around the stacks' depth (64) and its square (4096: one run per segment up to
  // there, runs replayed from their segment's checkpoint beyond), in a nested loop (one
  // thread per start value) and in a serialized top-level loop (stacks in a task of its own).
  auto nested = qd::kernel("long_carry", {"x", "c", "y"}, [](d1 x, d1 c, d1 y) {
    qd::range_for(c.shape(0), [&](qd::i32 i) {
      qd::var<double> p = c[i];
      qd::range_for(x.shape(0), [&](qd::i32 j) { p = 0.5 * p + 0.4 * qd::sin(p * x[j]) + 0.1 * x[j]; });
      y[i] = p;
    });
  });
  auto top = qd::kernel("long_carry_top", {"x", "c", "y"}, [](d1 x, d1 c, d1 y) {
    qd::var<double> p = c[0];
    qd::range_for(x.shape(0), qd::loop_config{.serialize = true},
                  [&](qd::i32 j) { p = 0.5 * p + 0.4 * qd::sin(p * x[j]) + 0.1 * x[j]; });
    y[0] = p;
  });
  on_each_arch([&] {
    for (std::size_t n : std::vector<std::size_t>{0, 1, 5, 63, 64, 65, 130, 4095, 4096, 4097, 6000}) {
      CAPTURE(n);
      const vec x0 = inputs(n), starts{0.3, -0.7, 1.1}, w{1.0, -0.5, 2.0};
      for (bool at_top : {false, true}) {
        CAPTURE(at_top);
        const std::size_t threads = at_top ? 1 : starts.size();
        auto x = array_of(x0), c = array_of(vec(starts.begin(), starts.begin() + static_cast<long>(threads)));
        auto y = array_of(vec(threads, 0.0));
        at_top ? top(x, c, y) : nested(x, c, y);
        y.grad().from_host(vec(w.begin(), w.begin() + static_cast<long>(threads)));
        at_top ? top.grad(x, c, y) : nested.grad(x, c, y);
        vec want_x(n, 0.0), want_c(threads), want_y(threads);
        for (std::size_t i = 0; i < threads; ++i) {
          const long_carry_reference r = long_carry_host(x0, starts[i], w[i]);
          want_y[i] = r.p;
          want_c[i] = r.dstart;
          for (std::size_t j = 0; j < n; ++j) want_x[j] += r.dx[j];
        }
        check_close(y.to_host(), want_y, 1e-12);
        check_close(c.grad().to_host(), want_c, 1e-10);
        check_close(x.grad().to_host(), want_x, 1e-10);
      }
    }
  });
}

TEST_CASE("a serial loop chaining through memory (y[j + 1] = f(y[j])) runs its adjoint backwards") {
  // y[0] = x[0]; y[j + 1] = sin(y[j]) * z[j] + x[j + 1]: the store runs ahead of the read, which the access rule allows.
  auto k = qd::kernel("memory_chain", {"x", "z", "y"}, [](d1 x, d1 z, d1 y) {
    y[0] = x[0];
    qd::if_(x.shape(0) > 1,
            [&] { qd::range_for(x.shape(0) - 1, [&](qd::i32 j) { y[j + 1] = qd::sin(y[j]) * z[j] + x[j + 1]; }); });
  });
  check_gradients(k, positive(6, 0.5), positive(6, 1.5), [](const vec& xs, const vec& zs, const vec& w) {
    const std::size_t n = xs.size();
    vec y(n);
    y[0] = xs[0];
    for (std::size_t j = 0; j + 1 < n; ++j) y[j + 1] = std::sin(y[j]) * zs[j] + xs[j + 1];
    vec gy = w;  // reverse sweep on the host
    gradients g{vec(n, 0.0), vec(n, 0.0)};
    for (std::size_t j = n - 1; j >= 1; --j) {
      g.x[j] += gy[j];
      g.z[j - 1] += gy[j] * std::sin(y[j - 1]);
      gy[j - 1] += gy[j] * zs[j - 1] * std::cos(y[j - 1]);
    }
    g.x[0] += gy[0];
    return g;
  });
}

TEST_CASE("a serialized top-level loop (loop_config) chaining through memory and carrying a top-level qd::var") {
  // y[0] = x[0]; for i in order: y[i + 1] = sin(y[i]) * z[i] + p, p = p * x[i] + 0.5 (p carried nonlinearly).
  auto k = qd::kernel("serial_chain", {"x", "z", "y"}, [](d1 x, d1 z, d1 y) {
    y[0] = x[0];
    qd::var<double> p = 1.0;
    qd::range_for(x.shape(0) - 1, qd::loop_config{.serialize = true}, [&](qd::i32 i) {
      y[i + 1] = qd::sin(y[i]) * z[i] + p;
      p = p * x[i] + 0.5;
    });
  });
  check_gradients(k, positive(6, 0.5), positive(6, 1.5), [](const vec& xs, const vec& zs, const vec& w) {
    const std::size_t n = xs.size();
    // Forward mode on the host, one input at a time.
    auto run = [&](std::size_t which, bool in_z) {
      double y = xs[0], dy = (!in_z && which == 0) ? 1.0 : 0.0, p = 1, dp = 0, dl = w[0] * dy;
      for (std::size_t i = 0; i + 1 < n; ++i) {
        const double dz = (in_z && which == i) ? 1.0 : 0.0, dx = (!in_z && which == i) ? 1.0 : 0.0;
        const double y1 = std::sin(y) * zs[i] + p;
        const double dy1 = std::cos(y) * dy * zs[i] + std::sin(y) * dz + dp;
        dp = dp * xs[i] + p * dx;
        p = p * xs[i] + 0.5;
        y = y1, dy = dy1;
        dl += w[i + 1] * dy;
      }
      return dl;
    };
    gradients g{vec(n), vec(n)};
    for (std::size_t j = 0; j < n; ++j) g.x[j] = run(j, false), g.z[j] = run(j, true);
    return g;
  });
}

TEST_CASE("the access rule is per element where the indices tell: rows t and t + 1 of one array") {
  auto k = qd::kernel("rows", {"x", "z", "y"}, [](d1 x, d1 z, d1 y) {
    qd::range_for(x.shape(0) - 1, [&](qd::i32 i) { x[i + 1] += 0.0; });  // an accumulation: not an overwrite
    y[0] = x[0] * z[0];
    y[1] = y[0] * y[0];  // reads y[0] after storing it: allowed
  });
  check_gradients(k, positive(4, 0.5), positive(4, 1.5), [](const vec& xs, const vec& zs, const vec& w) {
    gradients g{vec(xs.size(), 0.0), vec(xs.size(), 0.0)};
    const double y0 = xs[0] * zs[0], dy0 = w[0] + w[1] * 2 * y0;
    g.x[0] = dy0 * zs[0];
    g.z[0] = dy0 * xs[0];
    return g;
  });
}

TEST_CASE("qd::atomic_add and += on array elements accumulate without zeroing") {
  auto k = qd::kernel("atomics", {"x", "z", "y"}, [](d1 x, d1 z, d1 y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { qd::atomic_add(y[0], x[i] * z[i]); });
    qd::range_for(1, x.shape(0), [&](qd::i32 i) { y[i] += x[i] * x[i]; });
    y[1] += x[0] * z[0];  // at the top level: a load and a store of the same element
  });
  check_gradients(k, positive(5, 0.4), positive(5, 1.1), [](const vec& xs, const vec& zs, const vec& w) {
    gradients g{vec(xs.size()), vec(xs.size())};
    for (std::size_t i = 0; i < xs.size(); ++i) {
      g.x[i] = w[0] * zs[i] + (i >= 1 ? w[i] * 2 * xs[i] : 0.0);
      g.z[i] = w[0] * xs[i];
    }
    g.x[0] += w[1] * zs[0];
    g.z[0] += w[1] * xs[0];
    return g;
  });
}

TEST_CASE("a 2-D stencil over qd::ndrange with clamped reads") {
  auto k = qd::kernel(
      "stencil2d", {"x", "y"},
      [](qd::types::ndarray<double, 2, qd::needs_grad> x, qd::types::ndarray<double, 2, qd::needs_grad> y) {
        qd::range_for(qd::ndrange(x.shape(0), x.shape(1)), [&](qd::i32 i, qd::i32 j) {
          qd::f64 c = x(i, j);
          y(i, j) = c * c - 0.25 * (x.at(i - 1, j, qd::boundary::clamp) + x.at(i + 1, j, qd::boundary::clamp) +
                                    x.at(i, j - 1, qd::boundary::clamp) * x.at(i, j + 1, qd::boundary::clamp));
        });
      });
  const int h = 4, wd = 5;
  vec x0(h * wd), w(h * wd);
  for (int q = 0; q < h * wd; ++q) {
    x0[static_cast<std::size_t>(q)] = 1.0 + 0.3 * std::sin(0.7 * q);
    w[static_cast<std::size_t>(q)] = 0.5 + 0.2 * std::cos(1.3 * q);
  }
  on_each_arch([&] {
    auto loss = [&](const vec& xs) {
      qd::ndarray<double, 2> x({h, wd}, qd::needs_grad), y({h, wd}, qd::needs_grad);
      x.from_host(xs);
      k(x, y);
      return dot(y.to_host(), w);
    };
    qd::ndarray<double, 2> x({h, wd}, qd::needs_grad), y({h, wd}, qd::needs_grad);
    x.from_host(x0);
    x.grad().fill(0.0);
    k(x, y);
    y.grad().from_host(w);
    k.grad(x, y);
    check_close(x.grad().to_host(), central_differences(loss, x0));
  });
}

TEST_CASE("float precision: the adjoint of an f32 kernel is close to the f64 one") {
  auto k = qd::kernel(
      "f32_kernel", [](qd::types::ndarray<float, 1, qd::needs_grad> x, qd::types::ndarray<float, 1, qd::needs_grad> y) {
        qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = qd::tanh(x[i]) * qd::exp(x[i] * 0.3f); });
      });
  on_each_arch([&] {
    std::vector<float> xs{0.1f, 0.5f, -0.7f, 1.2f};
    qd::ndarray<float, 1> x(4, qd::needs_grad), y(4, qd::needs_grad);
    x.from_host(xs);
    x.grad().fill(0.0f);
    k(x, y);
    y.grad().fill(1.0f);
    k.grad(x, y);
    auto g = x.grad().to_host();
    for (std::size_t i = 0; i < xs.size(); ++i) {
      double a = xs[i], t = std::tanh(a);
      double want = (1 - t * t) * std::exp(0.3 * a) + 0.3 * t * std::exp(0.3 * a);
      CHECK(std::abs(g[i] - want) <= 1e-5 * std::max(1.0, std::abs(want)));
    }
  });
}

// --- what has no adjoint: a qd::user_error at the first grad call ----------------

namespace {

template <class K, class... A>
std::string grad_error(K& k, A&... args) {
  try {
    k.grad(args...);
  } catch (const qd::user_error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("unsupported statements are a qd::user_error naming the kernel and the statement") {
  qd_test::init_cpu();
  using f1 = qd::types::ndarray<float, 1, qd::needs_grad>;
  qd::ndarray<float, 1> x(4, qd::needs_grad), y(4, qd::needs_grad);
  x.fill(1.0f);
  y.fill(0.0f);

  SUBCASE("a plain store over a value the kernel read earlier (the global data access rule)") {
    auto k = qd::kernel("overwrite", {"x", "y"}, [](f1 x, f1 y) {
      qd::range_for(x.shape(0), [&](qd::i32 i) {
        y[i] = x[i];
        x[i] = x[i] * 2.0f;
      });
    });
    k(x, y);
    std::string e = grad_error(k, x, y);
    CHECK_MESSAGE(e.find("kernel 'overwrite'") != std::string::npos, e);
    CHECK_MESSAGE(e.find("plain store to 'x'[...]") != std::string::npos, e);
    CHECK_MESSAGE(e.find("global data access rule") != std::string::npos, e);
    CHECK_MESSAGE(e.find("autodiff_test.cpp:") != std::string::npos, e);  // the source line of the store
    CHECK_MESSAGE(grad_error(k, x, y) == e, "the error repeats on the next call");
  }
  SUBCASE("qd::while_") {
    auto k = qd::kernel("loops_while", [](f1 x, f1 y) {
      qd::range_for(x.shape(0), [&](qd::i32 i) {
        qd::var<float> v = x[i];
        qd::while_([&] { return v < 10.0f; }, [&] { v = v * 2.0f; });
        y[i] = v;
      });
    });
    k(x, y);
    std::string e = grad_error(k, x, y);
    CHECK_MESSAGE(e.find("kernel 'loops_while'") != std::string::npos, e);
    CHECK_MESSAGE(e.find("qd::while_") != std::string::npos, e);
  }
  SUBCASE("qd::continue_ and qd::break_") {
    auto k = qd::kernel("skips", {"x", "y"}, [](f1 x, f1 y) {
      qd::range_for(x.shape(0), [&](qd::i32 i) {
        qd::if_(x[i] < 0.0f, [&] { qd::continue_(); });
        y[i] = x[i];
      });
    });
    k(x, y);
    CHECK_THROWS_WITH_AS(k.grad(x, y), Contains("kernel 'skips': no gradient kernel: qd::continue_() has no adjoint"),
                         qd::user_error);
  }
  SUBCASE("qd::random") {
    auto k = qd::kernel(
        "noisy", [](f1 x, f1 y) { qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = x[i] * qd::random<float>(); }); });
    k(x, y);
    CHECK_THROWS_WITH_AS(k.grad(x, y), Contains("qd::random draw"), qd::user_error);
  }
  SUBCASE("qd::volatile_load") {
    auto k = qd::kernel("volatile_read", {"x", "y"}, [](f1 x, f1 y) {
      qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = qd::volatile_load(x[i]) * 2.0f; });
    });
    k(x, y);
    CHECK_THROWS_WITH_AS(k.grad(x, y), Contains("qd::volatile_load('x'[...])"), qd::user_error);
  }
  SUBCASE("atomic min and max") {
    auto k = qd::kernel("extremum", {"x", "y"},
                        [](f1 x, f1 y) { qd::range_for(x.shape(0), [&](qd::i32 i) { qd::atomic_max(y[0], x[i]); }); });
    k(x, y);
    CHECK_THROWS_WITH_AS(k.grad(x, y), Contains("qd::atomic_max on 'y'[0]"), qd::user_error);
  }
  SUBCASE("atomics other than add and sub: mul, exchange, cas and the bitwise ones") {
    auto mul = qd::kernel("product", {"x", "y"}, [](f1 x, f1 y) {
      qd::range_for(x.shape(0), [&](qd::i32 i) { qd::atomic_mul(y[0], x[i]); });
    });
    mul(x, y);
    CHECK_THROWS_WITH_AS(mul.grad(x, y), Contains("kernel 'product': no gradient kernel: qd::atomic_mul on 'y'[0]"),
                         qd::user_error);
    auto swap = qd::kernel("swap", {"x", "y"}, [](f1 x, f1 y) {
      qd::range_for(x.shape(0), [&](qd::i32 i) { qd::atomic_exchange(y[1], x[i]); });
    });
    CHECK_THROWS_WITH_AS(swap.grad(x, y), Contains("qd::atomic_exchange on 'y'[1]"), qd::user_error);
    auto cas = qd::kernel("cas", {"x", "y"}, [](f1 x, f1 y) {
      qd::range_for(x.shape(0), [&](qd::i32 i) { qd::atomic_cas(y[2], 0.0f, x[i]); });
    });
    CHECK_THROWS_WITH_AS(cas.grad(x, y), Contains("qd::atomic_cas on 'y'[2]"), qd::user_error);
    auto bits = qd::kernel("bits", {"x", "y", "flags"}, [](f1 x, f1 y, qd::types::ndarray<std::int32_t, 1> flags) {
      qd::range_for(x.shape(0), [&](qd::i32 i) {
        y[i] = x[i] * 2.0f;
        qd::atomic_or(flags[0], 1 << i);
      });
    });
    qd::ndarray<std::int32_t, 1> flags(1);
    std::string e = grad_error(bits, x, y, flags);
    CHECK_MESSAGE(e.find("qd::atomic_or on 'flags'[0]") != std::string::npos, e);
    CHECK_MESSAGE(e.find("autodiff_test.cpp:") != std::string::npos, e);  // the statement's line
  }
  SUBCASE("a value kept as qd::f16, and a bit cast of a value with a gradient") {
    auto rounded = qd::kernel("rounded", {"x", "y"}, [](f1 x, f1 y) {
      qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = qd::f16(qd::cast<qd::half>(x[i])) * 2.0f; });
    });
    CHECK_THROWS_WITH_AS(rounded.grad(x, y), Contains("kept as qd::f16"), qd::user_error);
    auto bits = qd::kernel("through_bits", {"x", "y"}, [](f1 x, f1 y) {
      qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = qd::bit_cast<float>(qd::bit_cast<qd::u32>(x[i]) + 1u); });
    });
    CHECK_THROWS_WITH_AS(bits.grad(x, y), Contains("qd::bit_cast of a value that carries a gradient"), qd::user_error);
  }
  SUBCASE("reading .grad() in the forward kernel") {
    auto k = qd::kernel("reads_grad", {"x", "y"},
                        [](f1 x, f1 y) { qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = x.grad()[i]; }); });
    k(x, y);
    CHECK_THROWS_WITH_AS(k.grad(x, y), Contains("gradient buffer 'x'.grad()[...]"), qd::user_error);
  }
  SUBCASE("using the value an atomic returns") {
    auto k = qd::kernel("atomic_value", {"x", "y"}, [](f1 x, f1 y) {
      qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = qd::atomic_add(y[0], x[i]) * 2.0f; });
    });
    CHECK_THROWS_WITH_AS(k.grad(x, y), Contains("the value qd::atomic_add on 'y'[0] returns is used"), qd::user_error);
  }
  SUBCASE("a kernel without a needs_grad parameter") {
    auto k = qd::kernel("plain", {"a", "b"}, [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> b) {
      qd::range_for(a.shape(0), [&](qd::i32 i) { b[i] = a[i]; });
    });
    qd::ndarray<float, 1> a(4), b(4);
    CHECK_THROWS_WITH_AS(k.grad(a, b), Contains("kernel 'plain' has no qd::needs_grad parameter"), qd::user_error);
  }
  SUBCASE("a needs_grad parameter given an array without a gradient buffer") {
    auto k = qd::kernel("square", {"x", "y"},
                        [](f1 x, f1 y) { qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = x[i] * x[i]; }); });
    qd::ndarray<float, 1> plain(4);
    CHECK_THROWS_WITH_AS(k.grad(plain, y), Contains("parameter 'x'"), qd::user_error);
    CHECK_THROWS_WITH_AS(k.grad(plain, y), Contains("qd::needs_grad"), qd::user_error);
  }
}

TEST_CASE("the adjoint stays whole and logs it; the forward kernel still splits; the adjoint is cached on disk") {
  const auto dir = std::filesystem::temp_directory_path() / ("qd-autodiff-cache-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto make = [] {
    return qd::kernel(
        "two_steps", {"x", "y"},
        [](qd::types::ndarray<double, 1, qd::needs_grad> x, qd::types::ndarray<double, 1, qd::needs_grad> y) {
          qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = x[i] * x[i]; });
          qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] += qd::sin(x[i]); });
        });
  };
  for (int run = 0; run < 2; ++run) {
    CAPTURE(run);
    qd_test::log_capture logs;
    qd::init({.arch = qd::arch::cpu,
              .offline_cache_file_path = dir.string(),
              .per_offload = qd::per_offload_mode::on,
              .log_level = qd::log_level::debug});
    auto k = make();  // a fresh kernel object: nothing in memory
    auto x = array_of({0.5, 1.0, 1.5}), y = array_of({0.0, 0.0, 0.0});
    k(x, y);
    y.grad().fill(1.0);
    k.grad(x, y);
    check_close(x.grad().to_host(), {1.0 + std::cos(0.5), 2.0 + std::cos(1.0), 3.0 + std::cos(1.5)}, 1e-12);
    auto fwd = k.per_offload_cache_observations();
    CHECK(fwd.fallback == qd::fallback_reason::none);
    CHECK(fwd.frontend_constructs_total == 2);
    auto adj = k.grad.per_offload_cache_observations();
    CHECK(adj.frontend_constructs_total == -1);
    CHECK(adj.fallback == qd::fallback_reason::autodiff);
    CHECK(adj.fallback_detail == "a gradient kernel");
    CHECK(adj.constructs_compiled == (run == 0 ? 2 : 0));
    CHECK(adj.constructs_loaded == (run == 0 ? 0 : 2));
    CHECK_MESSAGE(
        logs.count(qd::log_level::debug,
                   "[PER_OFFLOAD] kernel 'two_steps.grad' stays whole-kernel: autodiff (a gradient kernel)") == 1,
        logs.all());
    qd::reset();
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("kernel.grad.compile() compiles the adjoint without launching; kernel.grad.ir() shows it") {
  qd_test::init_cpu();
  auto k = qd::kernel("compiled_only", [](qd::types::ndarray<float, 1, qd::needs_grad> x,
                                          qd::types::ndarray<float, 1, qd::needs_grad> y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = qd::exp(x[i]); });
  });
  k.grad.compile();
  CHECK(k.grad.per_offload_cache_observations().fallback == qd::fallback_reason::autodiff);
  CHECK(k.grad.ir().rfind("gradient kernel(", 0) == 0);
  CHECK(k.ir().rfind("kernel(", 0) == 0);
}

// --- qd::ad::tape -------------------------------------------------------------------

TEST_CASE("a tape runs the recorded adjoints in reverse: a three-kernel chain matches finite differences") {
  using g1 = qd::types::ndarray<double, 1, qd::needs_grad>;
  using g0 = qd::types::ndarray<double, 0, qd::needs_grad>;
  auto square =
      qd::kernel("square", [](g1 x, g1 y) { qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = x[i] * x[i]; }); });
  auto smooth = qd::kernel("smooth", [](g1 y, g1 z) {
    qd::range_for(y.shape(0), [&](qd::i32 i) { z[i] = qd::sin(y[i]) + 0.5 * y.at(i + 1, qd::boundary::clamp); });
  });
  auto total =
      qd::kernel("total", [](g1 z, g0 loss) { qd::range_for(z.shape(0), [&](qd::i32 i) { loss() += z[i] * z[i]; }); });
  const vec x0 = positive(6, 0.8);
  on_each_arch([&] {
    auto run = [&](const vec& xs, bool backward) {
      auto x = array_of(xs), y = array_of(vec(xs.size(), 0.0)), z = array_of(vec(xs.size(), 0.0));
      qd::ndarray<double, 0> loss(qd::needs_grad);
      loss.fill(0.0);
      vec g;
      {
        qd::ad::tape tape(loss);
        square(x, y);
        smooth(y, z);
        total(z, loss);
        if (backward) {
          tape.backward();
          CHECK(loss.grad().to_host()[0] == 1.0);
          g = x.grad().to_host();
        }
      }
      return std::pair{loss.to_host()[0], g};
    };
    vec got = run(x0, true).second;
    check_close(got, central_differences([&](const vec& xs) { return run(xs, false).first; }, x0));
  });
}

TEST_CASE("a tape zeroes the loss gradient, records only on its thread, and runs nothing when destroyed") {
  qd_test::init_cpu();
  using g1 = qd::types::ndarray<float, 1, qd::needs_grad>;
  using g0 = qd::types::ndarray<float, 0, qd::needs_grad>;
  auto sum = qd::kernel("sum", [](g1 x, g0 loss) { qd::range_for(x.shape(0), [&](qd::i32 i) { loss() += x[i]; }); });
  qd::ndarray<float, 1> x(3, qd::needs_grad);
  qd::ndarray<float, 0> loss(qd::needs_grad);
  x.fill(1.0f);
  x.grad().fill(0.0f);
  loss.fill(0.0f);
  loss.grad().fill(7.0f);
  {
    qd::ad::tape tape(loss);
    CHECK(loss.grad().to_host()[0] == 0.0f);
    sum(x, loss);
  }  // destroyed without backward(): nothing runs
  CHECK(x.grad().to_host() == std::vector<float>{0, 0, 0});
  auto fill_plain = qd::kernel(
      "fill_plain", [](qd::types::ndarray<float, 1> p) { qd::range_for(p.shape(0), [&](qd::i32 i) { p[i] = 2.0f; }); });
  qd::ndarray<float, 1> plain(3);
  {
    qd::ad::tape tape(loss);
    std::thread other([&] { sum(x, loss); });  // another thread's launch is not recorded
    other.join();
    fill_plain(plain);  // no needs_grad parameter: recorded, but it has no adjoint to run
    sum(x, loss);
    tape.backward();
    CHECK_THROWS_WITH_AS(tape.backward(), Contains("already ran"), qd::user_error);
  }
  CHECK(x.grad().to_host() == std::vector<float>{1, 1, 1});
}

TEST_CASE(
    "tape errors: a loss that is not a 0-d needs_grad float array; an input overwritten by a later launch, refused at "
    "backward() (not at the launch) and by nothing when the tape is destroyed without backward()") {
  qd_test::init_cpu();
  qd::ndarray<float, 1> vector_loss(3, qd::needs_grad);
  CHECK_THROWS_WITH_AS(qd::ad::tape{vector_loss}, Contains("must be a 0-d array"), qd::user_error);
  qd::ndarray<float, 0> no_grad;
  CHECK_THROWS_WITH_AS(qd::ad::tape{no_grad}, Contains("construct it with qd::needs_grad"), qd::user_error);
  qd::ndarray<std::int32_t, 0> int_loss(qd::needs_grad);
  CHECK_THROWS_WITH_AS(qd::ad::tape{int_loss}, Contains("floating-point"), qd::user_error);

  using g1 = qd::types::ndarray<float, 1, qd::needs_grad>;
  using g0 = qd::types::ndarray<float, 0, qd::needs_grad>;
  auto step = qd::kernel("step", {"from", "to"}, [](g1 from, g1 to) {
    qd::range_for(from.shape(0), [&](qd::i32 i) { to[i] = from[i] * from[i]; });
  });
  auto sum = qd::kernel("sum_sq", [](g1 x, g0 loss) { qd::range_for(x.shape(0), [&](qd::i32 i) { loss() += x[i]; }); });
  qd::ndarray<float, 1> a(3, qd::needs_grad), b(3, qd::needs_grad);
  qd::ndarray<float, 0> loss(qd::needs_grad);
  a.from_host(std::vector<float>{1.0f, 2.0f, 3.0f});
  a.grad().fill(0.0f);
  b.grad().fill(0.0f);
  {
    qd::ad::tape tape(loss);
    step(a, b);
    CHECK_NOTHROW(step(b, a));  // overwrites a, which the first launch read: recorded, and it ran
    CHECK(a.to_host() == std::vector<float>{1.0f, 16.0f, 81.0f});
    CHECK_NOTHROW(step(a, b));  // a second conflict (b, which launch 2 read): the first one is named
    CHECK_NOTHROW(sum(b, loss));
    for (int call = 0; call < 2; ++call)  // refused before anything ran, so a second call is refused the same way
      CHECK_THROWS_WITH_AS(tape.backward(),
                           Contains("launch 2 (kernel 'step') overwrites elements of parameter 'to' (#1, ndarray<f32, "
                                    "1, needs_grad>) that launch 1 (kernel 'step') read as parameter 'from'"),
                           qd::user_error);
    CHECK(a.grad().to_host() == std::vector<float>{0, 0, 0});
    CHECK(b.grad().to_host() == std::vector<float>{0, 0, 0});
  }
  {
    qd::ad::tape tape(loss);
    step(a, b);
    step(b, a);
  }  // destroyed without backward(): the conflict it holds is raised nowhere
  CHECK(a.grad().to_host() == std::vector<float>{0, 0, 0});
  // Later tapes record and check as before: d/da of sum(a * a) is 2 a.
  a.from_host(std::vector<float>{0.5f, 1.5f, 2.5f});
  qd::ad::tape tape(loss);
  step(a, b);
  sum(b, loss);
  tape.backward();
  CHECK(a.grad().to_host() == std::vector<float>{1.0f, 3.0f, 5.0f});
}

TEST_CASE("a tape accepts launches writing rows no earlier launch read (one row per time step)") {
  on_each_arch([&] {
    using g2 = qd::types::ndarray<double, 2, qd::needs_grad>;
    using g0 = qd::types::ndarray<double, 0, qd::needs_grad>;
    auto advance = qd::kernel("advance", {"rows", "t"}, [](g2 rows, qd::i32 t) {
      qd::range_for(rows.shape(1), [&](qd::i32 j) { rows(t + 1, j) = qd::sin(rows(t, j)) + rows(t, j); });
    });
    auto last_row = qd::kernel("last_row", [](g2 rows, g0 loss) {
      qd::range_for(rows.shape(1), [&](qd::i32 j) { loss() += rows(rows.shape(0) - 1, j); });
    });
    auto run = [&](double start, bool backward) {
      qd::ndarray<double, 2> rows({5, 2}, qd::needs_grad);
      rows.from_host(vec{start, 2 * start, 0, 0, 0, 0, 0, 0, 0, 0});
      qd::ndarray<double, 0> loss(qd::needs_grad);
      loss.fill(0.0);
      qd::ad::tape tape(loss);
      for (int t = 0; t < 4; ++t) advance(rows, t);
      last_row(rows, loss);
      if (backward) tape.backward();
      return std::pair{loss.to_host()[0], rows.grad().to_host()};
    };
    auto [value, grad] = run(0.3, true);
    // d loss / d rows(0, 0) and d rows(0, 1): (cos + 1) chained four times.
    auto chain = [](double v) {
      double d = 1;
      for (int t = 0; t < 4; ++t) d *= std::cos(v) + 1, v = std::sin(v) + v;
      return d;
    };
    CHECK(grad[0] == doctest::Approx(chain(0.3)).epsilon(1e-12));
    CHECK(grad[1] == doctest::Approx(chain(0.6)).epsilon(1e-12));
    const double h = 1e-6;
    CHECK(grad[0] + 2 * grad[1] ==
          doctest::Approx((run(0.3 + h, false).first - run(0.3 - h, false).first) / (2 * h)).epsilon(1e-6));
    (void)value;
  });
}

TEST_CASE("a 0-d parameter read in parallel loops: its gradient is each loop's sum, added once to what it held") {
  // The adjoint sums a shared 0-d gradient per chunk of iterations (like a forward
  // reduction) and adds the sum after the loop; 10,000 iterations span several chunks.
  using g0 = qd::types::ndarray<double, 0, qd::needs_grad>;
  auto scale = qd::kernel("shared_scale", {"x", "k", "y", "z"}, [](d1 x, g0 k, d1 y, d1 z) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = qd::sin(x[i]) * k() + k() * k(); });
    qd::range_for(x.shape(0), [&](qd::i32 i) { z[i] = x[i] * k(); });
  });
  on_each_arch([&] {
    const std::size_t n = 10000;
    const vec x0 = inputs(n), wy = inputs(n, 0.5), wz = inputs(n, -0.25);
    const double k0 = 1.3, held = 0.75;
    auto x = array_of(x0), y = array_of(vec(n, 0.0)), z = array_of(vec(n, 0.0));
    qd::ndarray<double, 0> k(qd::needs_grad);
    k.fill(k0);
    k.grad().fill(held);
    scale(x, k, y, z);
    y.grad().from_host(wy);
    z.grad().from_host(wz);
    scale.grad(x, k, y, z);
    double dk = held;
    vec dx(n);
    for (std::size_t i = 0; i < n; ++i) {
      dk += wy[i] * (std::sin(x0[i]) + 2 * k0) + wz[i] * x0[i];
      dx[i] = wy[i] * std::cos(x0[i]) * k0 + wz[i] * k0;
    }
    CHECK(k.grad().to_host()[0] == doctest::Approx(dk).epsilon(1e-12));
    check_close(x.grad().to_host(), dx);
    const std::string ir = scale.grad.ir();  // summed in the loops, added to k.grad() after each
    CHECK_MESSAGE(ir.find("global_atomic f64 add k.grad[]") == std::string::npos, ir);
    CHECK_MESSAGE(ir.find("global_store f64 k.grad[]") != std::string::npos, ir);
  });
}

TEST_CASE(
    "a tape of 2,001 launches: one row per step is accepted and exact; a late write into an early read is refused") {
  qd_test::init_cpu();
  using g2 = qd::types::ndarray<double, 2, qd::needs_grad>;
  using g0 = qd::types::ndarray<double, 0, qd::needs_grad>;
  const int steps = 2000;
  auto advance = qd::kernel("advance", {"rows", "t"}, [](g2 rows, qd::i32 t) {
    qd::range_for(rows.shape(1), [&](qd::i32 j) { rows(t + 1, j) = 0.5 * rows(t, j) * rows(t, j) + 0.1; });
  });
  // Reads every row, so each row's gradient is the sum over the later rows of the chain.
  auto total = qd::kernel("total", [](g2 rows, g0 loss) {
    qd::range_for(rows.shape(0),
                  [&](qd::i32 i) { qd::range_for(rows.shape(1), [&](qd::i32 j) { loss() += rows(i, j); }); });
  });
  auto write_row = qd::kernel("write_row", {"rows", "r"}, [](g2 rows, qd::i32 r) {
    qd::range_for(rows.shape(1), [&](qd::i32 j) { rows(r, j) = 1.0; });
  });
  auto add_row = qd::kernel("add_row", {"rows", "r"}, [](g2 rows, qd::i32 r) {
    qd::range_for(rows.shape(1), [&](qd::i32 j) { rows(r, j) += 1.0; });
  });
  const vec start{0.3, 0.6};
  auto fresh_rows = [&] {
    qd::ndarray<double, 2> rows({steps + 1, 2}, qd::needs_grad);
    vec host(static_cast<std::size_t>(2 * (steps + 1)), 0.0);
    host[0] = start[0];
    host[1] = start[1];
    rows.from_host(host);
    rows.grad().fill(0.0);
    return rows;
  };
  {
    auto rows = fresh_rows();
    qd::ndarray<double, 0> loss(qd::needs_grad);
    loss.fill(0.0);
    qd::ad::tape tape(loss);
    for (int t = 0; t < steps; ++t) advance(rows, t);
    total(rows, loss);
    tape.backward();
    const vec grad = rows.grad().to_host();
    for (std::size_t j = 0; j < 2; ++j) {
      // d loss / d rows(0, j) = sum over t of the product of d r(s+1) / d r(s) = r(s) for s < t.
      double r = start[j], chain = 1, expected = 1;
      for (int t = 0; t < steps; ++t) {
        chain *= r;
        expected += chain;
        r = 0.5 * r * r + 0.1;
      }
      CHECK(grad[j] == doctest::Approx(expected).epsilon(1e-12));
    }
  }
  // The conflicting read is 1,999 launches back (and 1,000 for the accumulation): the check
  // names the earliest launch whose read the write changes, as for a short tape.
  auto refused = [&](auto& late, int row, int earlier_steps) {
    auto rows = fresh_rows();
    qd::ndarray<double, 0> loss(qd::needs_grad);
    qd::ad::tape tape(loss);
    for (int t = 0; t < earlier_steps; ++t) advance(rows, t);
    late(rows, row);
    total(rows, loss);
    std::string error;
    try {
      tape.backward();
    } catch (const qd::user_error& e) {
      error = e.what();
    }
    if (!error.empty())  // refused before any adjoint ran
      CHECK(rows.grad().to_host() == vec(static_cast<std::size_t>(2 * (steps + 1)), 0.0));
    return error;
  };
  const std::string overwrite = refused(write_row, 0, steps - 1);
  CHECK_MESSAGE(
      overwrite.find("launch 2000 (kernel 'write_row') overwrites elements of parameter 'rows'") != std::string::npos,
      overwrite);
  CHECK_MESSAGE(overwrite.find("that launch 1 (kernel 'advance') read as parameter 'rows'") != std::string::npos,
                overwrite);
  const std::string accumulate = refused(add_row, 1000, steps - 1);
  CHECK_MESSAGE(accumulate.find("launch 2000 (kernel 'add_row') accumulates into elements of parameter 'rows'") !=
                    std::string::npos,
                accumulate);
  CHECK_MESSAGE(accumulate.find("that launch 1001 (kernel 'advance') read as parameter 'rows'") != std::string::npos,
                accumulate);
  // Writing the row after the last one read is no conflict.
  CHECK(refused(write_row, steps, steps - 1).empty());
}

TEST_CASE(
    "random tapes over views of shared buffers: refused exactly where the overwrite rule says, naming that pair") {
  // The rule, restated from what each kernel does to one row: a later launch's write
  // conflicts with an earlier launch's read of the same row of the same view, or of any
  // row of another view of the same start where an extent is unknown (external arrays);
  // an overwrite with any read, an accumulation with a read whose value the adjoint needs.
  // Launches pick views and rows at random; the first pair in launch order is named.
  qd_test::init_arch(qd::arch::reference);
  using g2 = qd::types::ndarray<double, 2, qd::needs_grad>;
  auto step = qd::kernel("step", {"a", "b", "r", "w"}, [](g2 a, g2 b, qd::i32 r, qd::i32 w) {
    qd::range_for(a.shape(1), [&](qd::i32 j) { b(w, j) = a(r, j) * a(r, j); });
  });
  auto lin = qd::kernel("lin", {"a", "b", "r", "w"}, [](g2 a, g2 b, qd::i32 r, qd::i32 w) {
    qd::range_for(a.shape(1), [&](qd::i32 j) { qd::atomic_add(b(w, j), 2.0 * a(r, j)); });
  });
  auto bump = qd::kernel("bump", {"a", "r"},
                         [](g2 a, qd::i32 r) { qd::range_for(a.shape(1), [&](qd::i32 j) { a(r, j) += 1.0; }); });
  auto reset = qd::kernel("reset", {"a", "r"},
                          [](g2 a, qd::i32 r) { qd::range_for(a.shape(1), [&](qd::i32 j) { a(r, j) = 0.5; }); });
  qd::ndarray<double, 2> A({6, 2}, qd::needs_grad), B({6, 2}, qd::needs_grad);
  vec host(12, 0.25), host_grad(12, 0.0);
  using ext = qd::external_array<double, 2>;
  struct view {
    const void* data;
    int rows;
    bool known;
  };
  // A, B; the host buffer as 6 rows (twice), as its first 3 rows, and from its second row on.
  const view views[] = {{&A, 6, true},           {&B, 6, true},           {host.data(), 6, false},
                        {host.data(), 6, false}, {host.data(), 3, false}, {host.data() + 2, 5, false}};
  auto launch_on = [&](int v, auto&& f) {
    switch (v) {
      case 0: return f(A);
      case 1: return f(B);
      case 4: return f(ext(host.data(), {3, 2}, host_grad.data()));
      case 5: return f(ext(host.data() + 2, {5, 2}, host_grad.data() + 2));
      default: return f(ext(host.data(), {6, 2}, host_grad.data()));
    }
  };
  enum class kind { read, overwrite, accumulate };
  struct access {
    int view, row;
    kind k;
    bool needed;
    const char* param;
  };
  struct recorded {
    const char* kernel;
    std::vector<access> accesses;  // in the kernel's order
  };
  auto conflict = [&](const access& r, const access& w) {
    const view &rv = views[r.view], &wv = views[w.view];
    if (rv.data == wv.data && rv.rows == wv.rows) return r.row == w.row;
    if (!rv.known || !wv.known) return rv.data == wv.data;
    return false;  // two qd::ndarrays never share memory
  };
  std::mt19937 rng(27);
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  int refused = 0, accepted = 0;
  for (int round = 0; round < 300; ++round) {
    qd::ndarray<double, 0> loss(qd::needs_grad);
    std::vector<recorded> tape_record;
    std::string error;
    {
      qd::ad::tape tape(loss);
      const int n = 2 + pick(9);
      for (int l = 0; l < n; ++l) {
        const int k = pick(4), va = pick(6), vb = pick(6);
        const int r = pick(views[va].rows), w = pick(views[k < 2 ? vb : va].rows);
        if (k == 0 || k == 1) {
          if (views[va].data == views[vb].data) continue;  // one buffer for a and b: refused at launch
          launch_on(va, [&](auto&& a) {
            launch_on(vb, [&](auto&& b) {
              if (k == 0)
                step(a, b, r, w);
              else
                lin(a, b, r, w);
            });
          });
          tape_record.push_back(
              {k == 0 ? "step" : "lin",
               {{va, r, kind::read, k == 0, "a"}, {vb, w, k == 0 ? kind::overwrite : kind::accumulate, false, "b"}}});
        } else if (k == 2) {
          launch_on(va, [&](auto&& a) { bump(a, r); });
          tape_record.push_back({"bump", {{va, r, kind::accumulate, false, "a"}}});  // += is one update, no read
        } else {
          launch_on(va, [&](auto&& a) { reset(a, w); });
          tape_record.push_back({"reset", {{va, w, kind::overwrite, false, "a"}}});
        }
      }
      try {
        tape.backward();
      } catch (const qd::user_error& e) {
        error = e.what();
      }
    }
    std::string expected;
    for (std::size_t later = 1; later < tape_record.size() && expected.empty(); ++later)
      for (const access& w : tape_record[later].accesses) {
        if (w.k == kind::read || !expected.empty()) continue;
        for (std::size_t earlier = 0; earlier < later && expected.empty(); ++earlier)
          for (const access& r : tape_record[earlier].accesses)
            if (r.k == kind::read && (w.k == kind::overwrite || r.needed) && conflict(r, w)) {
              expected = fmt::format("launch {} (kernel '{}') {} elements of parameter '{}'", later + 1,
                                     tape_record[later].kernel,
                                     w.k == kind::overwrite ? "overwrites" : "accumulates into", w.param);
              expected += fmt::format("|that launch {} (kernel '{}') read as parameter '{}'", earlier + 1,
                                      tape_record[earlier].kernel, r.param);
              break;
            }
      }
    CAPTURE(round);
    CAPTURE(error);
    CAPTURE(expected);
    if (expected.empty()) {
      CHECK(error.find("qd::ad::tape: launch") == std::string::npos);
      ++accepted;
    } else {
      const std::size_t bar = expected.find('|');
      CHECK(error.find(expected.substr(0, bar)) != std::string::npos);
      CHECK(error.find(expected.substr(bar + 1)) != std::string::npos);
      ++refused;
    }
  }
  MESSAGE("random tapes: refused " << refused << ", accepted " << accepted);
  CHECK(refused > 50);  // both outcomes are exercised
  CHECK(accepted > 50);
}

TEST_CASE("vectors and matrices (SPEC §11.1, unrolled to scalars) differentiate through their operations") {
  auto k =
      qd::kernel("vec_energy", {"x", "y"},
                 [](qd::types::ndarray<double, 2, qd::needs_grad> x, qd::types::ndarray<double, 1, qd::needs_grad> y) {
                   qd::range_for(x.shape(0), [&](qd::i32 i) {
                     qd::i32 j = (i + 1) % x.shape(0);
                     qd::vec3d p(x(i, 0), x(i, 1), x(i, 2)), q(x(j, 0), x(j, 1), x(j, 2));
                     qd::mat3d m = qd::outer(p, q) + qd::mat3d::identity() * 2.0;
                     qd::var<qd::vec3d> acc = qd::normalize(p);
                     acc += qd::inverse(m) * q;
                     y[i] = qd::norm(p - q) + qd::dot(qd::cross(p, q), q) * 0.5 + qd::determinant(m) + qd::dot(acc, p) +
                            qd::transpose(m)(0, 1) * p.x();
                   });
                 });
  const int n = 4;
  vec x0(3 * n), w(n);
  for (int q = 0; q < 3 * n; ++q) x0[static_cast<std::size_t>(q)] = 0.4 + 0.3 * std::sin(0.9 * q + 0.2);
  for (int q = 0; q < n; ++q) w[static_cast<std::size_t>(q)] = 0.7 + 0.2 * std::cos(1.1 * q);
  on_each_arch([&] {
    auto loss = [&](const vec& xs) {
      qd::ndarray<double, 2> x({n, 3}, qd::needs_grad);
      qd::ndarray<double, 1> y(n, qd::needs_grad);
      x.from_host(xs);
      k(x, y);
      return dot(y.to_host(), w);
    };
    qd::ndarray<double, 2> x({n, 3}, qd::needs_grad);
    qd::ndarray<double, 1> y(n, qd::needs_grad);
    x.from_host(x0);
    k(x, y);
    y.grad().from_host(w);
    k.grad(x, y);
    check_close(x.grad().to_host(), central_differences(loss, x0));
  });
}

TEST_CASE("one array for two parameters: refused where it would change the gradient, exact where it cannot") {
  using g1 = qd::types::ndarray<double, 1, qd::needs_grad>;
  using p1 = qd::types::ndarray<double, 1>;
  using g0 = qd::types::ndarray<double, 0, qd::needs_grad>;
  auto square = qd::kernel("square", {"a", "b"},
                           [](g1 a, g1 b) { qd::range_for(a.shape(0), [&](qd::i32 i) { b[i] = a[i] * a[i]; }); });
  auto product = qd::kernel("product", {"a", "b", "out"}, [](g1 a, g1 b, g1 out) {
    qd::range_for(a.shape(0), [&](qd::i32 i) { out[i] = a[i] * b.at(i + 1, qd::boundary::clamp); });
  });
  // w carries the gradient; c and d are only read, so one array for both changes nothing.
  auto weigh = qd::kernel("weigh", {"w", "c", "d", "loss"}, [](g1 w, p1 c, p1 d, g0 loss) {
    qd::range_for(w.shape(0), [&](qd::i32 i) { loss() += w[i] * c[i] * qd::sin(d[i]); });
  });
  auto total = qd::kernel("total", {"y", "loss"},
                          [](g1 y, g0 loss) { qd::range_for(y.shape(0), [&](qd::i32 i) { loss() += y[i]; }); });
  const vec x0 = positive(5, 0.3);
  on_each_arch([&] {
    // k(y, y) with b[i] = a[i] * a[i]: the forward runs (y becomes y * y) but its adjoint
    // would read the overwritten y; by hand and from a tape alike, it is refused.
    auto y = array_of(x0);
    square(y, y);
    check_close(y.to_host(), {x0[0] * x0[0], x0[1] * x0[1], x0[2] * x0[2], x0[3] * x0[3], x0[4] * x0[4]});
    y.grad().fill(1.0);
    CHECK_THROWS_WITH_AS(square.grad(y, y),
                         Contains("kernel 'square.grad': parameters 'a' and 'b' are given the same array"),
                         qd::user_error);
    CHECK_THROWS_WITH_AS(square.grad(y, y), Contains("writes 'b'"), qd::user_error);
    {
      qd::ndarray<double, 0> loss(qd::needs_grad);
      qd::ad::tape tape(loss);
      square(y, y);
      total(y, loss);
      CHECK_THROWS_WITH_AS(tape.backward(), Contains("parameters 'a' and 'b' are given the same array"),
                           qd::user_error);
    }
    // Both read, both needing gradients: updates of one gradient buffer through two
    // parameters could race, so this is refused too.
    auto out = array_of(vec(x0.size(), 0.0));
    product(y, y, out);
    CHECK_THROWS_WITH_AS(product.grad(y, y, out), Contains("parameters 'a' and 'b' are given the same array"),
                         qd::user_error);
    // Two read-only parameters without gradients sharing an array: exact, against central
    // finite differences in f64.
    const vec z0 = positive(5, 1.1);
    auto loss_of = [&](const vec& ws) {
      auto w = array_of(ws), z = array_of(z0, false);
      qd::ndarray<double, 0> loss(qd::needs_grad);
      loss.fill(0.0);
      weigh(w, z, z, loss);
      return std::pair{loss.to_host()[0], std::move(w)};
    };
    auto [value, w] = loss_of(x0);
    auto z = array_of(z0, false);
    qd::ndarray<double, 0> loss(qd::needs_grad);
    loss.grad().fill(1.0);
    weigh.grad(w, z, z, loss);
    check_close(w.grad().to_host(), central_differences([&](const vec& ws) { return loss_of(ws).first; }, x0));
  });
}

TEST_CASE("long random tapes of rectangles: the conflict named is the first a search over every pair finds") {
  // The tape indexes the reads as launches are recorded (the newest in a list, older ones
  // in blocks merged as the tape grows, each sorted in its own narrowest dimension); here
  // against a search over every earlier read. A first phase of 600 to 1,000 launches reads
  // random rectangles of `a` (tall ones, then wide ones: blocks sorted by columns, then by
  // rows, then merged) and overwrites some of `b`; then launches read `b` and overwrite
  // random rectangles of `a`, which mostly meet several earlier reads, until one meets any.
  qd_test::init_cpu();
  using g2 = qd::types::ndarray<float, 2, qd::needs_grad>;
  using i32 = qd::i32;
  auto rect = qd::kernel("rect", {"x", "y", "sink", "rr", "rc", "nr", "nc", "wr", "wc", "mr", "mc"},
                         [](g2 x, g2 y, g2 sink, i32 rr, i32 rc, i32 nr, i32 nc, i32 wr, i32 wc, i32 mr, i32 mc) {
                           qd::range_for(qd::ndrange(nr, nc),
                                         [&](i32 i, i32 j) { sink(i, j) = x(rr + i, rc + j) * x(rr + i, rc + j); });
                           qd::range_for(qd::ndrange(mr, mc), [&](i32 i, i32 j) { y(wr + i, wc + j) = 0.5f; });
                         });
  constexpr int n = 256, longest = 16;
  qd::ndarray<float, 2> arrays[2] = {{{n, n}, qd::needs_grad}, {{n, n}, qd::needs_grad}};  // a, b
  qd::ndarray<float, 2> sink({longest, longest}, qd::needs_grad);
  struct box {
    int array, row, col, rows, cols;
  };
  auto meet = [](const box& a, const box& b) {
    return a.array == b.array && a.row < b.row + b.rows && b.row < a.row + a.rows && a.col < b.col + b.cols &&
           b.col < a.col + a.cols;
  };
  std::mt19937 rng(1227);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto random_box = [&](int array, int tall_percent, int widest) {
    const bool tall = pick(0, 99) < tall_percent;
    box b{array, 0, 0, tall ? pick(1, longest) : pick(1, widest), tall ? pick(1, widest) : pick(1, longest)};
    b.row = pick(0, n - b.rows);
    b.col = pick(0, n - b.cols);
    return b;
  };
  int refused = 0, several = 0;
  for (int round = 0; round < 40; ++round) {
    CAPTURE(round);
    qd::ndarray<float, 0> loss(qd::needs_grad);
    const int first_phase = pick(600, 1000);
    std::vector<box> reads;  // launch l read reads[l]
    std::string expected;
    qd::ad::tape tape(loss);
    for (int launch = 0; launch < first_phase + 100 && expected.empty(); ++launch) {
      const bool first = launch < first_phase;
      const int x = first ? 0 : 1, tall_percent = !first ? 50 : launch < first_phase / 2 ? 90 : 10;
      const box r = random_box(x, tall_percent, 3), w = random_box(1 - x, 50, first ? 3 : longest);
      rect(arrays[x], arrays[1 - x], sink, r.row, r.col, r.rows, r.cols, w.row, w.col, w.rows, w.cols);
      int met = 0;
      for (std::size_t e = 0; e < reads.size(); ++e)
        if (meet(reads[e], w) && met++ == 0)
          expected = fmt::format(
              "launch {} (kernel 'rect') overwrites elements of parameter 'y' (#1, ndarray<f32, 2, needs_grad>) "
              "that launch {} (kernel 'rect') read as parameter 'x'",
              launch + 1, e + 1);
      several += met > 1;
      reads.push_back(r);
    }
    CAPTURE(expected);
    if (expected.empty()) {
      CHECK_NOTHROW(tape.backward());
    } else {
      CHECK_THROWS_WITH_AS(tape.backward(), Contains(expected.c_str()), qd::user_error);
      ++refused;
    }
  }
  CHECK(refused >= 30);  // the second phase meets the first one's reads
  CHECK(several >= 20);  // mostly several of them: the first is named
}

TEST_CASE("tapes destroyed out of order or on another thread stop recording; later launches and tapes work") {
  using g1 = qd::types::ndarray<double, 1, qd::needs_grad>;
  using g0 = qd::types::ndarray<double, 0, qd::needs_grad>;
  auto twice =
      qd::kernel("twice", [](g1 x, g1 y) { qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = 2.0 * x[i]; }); });
  auto total =
      qd::kernel("total", [](g1 y, g0 loss) { qd::range_for(y.shape(0), [&](qd::i32 i) { loss() += y[i]; }); });
  qd_test::init_cpu();
  auto x = array_of({1.0, 2.0, 3.0}), y = array_of({0.0, 0.0, 0.0});
  qd::ndarray<double, 0> outer_loss(qd::needs_grad), inner_loss(qd::needs_grad);
  // A fresh tape after the mishaps still records exactly its own launches.
  auto fresh_tape_works = [&] {
    x.grad().fill(0.0);
    y.grad().fill(0.0);
    qd::ndarray<double, 0> loss(qd::needs_grad);
    loss.fill(0.0);
    qd::ad::tape tape(loss);
    twice(x, y);
    total(y, loss);
    tape.backward();
    CHECK(x.grad().to_host() == vec{2.0, 2.0, 2.0});
  };
  SUBCASE("the outer tape first") {
    auto outer = std::make_unique<qd::ad::tape>(outer_loss);
    auto inner = std::make_unique<qd::ad::tape>(inner_loss);
    outer.reset();
    twice(x, y);  // recorded by the inner tape, the live one
    inner.reset();
    twice(x, y);  // recorded by none
    fresh_tape_works();
  }
  SUBCASE("the inner tape records, the outer one runs backward after the inner one is gone") {
    x.grad().fill(0.0);
    y.grad().fill(0.0);
    outer_loss.fill(0.0);
    auto outer = std::make_unique<qd::ad::tape>(outer_loss);
    {
      qd::ad::tape inner(inner_loss);
      twice(x, y);  // the inner tape's
    }
    total(y, outer_loss);  // the outer tape's again
    outer->backward();     // total's adjoint only: y.grad = 1, x.grad untouched
    CHECK(y.grad().to_host() == vec{1.0, 1.0, 1.0});
    CHECK(x.grad().to_host() == vec{0.0, 0.0, 0.0});
    outer.reset();
    fresh_tape_works();
  }
  SUBCASE("destroyed on another thread") {
    auto tape = std::make_unique<qd::ad::tape>(outer_loss);
    twice(x, y);
    std::thread([&] { tape.reset(); }).join();
    twice(x, y);  // this thread's tape is gone: recorded by none
    fresh_tape_works();
  }
  SUBCASE("created on a thread that then ends, backward() and destroyed here") {
    x.grad().fill(0.0);
    y.grad().fill(0.0);
    outer_loss.fill(0.0);
    std::unique_ptr<qd::ad::tape> tape;
    std::thread([&] {
      tape = std::make_unique<qd::ad::tape>(outer_loss);
      twice(x, y);
      total(y, outer_loss);
    }).join();
    tape->backward();
    CHECK(x.grad().to_host() == vec{2.0, 2.0, 2.0});
    tape.reset();
    fresh_tape_works();
  }
}
