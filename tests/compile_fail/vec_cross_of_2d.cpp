// qd::cross of 2-vectors does not compile.
// expect: qd::cross takes two 3-component vectors
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<qd::vec2f, 1> p, qd::types::ndarray<float, 1> out) {
  qd::range_for(p.shape(0), [&](qd::i32 i) {
#ifdef QD_MISUSE
    out[i] = qd::cross(p[i], p[i]).x();
#else
    out[i] = p[i].x() * p[i].y() - p[i].y() * p[i].x();
#endif
  });
});
