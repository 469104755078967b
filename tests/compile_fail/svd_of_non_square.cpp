// qd::svd of a non-square matrix does not compile.
// expect: qd::svd and qd::polar_decompose need a square matrix
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> out) {
  qd::range_for(out.shape(0), [&](qd::i32 i) {
#ifdef QD_MISUSE
    qd::mat<float, 2, 3> a(1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f);
#else
    qd::mat<float, 2, 2> a(1.0f, 2.0f, 3.0f, 4.0f);
#endif
    auto [U, S, V] = qd::svd(a);
    out[i] = S(0, 0) + U(0, 0) + V(0, 0);
  });
});
