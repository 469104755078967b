// A host struct with another number of members than the kernel's struct parameter.
// expect: the host struct has another number of members
#include <quadrants/quadrants.hpp>
struct view {
  qd::types::ndarray<float, 1> pos;
  qd::f32 mass;
};
struct host2 {
  qd::ndarray<float, 1> pos;
  float mass;
};
struct host3 {
  qd::ndarray<float, 1> pos;
  float mass;
  float extra;
};
void run() {
  auto k = qd::kernel("k", [](view v) { qd::range_for(v.pos.shape(0), [&](qd::i32 i) { v.pos[i] = v.mass; }); });
#ifdef QD_MISUSE
  host3 h{qd::ndarray<float, 1>(4), 1.0f, 2.0f};
#else
  host2 h{qd::ndarray<float, 1>(4), 1.0f};
#endif
  k(h);
}
