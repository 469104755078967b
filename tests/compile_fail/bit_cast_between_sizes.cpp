// qd::bit_cast keeps the size: f64 to a 32-bit type does not compile.
// expect: qd::bit_cast keeps the size
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<double, 1> x, qd::types::ndarray<std::uint32_t, 1> out) {
  qd::range_for(x.shape(0), [&](qd::i32 i) {
#ifdef QD_MISUSE
    out[i] = qd::bit_cast<qd::u32>(x[i]);
#else
    out[i] = qd::bit_cast<qd::u32>(qd::cast<float>(x[i]));
#endif
  });
});
