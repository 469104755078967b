// Storing a qd::vec3d into an array of qd::vec3f needs an explicit conversion.
// expect: would lose information
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<qd::vec3d, 1> p, qd::types::ndarray<qd::vec3f, 1> out) {
  qd::range_for(p.shape(0), [&](qd::i32 i) {
#ifdef QD_MISUSE
    out[i] = p[i];
#else
    out[i] = qd::vec3f(qd::cast<float>(p[i].x()), qd::cast<float>(p[i].y()), qd::cast<float>(p[i].z()));
#endif
  });
});
