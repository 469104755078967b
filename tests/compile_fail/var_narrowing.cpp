// A qd::var<float> does not silently take an f64.
// expect: does not convert to the variable's type
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> a, qd::f64 s) {
#ifdef QD_MISUSE
  qd::var<float> v = s;
#else
  qd::var<float> v = qd::cast<float>(s);
#endif
  a[0] = v;
});
