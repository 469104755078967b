// std::sqrt of a traced value: one error naming qd::sqrt, not an ambiguous-overload list.
// expect: has no C\+\+ value while the kernel is traced. For math, use qd::sqrt
#include <cmath>
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> x) {
  qd::range_for(x.shape(0), [&](qd::i32 i) {
#ifdef QD_MISUSE
    x[i] = std::sqrt(x[i]);
#else
    x[i] = qd::sqrt(x[i]);
#endif
  });
});
