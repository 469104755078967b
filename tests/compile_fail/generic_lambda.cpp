// Kernel parameters must be typed so the signature can be reflected.
// expect: typed parameters
#include <quadrants/quadrants.hpp>
void run() {
#ifdef QD_MISUSE
  auto k = qd::kernel("k", [](auto x) { x[0] = 1.0f; });
#else
  auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> x) { x[0] = 1.0f; });
#endif
  (void)k;
}
