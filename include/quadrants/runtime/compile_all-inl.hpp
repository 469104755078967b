// Implementation of runtime/compile_all.hpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "quadrants/runtime/compile_all.hpp"
#include "quadrants/runtime/compile_progress.hpp"
#include "quadrants/runtime/pipeline/dispatch.hpp"
#include "quadrants/runtime/pipeline/kernel_registry.hpp"
#include "quadrants/runtime/pipeline/kernel_state.hpp"
#include "quadrants/runtime/pipeline/program.hpp"
#include "quadrants/runtime/pipeline/variant_builder.hpp"

namespace qd::inline v0 {

QD_FUNC void compile_all() {
  detail::program_use use(std::nothrow);
  if (!use) detail::throw_not_initialized("qd::compile_all");
  const std::uint64_t id = use->id();
  std::vector<std::shared_ptr<detail::kernel_state>> kernels;
  for (auto& k : detail::live_kernels())
    if (k->ready_program.load(std::memory_order_acquire) != id) kernels.push_back(std::move(k));
  if (kernels.empty()) return;
  // The user's lambdas run one at a time, on this thread; the workers (the other
  // compile threads) meanwhile analyse the traces made so far and compile the kernels
  // analysed, in order; this thread joins them when it has traced the last. The
  // progress's total grows as kernels are analysed (long before its first line).
  const std::size_t n = kernels.size();
  std::vector<std::exception_ptr> failures(n);
  std::vector<std::optional<detail::raw_trace>> raw(n);
  std::vector<std::size_t> constructs(n, 1);
  std::unique_ptr<std::atomic<bool>[]> analysed(new std::atomic<bool>[n]);
  for (std::size_t i = 0; i < n; ++i) analysed[i].store(false, std::memory_order_relaxed);
  std::atomic<std::size_t> traced{0}, next_analysis{0}, next_compile{0};
  std::mutex wait_mutex;
  std::condition_variable wake;
  auto notify = [&] {
    { std::lock_guard lock(wait_mutex); }
    wake.notify_all();
  };
  const auto threads =
      std::min<std::size_t>(n, static_cast<std::size_t>(std::max(1, use->config().num_compile_threads)));
  detail::compile_progress progress(0, n);
  // The most traces this thread leaves waiting for an analysis before it analyses one.
  constexpr std::size_t trace_backlog = 2;
  auto analyse = [&](std::size_t i) {
    if (!failures[i]) {
      try {
        std::lock_guard lock(kernels[i]->mutex);
        if (raw[i]) detail::finish_trace(*kernels[i], std::move(*raw[i]));
        constructs[i] = std::max<std::size_t>(1, kernels[i]->structure.constructs.size());
      } catch (...) {
        failures[i] = std::current_exception();
      }
      raw[i].reset();
    }
    if (!failures[i]) progress.expect(constructs[i]);
    analysed[i].store(true, std::memory_order_release);
    notify();
  };
  // One step of a worker: an analysis when a trace waits for one, else the next kernel's
  // compile when it is analysed, else a wait for either. False when nothing is left to do.
  auto step = [&] {
    std::size_t a = next_analysis.load(std::memory_order_relaxed);
    while (a < traced.load(std::memory_order_acquire))
      if (next_analysis.compare_exchange_weak(a, a + 1, std::memory_order_relaxed)) {
        analyse(a);
        return true;
      }
    std::size_t c = next_compile.load(std::memory_order_relaxed);
    if (c >= n) return false;
    if (analysed[c].load(std::memory_order_acquire)) {
      if (next_compile.compare_exchange_strong(c, c + 1, std::memory_order_relaxed) && !failures[c]) {
        // One compiler program for the kernel while enough kernels are left for the other
        // threads; the last ones may spread over the threads the others no longer need.
        detail::compile_programs_limit = n - c - 1 >= threads - 1 ? 1 : 0;
        try {
          detail::compile(*kernels[c]);
        } catch (...) {
          failures[c] = std::current_exception();
        }
        detail::compile_programs_limit = 0;
        progress.kernel_done(constructs[c]);
      }
      return true;
    }
    // The next kernel's trace is not made, or another thread is analysing it.
    std::unique_lock lock(wait_mutex);
    wake.wait(lock, [&] {
      const std::size_t next = next_compile.load(std::memory_order_relaxed);
      return next_analysis.load(std::memory_order_relaxed) < traced.load(std::memory_order_acquire) || next >= n ||
             analysed[next].load(std::memory_order_acquire);
    });
    return true;
  };
  auto work = [&] {
    detail::program_use held(std::nothrow);
    while (step()) {
    }
  };
  std::vector<std::thread> workers;
  for (std::size_t t = 1; t < threads; ++t) workers.emplace_back(work);
  for (std::size_t i = 0; i < n; ++i) {
    try {
      std::lock_guard lock(kernels[i]->mutex);
      raw[i] = detail::trace_if_stale(*kernels[i]);
    } catch (...) {
      failures[i] = std::current_exception();
    }
    traced.store(i + 1, std::memory_order_release);
    notify();
    // Ahead of the workers, this thread analyses the oldest trace waiting itself, so that few
    // raw traces are alive at once (a warm start of 100 kernels: 7,650 -> 7,200 page faults,
    // peak RSS 37.0 -> 35.7 MB; its time did not change measurably).
    for (std::size_t a = next_analysis.load(std::memory_order_relaxed); i + 1 - a > trace_backlog;)
      if (next_analysis.compare_exchange_weak(a, a + 1, std::memory_order_relaxed)) {
        analyse(a);
        break;
      }
  }
  work();
  for (auto& w : workers) w.join();
  progress.finish();
  for (auto& f : failures)
    if (f) std::rethrow_exception(f);
}

}  // namespace qd::inline v0
