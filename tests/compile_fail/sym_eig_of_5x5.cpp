// qd::sym_eig is unrolled up to 4x4: a 5x5 does not compile.
// expect: qd::sym_eig and qd::make_spd are unrolled for 2x2, 3x3 and 4x4 matrices
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> out) {
  qd::range_for(out.shape(0), [&](qd::i32 i) {
#ifdef QD_MISUSE
    const auto a = qd::mat<float, 5, 5>::identity();
#else
    const auto a = qd::mat<float, 4, 4>::identity();
#endif
    out[i] = qd::make_spd(a)(0, 0);
  });
});
