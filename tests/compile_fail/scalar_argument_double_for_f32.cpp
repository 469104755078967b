// A double passed to a qd::f32 parameter would be rounded: pass a float (2.5f).
// expect: this C\+\+ number would change on conversion
#include <quadrants/quadrants.hpp>
void run() {
  auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> x, qd::f32 s, qd::f64 d) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = s + qd::cast<float>(d); });
  });
  qd::ndarray<float, 1> a(4);
#ifdef QD_MISUSE
  k(a, 2.5, 2.5);
#else
  k(a, 2.5f, 2.5f);  // float to qd::f64 preserves the value
#endif
}
