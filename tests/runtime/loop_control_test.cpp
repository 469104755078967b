// Loop control (SPEC §11.4): qd::loop_config, qd::break_ and qd::continue_ on the CPU
// and the reference backend, and their misuse as trace-time errors. Every kind of loop
// with both jumps, on every arch: tests/backend/gpu_suite_test.cpp ("break_ and continue_").
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "quadrants/backend/gpu_task_params.hpp"
#include "runtime/runtime_test_support.hpp"

namespace {

using doctest::Contains;

template <class Body>
auto one_array_kernel(const char* name, Body body) {
  return qd::kernel(name, {"x"}, [body](qd::types::ndarray<std::int32_t, 1> x) { body(x); });
}

}  // namespace

TEST_CASE("a serialized top-level loop runs in order: plain updates, a break_, and no construct of its own") {
  for (qd::arch arch : {qd::arch::cpu, qd::arch::reference}) {
    CAPTURE(arch);
    qd::init({.arch = arch, .per_offload = qd::per_offload_mode::on});
    auto k = qd::kernel("ordered", {"x", "out"},
                        [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> out) {
                          qd::var<std::int32_t> h = 7;
                          qd::range_for(1, x.shape(0), qd::loop_config{.serialize = true}, [&](qd::i32 i) {
                            x[i] += x[i - 1];  // reads the previous iteration's store
                            h *= 3;            // a race in a parallel loop; fine in order
                            h = h % 1000003;
                            qd::if_(x[i] > 1000, [&] { qd::break_(); });
                          });
                          qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = h + i; });
                        });
    const std::int32_t n = 100;
    std::vector<std::int32_t> xs(n);
    for (std::int32_t i = 0; i < n; ++i) xs[static_cast<std::size_t>(i)] = i % 9 + 1;
    std::vector<std::int32_t> want = xs;
    std::int32_t h = 7;
    for (std::int32_t i = 1; i < n; ++i) {
      want[static_cast<std::size_t>(i)] += want[static_cast<std::size_t>(i - 1)];
      h = h * 3 % 1000003;
      if (want[static_cast<std::size_t>(i)] > 1000) break;
    }
    qd::ndarray<std::int32_t, 1> x(n), out(4);
    x.from_host(xs);
    k(x, out);
    CHECK(x.to_host() == want);
    CHECK(out.to_host() == std::vector<std::int32_t>{h, h + 1, h + 2, h + 3});
    CHECK(k.ir().find("serialize") != std::string::npos);
    CHECK(k.ir().find("atomic") == std::string::npos);  // x[i] += is a plain update in order
    // The serialized loop is part of a serial construct; the second loop is the other one.
    CHECK(k.per_offload_cache_observations().frontend_constructs_total == 2);
    qd::reset();
  }
}

TEST_CASE("a serialized loop without a store, whose result a later loop reads: whole and split agree with C++") {
  for (qd::arch arch : {qd::arch::cpu, qd::arch::reference})
    for (auto mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
      CAPTURE(arch);
      CAPTURE(mode);
      qd::init({.arch = arch, .per_offload = mode});
      auto k = qd::kernel("scan_then_use", {"x", "y"},
                          [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> y) {
                            qd::var<std::int32_t> run = 0, longest = 0;
                            qd::range_for(x.shape(0), qd::loop_config{.serialize = true}, [&](qd::i32 i) {
                              qd::if_(x[i] == 0, [&] {
                                run = 0;
                                qd::continue_();
                              });
                              run += 1;
                              longest = qd::max(longest, run);
                            });
                            qd::range_for(y.shape(0), [&](qd::i32 i) { y[i] = longest * 100 + i; });
                          });
      std::vector<std::int32_t> xs = {1, 1, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 1};
      std::int32_t run = 0, longest = 0;
      for (std::int32_t v : xs) {
        if (v == 0) {
          run = 0;
          continue;
        }
        ++run;
        longest = std::max(longest, run);
      }
      qd::ndarray<std::int32_t, 1> x(static_cast<std::int64_t>(xs.size())), y(5);
      x.from_host(xs);
      k(x, y);
      CHECK(y.to_host() == std::vector<std::int32_t>{longest * 100, longest * 100 + 1, longest * 100 + 2,
                                                     longest * 100 + 3, longest * 100 + 4});
      qd::reset();
    }
}

TEST_CASE("a loop containing break_ and continue_ is still one construct, and block_dim is recorded in the IR") {
  qd::init({.arch = qd::arch::cpu, .per_offload = qd::per_offload_mode::on});
  auto k = one_array_kernel("jumps", [](qd::types::ndarray<std::int32_t, 1> x) {
    qd::range_for(x.shape(0), qd::loop_config{.block_dim = 128}, [&](qd::i32 i) {
      qd::if_(i % 2 == 0, [&] { qd::continue_(); });
      qd::var<std::int32_t> steps = 0;
      qd::while_([&] { return steps < 1000; },
                 [&] {
                   steps += 1;
                   qd::if_(steps * steps >= i, [&] { qd::break_(); });
                 });
      x[i] = steps;
    });
  });
  const std::int32_t n = 50;
  qd::ndarray<std::int32_t, 1> x(n);
  x.fill(-1);
  k(x);
  std::vector<std::int32_t> want(n, -1);
  for (std::int32_t i = 1; i < n; i += 2) {
    std::int32_t steps = 0;
    while (steps < 1000) {
      ++steps;
      if (steps * steps >= i) break;
    }
    want[static_cast<std::size_t>(i)] = steps;
  }
  CHECK(x.to_host() == want);
  CHECK(k.per_offload_cache_observations().frontend_constructs_total == 1);
  const std::string ir = k.ir();
  CHECK(ir.find("block_dim 128") != std::string::npos);
  CHECK(ir.find("break_") != std::string::npos);
  CHECK(ir.find("continue_") != std::string::npos);
  qd::reset();
}

