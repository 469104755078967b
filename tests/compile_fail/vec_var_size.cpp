// A qd::var<qd::vec3f> does not accumulate a qd::vec4f.
// expect: a qd::var<qd::vec> takes a vector of the same size
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<qd::vec4f, 1> p, qd::types::ndarray<qd::vec3f, 1> out) {
  qd::var<qd::vec3f> acc = qd::vec3f(0.0f);
  qd::range_for(p.shape(0), [&](qd::i32 i) {
#ifdef QD_MISUSE
    acc += p[i];
#else
    acc += qd::vec3f(p[i].x(), p[i].y(), p[i].z());
#endif
  });
  out[0] = acc;
});
