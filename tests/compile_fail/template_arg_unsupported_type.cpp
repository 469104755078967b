// A template argument is a value the kernel is specialised for: integral, floating, enum or bool.
// expect: template_arg<T> takes an integral, floating-point, enum or bool type
#include <quadrants/quadrants.hpp>
#include <string>
#ifdef QD_MISUSE
using flag = std::string;
#else
using flag = int;
#endif
auto k = qd::kernel("k", [](qd::types::template_arg<flag> f, qd::types::ndarray<float, 1> x) {
  (void)f;
  qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 1.0f; });
});
