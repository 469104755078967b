// The threads that run concurrent branches (qd::concurrent, qd::graph::parallel) on
// backends whose launches may come from several host threads: started on first need,
// kept for the process, so a fork inside a do_while pass costs a wake-up, not a thread
// start. Internal.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "quadrants/base/api.hpp"

namespace qd::inline v0::detail {

class branch_workers {
 public:
  using branch_fn = void (*)(void* ctx, std::size_t branch);
  static constexpr std::size_t max_workers = 63;

  branch_workers() = default;
  branch_workers(const branch_workers&) = delete;
  branch_workers& operator=(const branch_workers&) = delete;

  // Runs fn(ctx, b) for every b < count: branch 0 on the calling thread, the others on
  // workers, and returns when all are done. `fn` must not throw. Returns false, having
  // run nothing, when another thread's fork holds the workers (the caller then runs the
  // branches itself).
  QD_FUNC bool run(std::size_t count, branch_fn fn, void* ctx);

 private:
  QD_FUNC void ensure_workers(std::size_t count);
  QD_FUNC void worker_loop(std::size_t index, std::uint64_t seen);

  std::mutex busy_;
  std::vector<std::thread> workers_;
  long owner_pid_ = 0;      // the process the workers run in: a child of fork() starts its own
  branch_fn fn_ = nullptr;  // read only by the workers a fork waits for
  void* ctx_ = nullptr;
  // The latest fork: its number << 8 | its branch count, published in one word, so that a
  // worker a fork does not use never reads what the next fork writes.
  alignas(64) std::atomic<std::uint64_t> job_{0};
  alignas(64) std::atomic<std::size_t> remaining_{0};
};

// The process's branch workers (never destroyed: workers may be asleep at exit).
QD_FUNC branch_workers& shared_branch_workers();

}  // namespace qd::inline v0::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/graph/branch_workers-inl.hpp"
#endif
