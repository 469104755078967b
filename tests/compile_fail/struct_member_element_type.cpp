// A host struct whose array member has another element type than the kernel struct's.
// expect: element type differs from the parameter's
#include <quadrants/quadrants.hpp>
#include <cstdint>
struct view {
  qd::types::ndarray<float, 1> pos;
  qd::f32 mass;
};
#ifdef QD_MISUSE
struct host {
  qd::ndarray<std::int32_t, 1> pos;
  float mass;
};
#else
struct host {
  qd::ndarray<float, 1> pos;
  float mass;
};
#endif
void run() {
  auto k = qd::kernel("k", [](view v) { qd::range_for(v.pos.shape(0), [&](qd::i32 i) { v.pos[i] = v.mass; }); });
  host h{decltype(host::pos)(4), 1.0f};
  k(h);
}
