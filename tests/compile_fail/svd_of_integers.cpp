// The decompositions take float or double matrices.
// expect: take float or double matrices; convert an integer matrix first
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> out) {
  qd::range_for(out.shape(0), [&](qd::i32 i) {
#ifdef QD_MISUSE
    const qd::mat2i a(1, 2, 3, 4);
#else
    const qd::mat2f a(qd::mat2i(1, 2, 3, 4));
#endif
    auto [U, S, V] = qd::svd(a);
    out[i] = S(1, 1);
  });
});
