// qd::loop_config goes just before the loop body, not after it.
// expect: no matching function for call to .*range_for
#include <quadrants/quadrants.hpp>
void run() {
  auto k = qd::kernel("k", [](qd::types::ndarray<float, 1> x) {
#ifdef QD_MISUSE
    qd::range_for(
        x.shape(0), [&](qd::i32 i) { x[i] = 1.0f; }, qd::loop_config{.block_dim = 64});
#else
    qd::range_for(x.shape(0), qd::loop_config{.block_dim = 64}, [&](qd::i32 i) { x[i] = 1.0f; });
#endif
  });
  (void)k;
}
