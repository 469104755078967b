// Storing an f64 into an i32 array needs qd::cast.
// expect: lose information
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<std::int32_t, 1> a, qd::types::ndarray<double, 1> x) {
  qd::range_for(a.shape(0), [&](qd::i32 i) {
#ifdef QD_MISUSE
    a[i] = x[i];
#else
    a[i] = qd::cast<std::int32_t>(x[i]);
#endif
  });
});
