// An array of structs takes a qd::ndarray of the matching host struct, member by member.
// expect: does not match the kernel's element struct member by member
#include <array>
#include <quadrants/quadrants.hpp>
struct particle_k {
  qd::vec3f x;
  qd::f32 m;
};
#ifdef QD_MISUSE
struct particle {
  std::array<double, 3> x;
  float m;
};
#else
struct particle {
  std::array<float, 3> x;
  float m;
};
#endif
void run() {
  auto k = qd::kernel("k", [](qd::types::ndarray<particle_k, 1> p) {
    qd::range_for(p.shape(0), [&](qd::i32 i) { p[i].m = p[i].m * 2.0f; });
  });
  qd::ndarray<particle, 1> ps(4);
  k(ps);
}
