// Passing a 2-D array to a 1-D array parameter.
// expect: number of dimensions differs
#include <quadrants/quadrants.hpp>
void run() {
  auto k = qd::kernel(
      "k", [](qd::types::ndarray<float, 1> x) { qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 1.0f; }); });
#ifdef QD_MISUSE
  qd::ndarray<float, 2> a({2, 2});
#else
  qd::ndarray<float, 1> a(4);
#endif
  k(a);
}
