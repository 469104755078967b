// Array indices must be integers.
// expect: array indices must be integers
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> a) {
  qd::range_for(a.shape(0), [&](qd::i32 i) {
#ifdef QD_MISUSE
    a[qd::cast<float>(i)] = 1.0f;
#else
    a[i] = 1.0f;
#endif
  });
});
