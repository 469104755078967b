// Implementation of backend/cpu/thread_pool.hpp.
#pragma once

#include <algorithm>
#include <chrono>
#include <pthread.h>

#include "quadrants/backend/cpu/thread_pool.hpp"

namespace qd::inline v0::backend::cpu {

namespace detail {

QD_FUNC void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Children of fork() counted by a pthread_atfork handler, registered once per process.
inline std::atomic<std::uint64_t> forks{0};

QD_FUNC std::uint64_t fork_count() {
  static const bool registered = [] {
    pthread_atfork(nullptr, nullptr, [] { forks.fetch_add(1, std::memory_order_relaxed); });
    return true;
  }();
  (void)registered;
  return forks.load(std::memory_order_relaxed);
}
}  // namespace detail

QD_FUNC thread_pool::thread_pool(unsigned threads) {
  forks_seen_ = detail::fork_count();
  start_workers(std::max(threads, 1u) - 1);
}

QD_FUNC void thread_pool::start_workers(unsigned count) {
  for (unsigned t = 0; t < count; ++t) workers_.emplace_back([this] { worker_loop(); });
}

QD_FUNC void thread_pool::restart_after_fork() {
  // The parent's workers do not exist here: their handles are abandoned (joining or
  // destroying them would wait for, or abort on, threads of another process).
  const unsigned count = static_cast<unsigned>(workers_.size());
  new std::vector<std::thread>(std::move(workers_));  // never destroyed, on purpose
  workers_.clear();                                   // moved from: make it certainly empty
  generation_.store(0, std::memory_order_relaxed);
  remaining_.store(0, std::memory_order_relaxed);
  busy_.store(false, std::memory_order_relaxed);
  forks_seen_ = detail::fork_count();
  start_workers(count);
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

QD_FUNC bool thread_pool::dispatch(std::int64_t begin, std::int64_t end, std::int64_t chunk, chunk_fn fn,
                                   const void* frame, const void* ctx) {
  if (detail::forks.load(std::memory_order_relaxed) != forks_seen_) [[unlikely]] {
    // Only the forking thread runs in the child, so nothing races with the restart.
    restart_after_fork();
  }
  bool expected = false;
  if (workers_.empty() || !busy_.compare_exchange_strong(expected, true, std::memory_order_acquire)) return false;
  job_.fn = fn;
  job_.frame = frame;
  job_.ctx = ctx;
  job_.end = end;
  job_.chunk = chunk;
  job_.next.store(begin, std::memory_order_relaxed);
  remaining_.store(static_cast<unsigned>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  run_chunks();
  // A worker that lost its core (more runnable threads than cores) finishes only when it
  // gets one back: after a short spin, yield ours instead of spinning out the time slice.
  for (int k = 0; remaining_.load(std::memory_order_acquire) != 0; ++k) {
    if (k < 1024)
      detail::cpu_relax();
    else
      std::this_thread::yield();
  }
  busy_.store(false, std::memory_order_release);
  return true;
}

QD_FUNC void thread_pool::parallel_for(std::int64_t begin, std::int64_t end, chunk_fn fn, const void* frame,
                                       const void* ctx) {
  std::int64_t n = end - begin;
  if (n <= 0) return;
  const std::int64_t parts = static_cast<std::int64_t>(size()) * 4;
  const std::int64_t chunk = std::max<std::int64_t>((n + parts - 1) / parts, 256);
  if (runs_on_caller(n, false) || !dispatch(begin, end, chunk, fn, frame, ctx)) fn(frame, ctx, begin, end);
}

QD_FUNC void thread_pool::parallel_for_nested(std::int64_t begin, std::int64_t end, chunk_fn fn, const void* frame,
                                              const void* ctx) {
  std::int64_t n = end - begin;
  if (n <= 0) return;
  const std::int64_t parts = static_cast<std::int64_t>(size()) * 16;
  if (runs_on_caller(n, true) || !dispatch(begin, end, (n + parts - 1) / parts, fn, frame, ctx))
    fn(frame, ctx, begin, end);
}

QD_FUNC void thread_pool::parallel_chunks(std::int64_t count, chunk_fn fn, const void* frame, const void* ctx) {
  if (count <= 0) return;
  if (count == 1 || !dispatch(0, count, 1, fn, frame, ctx)) fn(frame, ctx, 0, count);
}

}  // namespace qd::inline v0::backend::cpu
