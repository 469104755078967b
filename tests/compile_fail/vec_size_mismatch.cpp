// A qd::vec3f where a qd::vec4f is needed does not compile.
// expect: different sizes
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<qd::vec3f, 1> p, qd::types::ndarray<qd::vec4f, 1> q) {
  qd::range_for(p.shape(0), [&](qd::i32 i) {
#ifdef QD_MISUSE
    p[i] = p[i] + q[i];
#else
    p[i] = p[i] + qd::vec3f(q[i].x(), q[i].y(), q[i].z());
#endif
  });
});
