// Kernel line coverage's run-time cost (issue 14: at most 2x): a 2-D stencil and an
// N-body step, each timed with kernel_coverage off and on (medians), on the CPU.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "bench_support.hpp"

namespace {

auto stencil_kernel() {
  return qd::kernel("cov_stencil", [](qd::types::ndarray<float, 2> u, qd::types::ndarray<float, 2> out) {
    qd::range_for(qd::ndrange(u.shape(0) - 2, u.shape(1) - 2), [&](qd::i32 i, qd::i32 j) {
      out(i + 1, j + 1) = 0.25f * (u(i, j + 1) + u(i + 2, j + 1) + u(i + 1, j) + u(i + 1, j + 2));
    });
  });
}

auto nbody_kernel() {
  return qd::kernel("cov_nbody", [](qd::types::ndarray<float, 2> pos, qd::types::ndarray<float, 2> acc) {
    qd::range_for(pos.shape(0), [&](qd::i32 i) {
      qd::var<float> ax = 0.0f, ay = 0.0f, az = 0.0f;
      qd::range_for(pos.shape(0), [&](qd::i32 j) {
        qd::f32 dx = pos(j, 0) - pos(i, 0), dy = pos(j, 1) - pos(i, 1), dz = pos(j, 2) - pos(i, 2);
        qd::f32 r2 = dx * dx + dy * dy + dz * dz + 1e-3f;
        qd::f32 inv = 1.0f / (r2 * qd::sqrt(r2));
        ax += dx * inv;
        ay += dy * inv;
        az += dz * inv;
      });
      acc(i, 0) = ax;
      acc(i, 1) = ay;
      acc(i, 2) = az;
    });
  });
}

double median_ms(int rounds, const std::function<void()>& f) {
  f();  // compile and warm up
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) t.push_back(qd_bench::ms(f));
  return qd_bench::median(t);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  ::setenv("QD_KERNEL_COVERAGE_FILE", "/tmp/qd_coverage_bench.info", 0);  // the counts are not the point here
  double times[2][2] = {};
  for (int coverage = 0; coverage < 2; ++coverage) {
    qd::init({.arch = qd::arch::cpu, .offline_cache = false, .kernel_coverage = coverage == 1});
    auto stencil = stencil_kernel();
    auto nbody = nbody_kernel();
    qd::ndarray<float, 2> u({2048, 2048}), out({2048, 2048}), pos({2048, 3}), acc({2048, 3});
    u.fill(1.0f);
    pos.fill(0.5f);
    times[coverage][0] = median_ms(rounds, [&] { stencil(u, out); });
    times[coverage][1] = median_ms(rounds, [&] { nbody(pos, acc); });
    qd::reset();
  }
  fmt::print("stencil 2048x2048: coverage off {:.2f} ms, on {:.2f} ms, ratio {:.2f}\n", times[0][0], times[1][0],
             times[1][0] / times[0][0]);
  fmt::print("n-body 2048:       coverage off {:.2f} ms, on {:.2f} ms, ratio {:.2f}\n", times[0][1], times[1][1],
             times[1][1] / times[0][1]);
  return 0;
}
