// A scalar argument that would change on conversion (3.7 to a qd::i32) does not
// compile; the error names static_cast. Value-preserving ones (int to qd::i64) do.
// expect: convert explicitly with static_cast<T>\(value\)
#include <quadrants/quadrants.hpp>
void run() {
  auto k = qd::kernel("k", [](qd::types::ndarray<std::int32_t, 1> x, qd::i32 n, qd::i64 wide) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = n + qd::cast<std::int32_t>(wide); });
  });
  qd::ndarray<std::int32_t, 1> a(4);
#ifdef QD_MISUSE
  k(a, 3.7, 1);
#else
  k(a, static_cast<std::int32_t>(3.7), 1);
#endif
}
