// % and bitwise operators need integers.
// expect: need integer operands
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> x) {
  qd::range_for(x.shape(0), [&](qd::i32 i) {
#ifdef QD_MISUSE
    x[i] = x[i] % 2.0f;
#else
    x[i] = qd::cast<float>(i % 2);
#endif
  });
});
