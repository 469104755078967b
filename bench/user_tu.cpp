// A typical user translation unit: includes quadrants.hpp and defines five
// kernels. cpu_bench times how long the host compiler takes to build it.
#include <quadrants/quadrants.hpp>

void define_kernels() {
  auto saxpy = qd::kernel("saxpy", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y, qd::f32 a) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = a * x[i] + y[i]; });
  });
  auto stencil = qd::kernel("stencil", [](qd::types::ndarray<float, 2> u, qd::types::ndarray<float, 2> out) {
    qd::range_for(qd::ndrange(u.shape(0) - 2, u.shape(1) - 2), [&](qd::i32 i, qd::i32 j) {
      out(i + 1, j + 1) = 0.25f * (u(i, j + 1) + u(i + 2, j + 1) + u(i + 1, j) + u(i + 1, j + 2));
    });
  });
  auto total = qd::kernel("total", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out) {
    qd::var<float> sum = 0.0f;
    qd::range_for(x.shape(0), [&](qd::i32 i) { sum += x[i]; });
    out[0] = sum;
  });
  auto clamp = qd::kernel("clamp", [](qd::types::ndarray<float, 1> x, qd::f32 lo, qd::f32 hi) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = qd::min(qd::max(x[i], lo), hi); });
  });
  auto histogram =
      qd::kernel("histogram", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 1> bins) {
        qd::range_for(x.shape(0), [&](qd::i32 i) {
          qd::i32 b = qd::cast<std::int32_t>(qd::floor(x[i] * qd::cast<float>(bins.shape(0))));
          qd::if_(b >= 0 && b < bins.shape(0), [&] { qd::atomic_add(bins[b], 1); });
        });
      });
  qd::ndarray<float, 1> x(16), y(16), out(1);
  qd::ndarray<float, 2> u({8, 8}), v({8, 8});
  qd::ndarray<std::int32_t, 1> bins(4);
  saxpy(x, y, 2.0f);
  stencil(u, v);
  total(x, out);
  clamp(x, 0.0f, 1.0f);
  histogram(x, bins);
}
