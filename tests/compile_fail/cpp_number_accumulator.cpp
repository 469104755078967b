// `float acc; acc += x[i]` would add once, while tracing: the error says to use a qd::var.
// expect: Declare the accumulator as a qd::var, e.g. qd::var<float> acc
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out) {
#ifdef QD_MISUSE
  float acc = 0.0f;
#else
  qd::var<float> acc = 0.0f;
#endif
  qd::range_for(x.shape(0), [&](qd::i32 i) { acc += x[i]; });
  out[0] = acc;
});
