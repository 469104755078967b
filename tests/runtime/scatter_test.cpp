// Scatters (atomic updates of array elements) on the CPU: a loop that runs on one thread
// updates plainly, with the atomics' semantics, and a scatter gate
// (backend/cpu/scatter_gate.hpp) keeps plain and atomic updates of concurrent launches
// apart. Checked against sequential C++ and, across host threads, by exact totals.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "quadrants/backend/cpu/scatter_gate.hpp"
#include "runtime/runtime_test_support.hpp"

namespace {

using qd::backend::cpu::scatter_gate;

// Each iteration updates element key[i] of every array with every atomic and records the
// old values: in one thread's order they are those of sequential C++.
auto every_atomic() {
  return qd::kernel("every_atomic", {"key", "value", "ints", "floats", "olds"},
                    [](qd::types::ndarray<std::int32_t, 1> key, qd::types::ndarray<std::int32_t, 1> value,
                       qd::types::ndarray<std::int32_t, 2> ints, qd::types::ndarray<float, 2> floats,
                       qd::types::ndarray<std::int32_t, 2> olds) {
                      qd::range_for(key.shape(0), [&](qd::i32 i) {
                        qd::i32 k = key[i];
                        qd::i32 v = value[i];
                        olds(i, 0) = qd::atomic_add(ints(k, 0), v);
                        olds(i, 1) = qd::atomic_sub(ints(k, 1), v);
                        olds(i, 2) = qd::atomic_min(ints(k, 2), v);
                        olds(i, 3) = qd::atomic_max(ints(k, 3), v);
                        olds(i, 4) = qd::atomic_mul(ints(k, 4), v);
                        olds(i, 5) = qd::atomic_and(ints(k, 5), v);
                        olds(i, 6) = qd::atomic_or(ints(k, 6), v);
                        olds(i, 7) = qd::atomic_xor(ints(k, 7), v);
                        olds(i, 8) = qd::atomic_cas(ints(k, 8), v, ints(k, 8) + 1);
                        floats(k, 0) += qd::cast<float>(v) * 0.5f;
                        qd::atomic_min(floats(k, 1), qd::cast<float>(v));
                      });
                    });
}

struct sequential_result {
  std::vector<std::int32_t> ints, olds;
  std::vector<float> floats;
};

sequential_result sequential(const std::vector<std::int32_t>& key, const std::vector<std::int32_t>& value, int keys) {
  sequential_result r{std::vector<std::int32_t>(static_cast<std::size_t>(keys) * 9, 1),
                      std::vector<std::int32_t>(key.size() * 9, 0),
                      std::vector<float>(static_cast<std::size_t>(keys) * 2, 0.0f)};
  for (std::size_t i = 0; i < key.size(); ++i) {
    std::int32_t* e = &r.ints[static_cast<std::size_t>(key[i]) * 9];
    std::int32_t* o = &r.olds[i * 9];
    const std::int32_t v = value[i];
    for (int a = 0; a < 9; ++a) o[a] = e[a];
    e[0] = static_cast<std::int32_t>(static_cast<std::uint32_t>(e[0]) + static_cast<std::uint32_t>(v));
    e[1] = static_cast<std::int32_t>(static_cast<std::uint32_t>(e[1]) - static_cast<std::uint32_t>(v));
    e[2] = std::min(e[2], v);
    e[3] = std::max(e[3], v);
    e[4] = static_cast<std::int32_t>(static_cast<std::uint32_t>(e[4]) * static_cast<std::uint32_t>(v));
    e[5] &= v;
    e[6] |= v;
    e[7] ^= v;
    if (e[8] == v) e[8] = e[8] + 1;  // the kernel's expected value was read before the update
    float* f = &r.floats[static_cast<std::size_t>(key[i]) * 2];
    f[0] += static_cast<float>(v) * 0.5f;
    f[1] = std::min(f[1], static_cast<float>(v));
  }
  return r;
}

void check_every_atomic(int n, int keys) {
  std::vector<std::int32_t> key(static_cast<std::size_t>(n)), value(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    key[static_cast<std::size_t>(i)] = (i * 7919) % keys;
    value[static_cast<std::size_t>(i)] = (i * 31) % 5 - 1;  // -1..3: cas's expected value hits sometimes
  }
  const auto expected = sequential(key, value, keys);
  qd::ndarray<std::int32_t, 1> k(n), v(n);
  k.from_host(key);
  v.from_host(value);
  qd::ndarray<std::int32_t, 2> ints({keys, 9}), olds({n, 9});
  qd::ndarray<float, 2> floats({keys, 2});
  ints.fill(1);
  floats.fill(0.0f);
  every_atomic()(k, v, ints, floats, olds);
  CHECK(ints.to_host() == expected.ints);
  CHECK(floats.to_host() == expected.floats);
  CHECK(olds.to_host() == expected.olds);
}

}  // namespace

TEST_CASE("a loop on one CPU thread updates in its own order: every atomic's values and olds") {
  // Run by one thread in index order, the olds of every atomic are those of sequential
  // C++ (cas swaps when the element equals the value: 1 → 2 → 3 as values 1, 2 come).
  SUBCASE("a one-thread pool, above the inline threshold") {
    qd_test::init_cpu({.cpu_max_num_threads = 1});
    check_every_atomic(20000, 97);
  }
  SUBCASE("a short loop (below the pool's inline threshold) with several threads") {
    qd_test::init_cpu({.cpu_max_num_threads = 2});
    check_every_atomic(1500, 13);
  }
  qd::reset();
}

