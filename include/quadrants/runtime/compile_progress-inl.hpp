// Implementation of runtime/compile_progress.hpp.
#pragma once

#include <unistd.h>

#include <cstdio>

#include "quadrants/base/format.hpp"
#include "quadrants/base/log.hpp"
#include "quadrants/runtime/compile_progress.hpp"

namespace qd::inline v0::detail {

QD_FUNC compile_progress::compile_progress(std::size_t constructs, std::size_t kernels, std::chrono::milliseconds quiet)
    : total_constructs_(constructs),
      total_kernels_(kernels),
      quiet_(quiet),
      start_(std::chrono::steady_clock::now()),
      terminal_(::isatty(STDERR_FILENO) == 1) {
  if (!log_enabled(log_level::info)) return;
  reporter_ = std::thread([this] {
    // A terminal line is rewritten four times a second; a log gets a line a second.
    const auto period = std::chrono::milliseconds(terminal_ ? 250 : 1000);
    std::unique_lock lock(mutex_);
    if (wake_.wait_for(lock, quiet_, [&] { return stop_; })) return;
    while (!stop_) {
      lock.unlock();
      report(false);
      lock.lock();
      wake_.wait_for(lock, period, [&] { return stop_; });
    }
  });
}

QD_FUNC compile_progress::~compile_progress() { finish(); }

QD_FUNC void compile_progress::kernel_done(std::size_t constructs) {
  constructs_.fetch_add(constructs, std::memory_order_relaxed);
  kernels_.fetch_add(1, std::memory_order_relaxed);
}

QD_FUNC void compile_progress::finish() {
  {
    std::lock_guard lock(mutex_);
    if (stop_) return;
    stop_ = true;
  }
  wake_.notify_all();
  if (reporter_.joinable()) reporter_.join();
  if (shown() > 0) report(true);
}

QD_FUNC void compile_progress::report(bool final) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::size_t done = constructs_.load(std::memory_order_relaxed);
  const std::size_t kernels = kernels_.load(std::memory_order_relaxed);
  const std::size_t total = total_constructs_.load(std::memory_order_relaxed);
  std::string line = fmt::format("compiling: {}/{} constructs ({}/{} kernels), {:.1f} s", done, total, kernels,
                                 total_kernels_, elapsed);
  if (final)
    line += ", done";
  else if (done > 0 && done < total)
    line +=
        fmt::format(", about {:.0f} s left", elapsed * static_cast<double>(total - done) / static_cast<double>(done));
  shown_.fetch_add(1, std::memory_order_relaxed);
  if (terminal_) {
    std::fprintf(stderr, "\r[quadrants] %s\033[K%s", line.c_str(), final ? "\n" : "");
    std::fflush(stderr);
  } else {
    log_write(log_level::info, line);
  }
}

}  // namespace qd::inline v0::detail
