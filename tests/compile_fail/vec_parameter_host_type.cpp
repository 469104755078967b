// A qd::vec3f parameter takes a std::array<float, 3>, not a std::array<float, 2>.
// expect: a qd::vec<T, N> parameter takes a std::array<T, N>
#include <array>
#include <quadrants/quadrants.hpp>
void f() {
  auto k = qd::kernel("k", [](qd::types::ndarray<qd::vec3f, 1> p, qd::vec3f g) {
    qd::range_for(p.shape(0), [&](qd::i32 i) { p[i] = p[i] + g; });
  });
  qd::ndarray<qd::vec3f, 1> p(4);
#ifdef QD_MISUSE
  k(p, std::array<float, 2>{1.0f, 2.0f});
#else
  k(p, std::array<float, 3>{1.0f, 2.0f, 3.0f});
#endif
}
