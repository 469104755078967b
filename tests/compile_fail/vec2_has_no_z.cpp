// A 2-vector has no .z().
// expect: (constraints not satisfied|no matching|does not satisfy|candidate)
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<qd::vec2f, 1> p, qd::types::ndarray<float, 1> out) {
  qd::range_for(p.shape(0), [&](qd::i32 i) {
    qd::vec2f v = p[i];
#ifdef QD_MISUSE
    out[i] = v.z();
#else
    out[i] = v.y();
#endif
  });
});
