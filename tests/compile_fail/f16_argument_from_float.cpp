// A qd::f16 parameter takes a qd::half (or _Float16): a float would round silently.
// expect: a qd::f16 parameter takes a qd::half
#include <quadrants/quadrants.hpp>
int main() {
  auto k = qd::kernel("k", [](qd::types::ndarray<qd::half, 1> x, qd::f16 s) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = s; });
  });
  qd::ndarray<qd::half, 1> x(4);
#ifdef QD_MISUSE
  k(x, 0.1f);
#else
  k(x, qd::half(0.1f));
#endif
}
