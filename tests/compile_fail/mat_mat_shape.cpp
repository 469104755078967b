// A product of matrices whose inner dimensions differ does not compile.
// expect: the left matrix needs as many columns as the right one has rows
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<qd::mat3f, 1> m, qd::types::ndarray<qd::mat2f, 1> n,
                            qd::types::ndarray<qd::mat3f, 1> out) {
  qd::range_for(m.shape(0), [&](qd::i32 i) {
#ifdef QD_MISUSE
    out[i] = m[i] * n[i];
#else
    out[i] = m[i] * qd::transpose(m[i]);
#endif
  });
});
