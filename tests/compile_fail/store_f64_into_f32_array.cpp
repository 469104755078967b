// Narrowing f64 to f32 on store needs qd::cast too.
// expect: lose information
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> a, qd::f64 s) {
  qd::range_for(a.shape(0), [&](qd::i32 i) {
#ifdef QD_MISUSE
    a[i] = s * 2.0;
#else
    a[i] = qd::cast<float>(s * 2.0);
#endif
  });
});
