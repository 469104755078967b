// Implementation of runtime/graph/branch_workers.hpp.
#pragma once

#include <unistd.h>

#include <chrono>

#include "quadrants/runtime/graph/branch_workers.hpp"

namespace qd::inline v0::detail {

QD_FUNC branch_workers& shared_branch_workers() {
  static branch_workers* const workers = new branch_workers;  // never destroyed, on purpose
  return *workers;
}

QD_FUNC void branch_workers::ensure_workers(std::size_t count) {
  const long pid = static_cast<long>(::getpid());
  if (pid != owner_pid_) {
    // In a child of fork() the parent's workers do not exist: abandon their handles
    // (joining or destroying them would wait for, or abort on, another process's threads).
    if (!workers_.empty()) new std::vector<std::thread>(std::move(workers_));  // never destroyed
    workers_.clear();
    job_.store(0, std::memory_order_relaxed);
    remaining_.store(0, std::memory_order_relaxed);
    owner_pid_ = pid;
  }
  // A new worker starts from the generation before this fork's, whenever its thread
  // gets to run, so it cannot miss the fork that started it.
  const std::uint64_t current = job_.load(std::memory_order_relaxed);
  while (workers_.size() < count) {
    const std::size_t index = workers_.size() + 1;  // branch 0 runs on the caller
    workers_.emplace_back([this, index, current] { worker_loop(index, current); });
  }
}

QD_FUNC void branch_workers::worker_loop(std::size_t index, std::uint64_t seen) {
  for (;;) {
    // Spin briefly, so that the forks of consecutive do_while passes find it awake; then sleep.
    const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
    std::uint64_t job = seen;
    for (int k = 0; (job = job_.load(std::memory_order_acquire)) == seen; ++k) {
      if ((k & 255) == 255 && std::chrono::steady_clock::now() > spin_until) {
        job_.wait(seen, std::memory_order_acquire);
        continue;
      }
      std::this_thread::yield();
    }
    seen = job;
    if (index >= (job & 0xff)) continue;
    fn_(ctx_, index);
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) remaining_.notify_all();
  }
}

QD_FUNC bool branch_workers::run(std::size_t count, branch_fn fn, void* ctx) {
  if (count > max_workers + 1) return false;
  std::unique_lock lock(busy_, std::try_to_lock);
  if (!lock) return false;
  ensure_workers(count - 1);
  fn_ = fn;
  ctx_ = ctx;
  remaining_.store(count - 1, std::memory_order_relaxed);
  const std::uint64_t number = (job_.load(std::memory_order_relaxed) >> 8) + 1;
  job_.store(number << 8 | count, std::memory_order_release);
  job_.notify_all();
  fn(ctx, 0);
  for (std::size_t left; (left = remaining_.load(std::memory_order_acquire)) != 0;)
    remaining_.wait(left, std::memory_order_acquire);
  return true;
}

}  // namespace qd::inline v0::detail
