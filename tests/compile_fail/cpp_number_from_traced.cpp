// A traced value is not a C++ number while tracing: `float v = x[i]` names qd::f32 and qd::var.
// expect: to keep a traced value, use qd::f32 v
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out) {
  qd::range_for(x.shape(0), [&](qd::i32 i) {
#ifdef QD_MISUSE
    float v = x[i];
#else
    qd::f32 v = x[i];
#endif
    out[i] = v * 2.0f;
  });
});
