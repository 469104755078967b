// The packaging tests' program: one kernel, its result checked.
#include <quadrants/quadrants.hpp>

#include <cstdio>
#include <vector>

int main() {
  qd::init({.arch = qd::arch::cpu, .offline_cache = false});
  auto scale = qd::kernel("scale", [](qd::types::ndarray<float, 1> x, qd::f32 s) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * s + qd::cast<float>(i); });
  });
  qd::ndarray<float, 1> x(8);
  x.fill(2.0f);
  scale(x, 3.0f);
  std::vector<float> r = x.to_host();
  for (int i = 0; i < 8; ++i) {
    if (r[static_cast<std::size_t>(i)] != 6.0f + static_cast<float>(i)) {
      std::printf("wrong result at %d: %g\n", i, r[static_cast<std::size_t>(i)]);
      return 1;
    }
  }
  std::printf("package consumer: ok\n");
  return 0;
}
