// An array of qd::vec3f is not an array of qd::vec4f, nor a float array of shape (n, 3).
// expect: element type differs from the parameter's
#include <quadrants/quadrants.hpp>
void f() {
  auto k = qd::kernel("k", [](qd::types::ndarray<qd::vec4f, 1> p) {
    qd::range_for(p.shape(0), [&](qd::i32 i) { p[i] = p[i] * 2.0f; });
  });
#ifdef QD_MISUSE
  qd::ndarray<qd::vec3f, 1> p(4);
#else
  qd::ndarray<qd::vec4f, 1> p(4);
#endif
  k(p);
}
