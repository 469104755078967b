// Device arrays are not copied implicitly.
// expect: deleted
#include <quadrants/quadrants.hpp>
void run() {
  qd::ndarray<float, 1> a(4);
#ifdef QD_MISUSE
  qd::ndarray<float, 1> b = a;
#else
  qd::ndarray<float, 1> b = std::move(a);
#endif
  (void)b;
}
