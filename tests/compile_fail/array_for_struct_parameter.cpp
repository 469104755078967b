// Passing an array where the kernel takes a struct parameter.
// expect: this parameter is a struct
#include <quadrants/quadrants.hpp>
struct view {
  qd::types::ndarray<float, 1> pos;
  qd::f32 mass;
};
struct host {
  qd::ndarray<float, 1> pos;
  float mass;
};
void run() {
  auto k = qd::kernel("k", [](view v) { qd::range_for(v.pos.shape(0), [&](qd::i32 i) { v.pos[i] = v.mass; }); });
  host h{qd::ndarray<float, 1>(4), 1.0f};
#ifdef QD_MISUSE
  k(h.pos);
#else
  k(h);
#endif
}
