// qd::if_ takes a traced boolean; a C++ bool is a trace-time decision.
// expect: needs a traced boolean
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> x) {
#ifdef QD_MISUSE
  qd::if_(true, [&] { x[0] = 1.0f; });
#else
  if (true) x[0] = 1.0f;
#endif
});
