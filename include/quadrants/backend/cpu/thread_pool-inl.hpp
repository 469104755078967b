// Implementation of backend/cpu/thread_pool.hpp.
#pragma once

#include <algorithm>
#include <chrono>

#include "quadrants/backend/cpu/thread_pool.hpp"

namespace qd::backend::cpu {

namespace detail {
QD_FUNC void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}
}  // namespace detail

QD_FUNC thread_pool::thread_pool(unsigned threads) {
  for (unsigned t = 1; t < std::max(threads, 1u); ++t) workers_.emplace_back([this] { worker_loop(); });
}

QD_FUNC thread_pool::~thread_pool() {
  stop_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (auto& w : workers_) w.join();
}

QD_FUNC void thread_pool::run_chunks() {
  for (;;) {
    std::int64_t lo = job_.next.fetch_add(job_.chunk, std::memory_order_relaxed);
    if (lo >= job_.end) return;
    job_.fn(job_.frame, job_.ctx, lo, std::min(lo + job_.chunk, job_.end));
  }
}

QD_FUNC void thread_pool::worker_loop() {
  std::uint64_t seen = 0;
  for (;;) {
    // Spin briefly so back-to-back launches do not pay a futex wake-up, then sleep.
    auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
    std::uint64_t g;
    for (int k = 0;; ++k) {
      g = generation_.load(std::memory_order_acquire);
      if (g != seen) break;
      if ((k & 255) == 255 && std::chrono::steady_clock::now() > spin_until) {
        generation_.wait(seen, std::memory_order_acquire);
        k = 0;
        spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
      }
      detail::cpu_relax();
    }
    seen = g;
    if (stop_.load()) return;
    run_chunks();
    remaining_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

QD_FUNC void thread_pool::parallel_for(std::int64_t begin, std::int64_t end, chunk_fn fn, const void* frame,
                                       const void* ctx) {
  std::int64_t n = end - begin;
  if (n <= 0) return;
  bool expected = false;
  if (workers_.empty() || n <= inline_threshold ||
      !busy_.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
    fn(frame, ctx, begin, end);
    return;
  }
  const std::int64_t parts = static_cast<std::int64_t>(size()) * 4;
  job_.fn = fn;
  job_.frame = frame;
  job_.ctx = ctx;
  job_.end = end;
  job_.chunk = std::max<std::int64_t>((n + parts - 1) / parts, 256);
  job_.next.store(begin, std::memory_order_relaxed);
  remaining_.store(static_cast<unsigned>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  run_chunks();
  while (remaining_.load(std::memory_order_acquire) != 0) detail::cpu_relax();
  busy_.store(false, std::memory_order_release);
}

}  // namespace qd::backend::cpu
