// A kernel struct parameter with a plain C++ member: members must be parameter types.
// expect: or a struct \(an aggregate, at most 16 members\) of them
#include <quadrants/quadrants.hpp>
#ifdef QD_MISUSE
struct view {
  qd::types::ndarray<float, 1> pos;
  float mass;
};
#else
struct view {
  qd::types::ndarray<float, 1> pos;
  qd::f32 mass;
};
#endif
void run() {
  auto k = qd::kernel("k", [](view v) { qd::range_for(v.pos.shape(0), [&](qd::i32 i) { v.pos[i] = v.mass; }); });
  (void)k;
}
