// A qd::var captured by value would be updated as a copy while the kernel reads
// the original: a by-value capture does not compile; `qd::var<T> w = v;` still does.
// expect: Capture qd::var by reference
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out) {
  qd::var<float> total = 0.0f;
  qd::var<float> snapshot = total;  // copy-initialization: a new variable, allowed
#ifdef QD_MISUSE
  qd::range_for(x.shape(0), [=](qd::i32 i) mutable { total += x[i]; });
#else
  qd::range_for(x.shape(0), [&](qd::i32 i) { total += x[i]; });
#endif
  out[0] = total + snapshot;
});
