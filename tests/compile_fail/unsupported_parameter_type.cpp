// A plain C++ int is not a kernel parameter type (use qd::i32).
// expect: a kernel parameter must be
#include <quadrants/quadrants.hpp>
#ifdef QD_MISUSE
auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> x, int n) { x[0] = 1.0f; });
#else
auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> x, qd::i32 n) { x[0] = qd::cast<float>(n); });
#endif
