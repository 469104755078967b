// .grad() exists only on parameters declared with qd::needs_grad.
// expect: has_grad
#include <quadrants/quadrants.hpp>
#ifdef QD_MISUSE
auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> x) { x.grad()[0] = 1.0f; });
#else
auto k = qd::kernel("k", [](qd::types::ndarray<float, 1, qd::needs_grad> x) { x.grad()[0] = 1.0f; });
#endif
