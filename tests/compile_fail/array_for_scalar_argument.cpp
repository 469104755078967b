// Passing an array where the kernel takes a scalar.
// expect: this parameter is a scalar
#include <quadrants/quadrants.hpp>
void run() {
  auto k = qd::kernel(
      "k", [](qd::types::ndarray<float, 1> x, qd::f32 s) { qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = s; }); });
  qd::ndarray<float, 1> a(4);
#ifdef QD_MISUSE
  k(a, a);
#else
  k(a, 2.0f);
#endif
}
