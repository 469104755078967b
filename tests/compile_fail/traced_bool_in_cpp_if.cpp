// A traced boolean has no C++ truth value: a C++ `if` on it must not compile, and the error names qd::if_.
// expect: use qd::if_
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> x) {
  qd::range_for(x.shape(0), [&](qd::i32 i) {
#ifdef QD_MISUSE
    if (x[i] > 0.0f) x[i] = 0.0f;
#else
    qd::if_(x[i] > 0.0f, [&] { x[i] = 0.0f; });
#endif
  });
});
