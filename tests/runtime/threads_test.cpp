// Several host threads using one program at once: compiling the same kernel, and
// compiling and launching different kernels (each thread its own arrays); and
// qd::reset()/qd::init() while other threads launch. Run under
// ThreadSanitizer by make sanitize (docs/testing.md); the thread pool and the cache
// store have tests of their own.
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include "runtime/runtime_test_support.hpp"

namespace {

auto scaled_copy(float scale) {
  return qd::kernel(
      "scaled_copy", {"x", "y", "total"},
      [scale](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y, qd::types::ndarray<float, 0> total) {
        qd::f32 first = x[0];
        qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = x[i] * scale + first; });
        qd::range_for(y.shape(0), [&](qd::i32 i) { qd::atomic_add(total(), y[i]); });
      });
}

using kernel_type = decltype(scaled_copy(1.0f));

void run_threads(qd::arch arch, qd::per_offload_mode mode) {
  qd::init({.arch = arch, .per_offload = mode});
  constexpr int threads = 4, per_thread = 2, n = 3000;  // above the pool's inline threshold
  std::vector<std::unique_ptr<kernel_type>> kernels;
  for (int k = 0; k < threads * per_thread; ++k)
    kernels.push_back(std::make_unique<kernel_type>(scaled_copy(static_cast<float>(k + 1))));
  auto shared = scaled_copy(0.5f);
  std::atomic<int> wrong{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      shared.compile();  // the same kernel compiled from every thread at once
      for (int j = 0; j < per_thread; ++j) {
        const int k = t * per_thread + j;
        qd::ndarray<float, 1> x(n), y(n);
        qd::ndarray<float, 0> total;
        x.fill(2.0f);
        for (int round = 0; round < 3; ++round) (*kernels[static_cast<std::size_t>(k)])(x, y, total);
        const float expected = 2.0f * static_cast<float>(k + 1) + 2.0f;
        for (float v : y.to_host()) wrong += v != expected;
        wrong += total.to_host()[0] != 3.0f * n * expected;
      }
    });
  for (auto& th : pool) th.join();
  CHECK(wrong == 0);
  qd::reset();
}

}  // namespace

TEST_CASE("host threads compile and launch different kernels at once, whole or split") {
  SUBCASE("cpu, whole") { run_threads(qd::arch::cpu, qd::per_offload_mode::off); }
  SUBCASE("cpu, split") { run_threads(qd::arch::cpu, qd::per_offload_mode::on); }
  SUBCASE("reference") { run_threads(qd::arch::reference, qd::per_offload_mode::on); }
}

TEST_CASE("one kernel launched from several host threads at once: each launch sees its own top-level values") {
  // The whole-kernel variant keeps `first` and `total` in its global temporaries between
  // constructs, the split keeps `total` (a reduction read by a later loop) in its
  // persisted buffer; concurrent launches of the same kernel take turns with the buffer.
  for (qd::arch arch : {qd::arch::cpu, qd::arch::reference})
    for (qd::per_offload_mode mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
      CAPTURE(arch);
      CAPTURE(mode);
      const auto cache = std::filesystem::temp_directory_path() / ("qd-threads-" + std::to_string(::getpid()));
      qd::init({.arch = arch, .offline_cache_file_path = cache.string(), .per_offload = mode});
      auto k = qd::kernel("shared_temporaries", {"x", "y"},
                          [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y) {
                            qd::f32 first = x[0];
                            qd::var<std::int32_t> total = 0;
                            qd::range_for(y.shape(0), [&](qd::i32 i) {
                              y[i] = x[i] + first;
                              total += qd::cast<std::int32_t>(x[i]);
                            });
                            qd::range_for(y.shape(0), [&](qd::i32 i) { y[i] += first + qd::cast<float>(total); });
                          });
      constexpr int threads = 4, n = 3000;
      const int launches = arch == qd::arch::cpu ? 200 : 5;
      std::atomic<int> wrong{0};
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          qd::ndarray<float, 1> x(n), y(n);
          x.fill(static_cast<float>(t + 1));
          const float expected = 3.0f * static_cast<float>(t + 1) + static_cast<float>(n * (t + 1));
          for (int l = 0; l < launches; ++l) {
            k(x, y);
            for (float v : y.to_host()) wrong += v != expected;
          }
        });
      for (auto& th : pool) th.join();
      CHECK(wrong == 0);
      // Split: a serial task initialising `total` in the buffer, then the two loops.
      CHECK(k.per_offload_cache_observations().frontend_constructs_total ==
            (mode == qd::per_offload_mode::on ? 3 : -1));
      qd::reset();
      std::error_code ec;
      std::filesystem::remove_all(cache, ec);
    }
}

TEST_CASE(
    "qd::init and qd::reset while other threads launch: every launch completes or is refused, none touches a "
    "freed program") {
  auto k =
      qd::kernel("square_plus_one", {"x", "y"}, [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y) {
        qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = x[i] * x[i] + 1.0f; });
      });
  qd::init({.arch = qd::arch::cpu});
  constexpr int threads = 3, n = 3000;
  std::atomic<bool> stop{false};
  std::atomic<int> completed{0}, refused{0}, wrong{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      while (!stop.load()) {
        try {
          qd::ndarray<float, 1> x(n), y(n);
          x.fill(static_cast<float>(t + 2));
          k(x, y);
          const float want = static_cast<float>((t + 2) * (t + 2) + 1);
          for (float v : y.to_host()) wrong += v != want;
          ++completed;
        } catch (const qd::user_error&) {  // not initialized, or arrays of an ended program
          ++refused;
        } catch (...) {
          ++wrong;
        }
      }
    });
  for (int round = 0; round < 20; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (round % 2 == 0)
      qd::reset();
    else
      qd::init({.arch = qd::arch::cpu});
  }
  qd::init({.arch = qd::arch::cpu});
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop = true;
  for (auto& th : pool) th.join();
  CHECK(wrong == 0);
  CHECK(completed > 0);
  MESSAGE("launch rounds completed: " << completed.load() << ", refused by a reset: " << refused.load());
  qd::reset();
}
