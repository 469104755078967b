// The same for qd::var<qd::f32> (the traced name of the type), captured by name.
// expect: Capture qd::var by reference
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out) {
  qd::var<qd::f32> peak = 0.0f;
#ifdef QD_MISUSE
  qd::range_for(x.shape(0), [peak, x](qd::i32 i) mutable { qd::atomic_max(peak, x[i]); });
#else
  qd::range_for(x.shape(0), [&peak, x](qd::i32 i) { qd::atomic_max(peak, x[i]); });
#endif
  out[0] = peak;
});
