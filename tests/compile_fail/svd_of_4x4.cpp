// qd::svd is unrolled for 2x2 and 3x3 only: a 4x4 does not compile.
// expect: qd::svd and qd::polar_decompose are unrolled for 2x2 and 3x3 matrices
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<qd::mat4f, 1> m, qd::types::ndarray<float, 1> out) {
  qd::range_for(out.shape(0), [&](qd::i32 i) {
#ifdef QD_MISUSE
    auto [R, P] = qd::polar_decompose(m[i]);
    out[i] = R(0, 0) + P(0, 0);
#else
    auto [w, Q] = qd::sym_eig(m[i]);
    out[i] = w[0] + Q(0, 0);
#endif
  });
});
