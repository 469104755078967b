// A matrix times a vector of the wrong size does not compile.
// expect: the vector needs one component per column
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<qd::mat3f, 1> m, qd::types::ndarray<qd::vec4f, 1> v,
                            qd::types::ndarray<qd::vec3f, 1> out) {
  qd::range_for(m.shape(0), [&](qd::i32 i) {
#ifdef QD_MISUSE
    out[i] = m[i] * v[i];
#else
    out[i] = m[i] * qd::vec3f(v[i].x(), v[i].y(), v[i].z());
#endif
  });
});
