// A loop body taking `int i`: the message names qd::i32.
// expect: takes its loop indices as qd::i32
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> x) {
#ifdef QD_MISUSE
  qd::range_for(x.shape(0), [&](int i) { x[i] = 1.0f; });
#else
  qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 1.0f; });
#endif
});
