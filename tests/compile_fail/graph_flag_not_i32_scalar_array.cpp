// qd::graph::do_while with a flag that is not a 0-d int32 array (issue 13).
// expect: flag must be a 0-d int32 array parameter
#include <quadrants/quadrants.hpp>
void run() {
  auto k =
      qd::kernel("k", qd::graph::on,
#ifdef QD_MISUSE
                 [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 0> keep_going) {
#else
                      [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 0> keep_going) {
#endif
                   qd::graph::do_while(keep_going, [&] { qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 1.0f; }); });
                 });
  (void)k;
}
