// qd::solve(A, b) needs b of A's size.
// expect: b needs one component per row of A
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<qd::mat3f, 1> m, qd::types::ndarray<float, 1> out) {
  qd::range_for(out.shape(0), [&](qd::i32 i) {
#ifdef QD_MISUSE
    out[i] = qd::solve(m[i], qd::vec2f(1.0f, 2.0f)).x();
#else
    out[i] = qd::solve(m[i], qd::vec3f(1.0f, 2.0f, 3.0f)).x();
#endif
  });
});
