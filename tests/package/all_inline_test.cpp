// The all-inline way (docs/architecture.md): one TU includes <quadrants/quadrants.hpp>
// with no macro and links nothing of Quadrants. Guards the include order of the
// headers whose -inl files need each other's declarations (dispatch, kernel state,
// launch, gradient, graph); then a kernel using the second wave's features runs on
// the CPU backend and is checked against plain C++.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include <quadrants/quadrants.hpp>

#ifndef QD_HEADER_ONLY
#error "this test must be built without QD_SEPARATE_COMPILATION"
#endif

TEST_CASE("all-inline: a kernel with vectors, a return value and its gradient runs on the CPU") {
  qd::init({.arch = qd::arch::cpu, .offline_cache = false});
  auto k = qd::kernel(
      "all_inline",
      [](qd::types::ndarray<float, 1, qd::needs_grad> x, qd::types::ndarray<float, 0, qd::needs_grad> e) -> qd::f32 {
        qd::var<float> s = 0.0f;
        qd::range_for(x.shape(0), [&](qd::i32 i) {
          qd::vec2f v(x[i], 2.0f * x[i]);
          e() += qd::dot(v, v);  // 5 x^2
          s += x[i];
        });
        return s;
      });
  const int n = 7;
  std::vector<float> xs(n);
  float sum = 0.0f, energy = 0.0f;
  for (int i = 0; i < n; ++i) {
    xs[static_cast<std::size_t>(i)] = 0.5f * static_cast<float>(i) - 1.0f;
    sum += xs[static_cast<std::size_t>(i)];
    energy += 5.0f * xs[static_cast<std::size_t>(i)] * xs[static_cast<std::size_t>(i)];
  }
  qd::ndarray<float, 1> x(n, qd::needs_grad);
  qd::ndarray<float, 0> e(qd::needs_grad);
  x.from_host(xs);
  float got = k(x, e);
  CHECK(got == doctest::Approx(sum));
  CHECK(e.to_host()[0] == doctest::Approx(energy));
  e.grad().fill(1.0f);
  k.grad(x, e);
  std::vector<float> g = x.grad().to_host();
  for (int i = 0; i < n; ++i)
    CHECK(g[static_cast<std::size_t>(i)] == doctest::Approx(10.0f * xs[static_cast<std::size_t>(i)]));
  qd::reset();
}
