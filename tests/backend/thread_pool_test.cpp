// The CPU thread pool: every index exactly once, small ranges inline, several
// host threads at once.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "quadrants/backend/cpu/thread_pool.hpp"

using qd::backend::cpu::thread_pool;

namespace {
struct hits {
  std::vector<std::atomic<int>> count;
  explicit hits(std::int64_t n) : count(static_cast<std::size_t>(n)) {}
};
void mark(const void* frame, const void*, std::int64_t lo, std::int64_t hi) {
  auto* h = static_cast<hits*>(const_cast<void*>(frame));
  for (std::int64_t i = lo; i < hi; ++i) h->count[static_cast<std::size_t>(i)].fetch_add(1);
}
void record_thread(const void* frame, const void*, std::int64_t, std::int64_t) {
  auto* ids = static_cast<std::vector<std::thread::id>*>(const_cast<void*>(frame));
  ids->push_back(std::this_thread::get_id());  // only for inline ranges: one caller
}
}  // namespace

TEST_CASE("parallel_for runs every index of the range exactly once") {
  for (unsigned threads : {1u, 2u, 4u}) {
    thread_pool pool(threads);
    for (std::int64_t n : {0, 1, 7, 2048, 2049, 100000, 1 << 20}) {
      CAPTURE(threads);
      CAPTURE(n);
      hits h(n + 10);
      pool.parallel_for(5, 5 + n, &mark, &h, nullptr);
      bool exact = true;
      for (std::int64_t i = 0; i < n + 10; ++i)
        exact &= h.count[static_cast<std::size_t>(i)].load() == ((i >= 5 && i < 5 + n) ? 1 : 0);
      CHECK(exact);
    }
  }
}

TEST_CASE("small ranges run on the calling thread") {
  thread_pool pool(4);
  std::vector<std::thread::id> ids;
  pool.parallel_for(0, thread_pool::inline_threshold, &record_thread, &ids, nullptr);
  REQUIRE(ids.size() == 1);
  CHECK(ids[0] == std::this_thread::get_id());
}

TEST_CASE("several host threads can launch at once") {
  thread_pool pool(2);
  const std::int64_t n = 200000;
  std::vector<std::unique_ptr<hits>> all;
  for (int t = 0; t < 4; ++t) all.push_back(std::make_unique<hits>(n));
  std::vector<std::thread> host;
  for (int t = 0; t < 4; ++t)
    host.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round)
        pool.parallel_for(0, n, &mark, all[static_cast<std::size_t>(t)].get(), nullptr);
    });
  for (auto& h : host) h.join();
  for (auto& h : all) {
    bool exact = true;
    for (auto& c : h->count) exact &= c.load() == 20;
    CHECK(exact);
  }
}
