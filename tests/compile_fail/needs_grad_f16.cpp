// f16 is storage: a qd::needs_grad array of it does not compile.
// expect: qd::needs_grad does not take f16 elements
#include <quadrants/quadrants.hpp>
#ifdef QD_MISUSE
using param = qd::types::ndarray<qd::half, 1, qd::needs_grad>;
#else
using param = qd::types::ndarray<float, 1, qd::needs_grad>;
#endif
auto k = qd::kernel("k", [](param x) { qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * 2.0f; }); });
