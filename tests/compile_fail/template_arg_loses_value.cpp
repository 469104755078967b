// A template argument's value converts only where no value can change, as scalar arguments do.
// expect: would change on conversion to the template argument's type
#include <quadrants/quadrants.hpp>
void run() {
  auto k = qd::kernel("k", [](qd::types::template_arg<int> n, qd::types::ndarray<float, 1> x) {
    qd::range_for(n, [&](qd::i32 i) { x[i] = 1.0f; });
  });
  qd::ndarray<float, 1> a(4);
#ifdef QD_MISUSE
  k(2.5, a);
#else
  k(2, a);
#endif
}
