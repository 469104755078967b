// A host struct member that is a non-const reference: the message says members are values or const&.
// expect: must be values or const references
#include <quadrants/quadrants.hpp>
struct view {
  qd::types::ndarray<float, 1> pos;
  qd::f32 mass;
};
#ifdef QD_MISUSE
struct host {
  qd::ndarray<float, 1>& pos;
  float mass;
};
#else
struct host {
  const qd::ndarray<float, 1>& pos;
  float mass;
};
#endif
void run() {
  auto k = qd::kernel("k", [](view v) { qd::range_for(v.pos.shape(0), [&](qd::i32 i) { v.pos[i] = v.mass; }); });
  qd::ndarray<float, 1> a(4);
  k(host{a, 1.0f});
}
