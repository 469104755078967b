// The progress of a long cold start: constructs compiled out of those to compile, time
// spent and an estimate of what is left, shown once it has run for about two seconds.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>

#include "quadrants/base/api.hpp"

namespace qd::inline v0::detail {

// Shown as a line rewritten in place when stderr is a terminal, else as at most one
// info log line a second; nothing below the info log level, nothing for a start that
// ends within `quiet`. A thread of its own reports while compiles run.
class compile_progress {
 public:
  QD_FUNC compile_progress(std::size_t constructs, std::size_t kernels,
                           std::chrono::milliseconds quiet = std::chrono::milliseconds(2000));
  QD_FUNC ~compile_progress();  // finish()
  compile_progress(const compile_progress&) = delete;
  compile_progress& operator=(const compile_progress&) = delete;

  // `constructs` more to compile (a kernel whose size is known only once it is traced).
  void expect(std::size_t constructs) { total_constructs_.fetch_add(constructs, std::memory_order_relaxed); }
  // A kernel of `constructs` constructs is ready.
  QD_FUNC void kernel_done(std::size_t constructs);
  // Stops the reporter; the last line says how long it all took (when any was shown).
  QD_FUNC void finish();
  // How many lines (or rewrites of the terminal line) were shown so far.
  std::size_t shown() const { return shown_.load(std::memory_order_relaxed); }

 private:
  QD_FUNC void report(bool final);

  std::atomic<std::size_t> total_constructs_;
  const std::size_t total_kernels_;
  const std::chrono::milliseconds quiet_;
  const std::chrono::steady_clock::time_point start_;
  std::atomic<std::size_t> constructs_{0}, kernels_{0}, shown_{0};
  const bool terminal_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread reporter_;
};

}  // namespace qd::inline v0::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/compile_progress-inl.hpp"
#endif