TEST_CASE("block_dim sets a GPU launch's block; the grid keeps the occupancy grid's threads") {
  using qd::backend::gpu_launch_shape_of;
  constexpr unsigned def = qd::limits::gpu_threads_per_block;
  static_assert(gpu_launch_shape_of(true, 40, 0).block == def && gpu_launch_shape_of(true, 40, 0).grid == 40);
  static_assert(gpu_launch_shape_of(true, 40, 64).block == 64 &&
                gpu_launch_shape_of(true, 40, 64).grid == 40 * def / 64);
  static_assert(gpu_launch_shape_of(true, 1, 1024).block == 1024 && gpu_launch_shape_of(true, 1, 1024).grid == 1);
  static_assert(gpu_launch_shape_of(false, 40, 64).block == 1 && gpu_launch_shape_of(false, 40, 64).grid == 1);
  CHECK(gpu_launch_shape_of(true, 3, 100).grid * 100 >= 3 * def);
  // At most 2^31 threads: the generated loops step in 32 bits (backend/gpu_prelude.hpp).
  for (unsigned block : {0u, 1u, 100u, 1024u}) {
    const auto s = gpu_launch_shape_of(true, 0xffffffffu, block);
    CHECK(static_cast<unsigned long long>(s.grid) * s.block <= (1ull << 31));
    CHECK(static_cast<unsigned long long>(s.grid) * s.block > (1ull << 31) - s.block);
  }
}

TEST_CASE("misused loop control is a qd::user_error at trace time naming the kernel") {
  qd::init({.arch = qd::arch::cpu});
  qd::ndarray<std::int32_t, 1> x(8);
  auto fails = [&](const char* name, auto body, const char* says) {
    CAPTURE(name);
    auto k = one_array_kernel(name, body);
    const std::string kernel = std::string("kernel '") + name + "'";
    CHECK_THROWS_WITH_AS(k(x), Contains(kernel.c_str()), qd::user_error);
    CHECK_THROWS_WITH_AS(k(x), Contains(says), qd::user_error);
  };
  fails(
      "parallel_break",
      [](auto x) { qd::range_for(x.shape(0), [&](qd::i32 i) { qd::if_(x[i] > 0, [&] { qd::break_(); }); }); },
      "would leave a parallel qd::range_for");
  fails(
      "parallel_break_2d",
      [](auto x) { qd::range_for(qd::ndrange(x.shape(0), 2), [&](qd::i32, qd::i32) { qd::break_(); }); },
      "would leave a parallel qd::range_for");
  fails(
      "outside", [](auto) { qd::break_(); }, "qd::break_() outside a loop body");
  fails(
      "continue_outside", [](auto x) { qd::if_(x[0] > 0, [&] { qd::continue_(); }); },
      "qd::continue_() outside a loop body");
  fails(
      "in_condition",
      [](auto x) {
        qd::while_(
            [&] {
              qd::break_();
              return x[0] > 0;
            },
            [&] { x[0] = 0; });
      },
      "in the condition of a qd::while_");
  fails(
      "nested_config",
      [](auto x) {
        qd::range_for(x.shape(0), [&](qd::i32 i) {
          qd::range_for(4, qd::loop_config{.block_dim = 32}, [&](qd::i32 j) { x[i] = j; });
        });
      },
      "qd::loop_config is given to a qd::range_for nested");
  fails(
      "config_in_if",
      [](auto x) {
        qd::if_(x[0] > 0, [&] { qd::range_for(4, qd::loop_config{.serialize = true}, [&](qd::i32 j) { x[j] = j; }); });
      },
      "qd::loop_config is given to a qd::range_for nested");
  fails(
      "big_block",
      [](auto x) { qd::range_for(x.shape(0), qd::loop_config{.block_dim = 2048}, [&](qd::i32 i) { x[i] = 1; }); },
      "a block has 1 to 1024 threads");
  // Allowed: break_ in a loop nested in a parallel construct and in a serialized loop.
  auto fine = one_array_kernel("allowed", [](auto x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      qd::range_for(0, 10, [&](qd::i32 j) {
        x[i] = j;
        qd::if_(j == i, [&] { qd::break_(); });
      });
    });
    qd::range_for(x.shape(0), qd::loop_config{.serialize = true}, [&](qd::i32 i) {
      qd::if_(i == 5, [&] { qd::break_(); });
      x[i] = x[i] + 100;
    });
  });
  fine(x);
  CHECK(x.to_host() == std::vector<std::int32_t>{100, 101, 102, 103, 104, 5, 6, 7});
  qd::reset();
}
