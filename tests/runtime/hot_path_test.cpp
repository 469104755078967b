// The launch hot path (docs/architecture.md): once a kernel is compiled and its
// arguments seen, a launch allocates nothing on the heap, whatever its parameters --
// arrays and scalars, struct and vector parameters, a return value, a mesh, a graph
// kernel with a do_while. Counted by replacing the global operator new in this
// program; the counts are compared per launch after a warm-up.
#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include "runtime/runtime_test_support.hpp"

namespace {
std::atomic<std::int64_t> allocations{0};
}  // namespace

[[gnu::noinline]] void* operator new(std::size_t bytes) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void* operator new[](std::size_t bytes) { return operator new(bytes); }
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

struct particles_view {
  qd::types::ndarray<float, 1> pos, vel;
  qd::f32 dt;
};
struct particles {
  qd::ndarray<float, 1> pos, vel;
  float dt;
};

// Heap allocations made by `launches` calls of f, after one call that warms it up.
template <class F>
std::int64_t allocations_per(int launches, F&& f) {
  f();
  const std::int64_t before = allocations.load();
  for (int k = 0; k < launches; ++k) f();
  return allocations.load() - before;
}

const int n = 8192;  // over 2048 iterations: loops use the worker pool

}  // namespace

TEST_CASE("warm launches allocate nothing, whatever the kernel's parameters and results") {
  // One thread, and two: the CPU backend's worker pool must not allocate either.
  for (int threads : {1, 2})
    for (auto mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
      CAPTURE(threads);
      CAPTURE(mode);
      qd_test::init_cpu({.per_offload = mode, .cpu_max_num_threads = threads});

      auto saxpy =
          qd::kernel("hot_saxpy", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y, qd::f32 a) {
            qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] += a * x[i]; });
          });
      auto drift = qd::kernel("hot_drift", [](particles_view p, qd::vec3f g) {
        qd::range_for(p.pos.shape(0), [&](qd::i32 i) {
          p.vel[i] += p.dt * (g.x() + g.y() + g.z());
          p.pos[i] += p.dt * p.vel[i];
        });
      });
      auto sum = qd::kernel("hot_sum", [](qd::types::ndarray<float, 1> x) -> qd::f32 {
        qd::var<float> s = 0.0f;
        qd::range_for(x.shape(0), [&](qd::i32 i) { s += x[i]; });
        return s;
      });
      auto degree = qd::kernel("hot_degree", [](qd::types::mesh m, qd::types::ndarray<std::int32_t, 1> out) {
        qd::mesh_for(m.verts(), [&](qd::mesh_element v) { out[v.id()] = v.cells().size(); });
      });
      auto halve = qd::kernel("hot_halve", qd::graph::on,
                              [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 0> passes,
                                 qd::types::ndarray<std::int32_t, 0> again) {
                                qd::graph::do_while(again, [&] {
                                  qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * 0.5f; });
                                  qd::range_for(1, [&](qd::i32) {
                                    passes() = passes() + 1;
                                    again() = qd::select(passes() < 3, 1, 0);
                                  });
                                });
                              });

      // A kernel specialised per value: launching a value seen before allocates nothing either.
      auto scaled = qd::kernel("hot_scaled", [](qd::types::template_arg<int> k, qd::types::ndarray<float, 1> x) {
        qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * static_cast<float>(k) * 0.5f; });
      });

      qd::ndarray<float, 1> x(n), y(n), pos(n), vel(n), z(n);
      x.fill(1.0f);
      particles host{std::move(pos), std::move(vel), 0.5f};
      qd::ndarray<std::int32_t, 0> passes, again;
      // Two tetrahedra sharing a face: 5 vertices.
      qd::mesh m = qd::mesh::tetrahedral(5, {{0, 1, 2, 3}, {1, 2, 3, 4}});
      qd::ndarray<std::int32_t, 1> deg(5);

      // The counter sees the library's allocations: reading an array back allocates its vector.
      CHECK(allocations_per(3, [&] { CHECK(x.to_host().size() == n); }) >= 3);
      CHECK(allocations_per(100, [&] { saxpy(x, y, 2.0f); }) == 0);
      CHECK(allocations_per(100, [&] { drift(host, std::array<float, 3>{1.0f, 2.0f, 3.0f}); }) == 0);
      float total = 0.0f;
      CHECK(allocations_per(100, [&] { total = sum(x); }) == 0);
      CHECK(allocations_per(100, [&] { degree(m, deg); }) == 0);
      CHECK(allocations_per(20, [&] { halve(x, passes, again); }) == 0);
      scaled(4, z);  // two variants made and warmed up
      CHECK(allocations_per(100, [&] { scaled(2, z), scaled(4, z); }) == 0);

      // The launches did their work (so nothing above was skipped).
      CHECK(y.to_host()[0] == doctest::Approx(2.0f * 101.0f));
      CHECK(total == static_cast<float>(n));  // x was 1 until halve ran
      CHECK(deg.to_host() == std::vector<std::int32_t>{1, 2, 2, 2, 1});
      CHECK(passes.to_host()[0] == 3 + 20);  // the first call runs three passes, later ones one each
      qd::reset();
    }
}