TEST_CASE("plain and atomic scatters of concurrent launches lose no update") {
  qd_test::init_cpu({.cpu_max_num_threads = 2});
  auto count = qd::kernel("count", {"bins", "n"}, [](qd::types::ndarray<std::int32_t, 1> bins, qd::i32 n) {
    qd::range_for(n, [&](qd::i32 i) { bins[i % bins.shape(0)] += 1; });
  });
  constexpr int bins_n = 8, rounds = 300, small = 1000, large = 50000;  // small: one thread, plain
  qd::ndarray<std::int32_t, 1> bins(bins_n);
  bins.fill(0);
  count(bins, small);  // compiled before the threads start
  bins.fill(0);
  std::thread other([&] {
    for (int r = 0; r < rounds; ++r) count(bins, large);
  });
  for (int r = 0; r < rounds; ++r) count(bins, small);
  other.join();
  const std::int32_t per_bin = rounds * (small + large) / bins_n;
  for (std::int32_t b : bins.to_host()) CHECK(b == per_bin);
  qd::reset();
}

TEST_CASE("the scatter gate: alone excludes everyone, shared holders exclude alone") {
  REQUIRE(scatter_gate::try_alone());
  CHECK_FALSE(scatter_gate::try_alone());
  std::atomic<bool> entered{false};
  std::thread waiter([&] {
    scatter_gate::enter_shared();  // waits until the alone holder leaves
    entered = true;
    scatter_gate::leave(false);
  });
  // The waiter cannot get in while the gate is held alone; give it a chance to try.
  for (int i = 0; i < 1000 && !entered; ++i) std::this_thread::yield();
  CHECK_FALSE(entered.load());
  scatter_gate::leave(true);
  waiter.join();
  CHECK(entered.load());
  scatter_gate::enter_shared();
  scatter_gate::enter_shared();
  CHECK_FALSE(scatter_gate::try_alone());
  scatter_gate::leave(false);
  CHECK_FALSE(scatter_gate::try_alone());
  scatter_gate::leave(false);
  CHECK(scatter_gate::try_alone());
  scatter_gate::leave(true);
}

TEST_CASE("a serial task's atomics and a multi-threaded scatter with a reduction") {
  qd_test::init_cpu({.cpu_max_num_threads = 2});
  auto k = qd::kernel("mixed", {"x", "bins"}, [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> bins) {
    qd::atomic_add(bins[0], 1.0f);  // top level: a serial task
    qd::var<float> total = 0.0f;
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      bins[1 + i % 3] += x[i];
      total += x[i];
    });
    bins[4] = total;
  });
  constexpr int n = 30000;
  std::vector<float> x(n);
  std::vector<float> expected(5, 0.0f);
  for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(i % 4);
  for (int i = 0; i < n; ++i) expected[static_cast<std::size_t>(1 + i % 3)] += x[static_cast<std::size_t>(i)];
  expected[0] = 1.0f;
  expected[4] = expected[1] + expected[2] + expected[3];  // integers below 2^24: exact in any order
  qd::ndarray<float, 1> xs(n), bins(5);
  xs.from_host(x);
  bins.fill(0.0f);
  k(xs, bins);
  CHECK(bins.to_host() == expected);
  qd::reset();
}

TEST_CASE("chunk-private copies: additions from a nested loop into small arrays, exact totals on two threads") {
  // small (f64, 8 KB) and small_f (f32, 2 KB) fit the chunks' 64 KiB copies; large (f64,
  // 160 KB) does not and keeps its atomics; every contribution is a small integer, so any
  // order of the additions gives the same bits. On one thread the loop updates plainly.
  auto k = qd::kernel("nested_adds", {"small", "small_f", "large"},
                      [](qd::types::ndarray<double, 1> small, qd::types::ndarray<float, 1> small_f,
                         qd::types::ndarray<double, 1> large) {
                        qd::range_for(256, [&](qd::i32 i) {
                          qd::range_for(small.shape(0), [&](qd::i32 j) {
                            small[j] += qd::cast<double>(i % 5 + 1);
                            small_f[j % small_f.shape(0)] += 1.0f;
                            large[(i * 37 + j * 11) % large.shape(0)] += qd::cast<double>(j % 3);
                          });
                        });
                      });
  constexpr int n_small = 1000, n_small_f = 512, n_large = 20000;
  std::vector<double> want_small(n_small, 0.0), want_large(n_large, 0.0);
  std::vector<float> want_small_f(n_small_f, 0.0f);
  for (int i = 0; i < 256; ++i)
    for (int j = 0; j < n_small; ++j) {
      want_small[static_cast<std::size_t>(j)] += static_cast<double>(i % 5 + 1);
      want_small_f[static_cast<std::size_t>(j % n_small_f)] += 1.0f;
      want_large[static_cast<std::size_t>((i * 37 + j * 11) % n_large)] += static_cast<double>(j % 3);
    }
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    qd_test::init_cpu({.cpu_max_num_threads = threads});
    qd::ndarray<double, 1> small(n_small), large(n_large);
    qd::ndarray<float, 1> small_f(n_small_f);
    for (int round = 0; round < 3; ++round) {  // a copy starts zeroed in every chunk of every launch
      small.fill(0.0);
      small_f.fill(0.0f);
      large.fill(0.0);
      k(small, small_f, large);
      CHECK(small.to_host() == want_small);
      CHECK(small_f.to_host() == want_small_f);
      CHECK(large.to_host() == want_large);
    }
    qd::reset();
  }
}
