// Passing a qd::ndarray<double, 1> where the kernel takes f32 arrays.
// expect: element type differs
#include <quadrants/quadrants.hpp>
void run() {
  auto k = qd::kernel(
      "k", [](qd::types::ndarray<float, 1> x) { qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 1.0f; }); });
#ifdef QD_MISUSE
  qd::ndarray<double, 1> a(4);
#else
  qd::ndarray<float, 1> a(4);
#endif
  k(a);
}
