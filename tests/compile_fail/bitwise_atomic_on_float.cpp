// qd::atomic_and, atomic_or and atomic_xor take integers only.
// expect: take integer elements and variables
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::uint32_t, 1> bits) {
  qd::range_for(x.shape(0), [&](qd::i32 i) {
#ifdef QD_MISUSE
    qd::atomic_or(x[0], x[i]);
#else
    qd::atomic_or(bits[0], qd::bit_cast<qd::u32>(x[i]));
#endif
  });
});
