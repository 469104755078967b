// The CPU backend's thread pool: parallel constructs split their iteration
// range into chunks run by all cores, the launching thread included.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "quadrants/base/api.hpp"

namespace qd::inline v0::backend::cpu {

class thread_pool {
 public:
  using chunk_fn = void (*)(const void* frame, const void* ctx, std::int64_t lo, std::int64_t hi);

  // `threads` counts the caller: 1 runs everything inline.
  QD_FUNC explicit thread_pool(unsigned threads);
  QD_FUNC ~thread_pool();
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  // Runs fn over [begin, end) in chunks and returns when all are done.
  // Allocation-free. If another host thread is using the pool, runs inline.
  QD_FUNC void parallel_for(std::int64_t begin, std::int64_t end, chunk_fn fn, const void* frame, const void* ctx);
  // Runs fn(frame, ctx, c, c + 1) for every c in [0, count), each index its own chunk
  // (the chunks of a reduction: their boundaries must not depend on the thread count).
  // One chunk runs inline; so do all when another host thread is using the pool.
  QD_FUNC void parallel_chunks(std::int64_t count, chunk_fn fn, const void* frame, const void* ctx);
  // parallel_for for heavy iterations (a loop body with loops of its own): about 16
  // chunks per thread however few the iterations; inline only for one.
  QD_FUNC void parallel_for_nested(std::int64_t begin, std::int64_t end, chunk_fn fn, const void* frame,
                                   const void* ctx);
  unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }

  // Ranges this small run on the caller: waking workers costs more than it saves.
  static constexpr std::int64_t inline_threshold = 2048;
  // Whether parallel_for (nested: parallel_for_nested) runs `n` iterations on the caller
  // alone whatever other launches do: a one-thread pool, or too few iterations to spread.
  bool runs_on_caller(std::int64_t n, bool nested) const {
    return workers_.empty() || (nested ? n == 1 : n <= inline_threshold);
  }

 private:
  QD_FUNC void worker_loop();
  QD_FUNC void run_chunks();
  // Hands [begin, end) to the workers in chunks of `chunk`, helps, and waits for them;
  // false (nothing run) when the pool is busy with another host thread's launch.
  QD_FUNC bool dispatch(std::int64_t begin, std::int64_t end, std::int64_t chunk, chunk_fn fn, const void* frame,
                        const void* ctx);
  QD_FUNC void start_workers(unsigned count);
  // In a child of fork() only the forking thread exists: the pool starts new workers.
  QD_FUNC void restart_after_fork();

  struct alignas(64) job {
    chunk_fn fn = nullptr;
    const void* frame = nullptr;
    const void* ctx = nullptr;
    std::int64_t end = 0;
    std::int64_t chunk = 1;
    std::atomic<std::int64_t> next{0};
  };
  job job_;
  alignas(64) std::atomic<std::uint64_t> generation_{0};
  alignas(64) std::atomic<unsigned> remaining_{0};
  std::atomic<bool> busy_{false};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
  std::uint64_t forks_seen_ = 0;  // the process's fork count when the workers started
};

}  // namespace qd::inline v0::backend::cpu

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/cpu/thread_pool-inl.hpp"
#endif
