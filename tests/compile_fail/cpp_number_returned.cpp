// A kernel lambda returning a C++ number: it would be a trace-time constant.
// expect: a kernel lambda may return a traced scalar
#include <quadrants/quadrants.hpp>
void run() {
#ifdef QD_MISUSE
  auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> x) { return x.shape(0) > 0 ? 1.0f : 0.0f; });
#else
  auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> x) { return qd::f32(x[0]); });
#endif
  qd::ndarray<float, 1> a(4);
  float r = k(a);
  (void)r;
}
