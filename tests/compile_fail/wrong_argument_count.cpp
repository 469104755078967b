// Calling a kernel with too few arguments.
// expect: wrong number of kernel arguments
#include <quadrants/quadrants.hpp>
void run() {
  auto k = qd::kernel(
      "k", [](qd::types::ndarray<float, 1> x, qd::f32 s) { qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = s; }); });
  qd::ndarray<float, 1> a(4);
#ifdef QD_MISUSE
  k(a);
#else
  k(a, 1.0f);
#endif
}
