// A qd::vec3f does not convert to a qd::vec4f.
// expect: (no viable conversion|conversion from|cannot convert|could not convert)
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<qd::vec3f, 1> p, qd::types::ndarray<qd::vec4f, 1> q) {
  qd::range_for(p.shape(0), [&](qd::i32 i) {
    qd::vec3f v = p[i];
#ifdef QD_MISUSE
    qd::vec4f w = v;
#else
    qd::vec4f w(v.x(), v.y(), v.z(), 1.0f);
#endif
    q[i] = w;
  });
});
