// Implementation of base/log.hpp.
#pragma once

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

#include "quadrants/base/log.hpp"

namespace qd::inline v0 {
namespace detail {

struct log_state {
  std::atomic<log_level> level{log_level::info};
  std::mutex mutex;  // guards sink; taken only when a line is actually written
  log_sink sink;
};

QD_FUNC log_state& global_log_state() {
  static log_state state;
  return state;
}

QD_FUNC bool log_enabled(log_level level) noexcept {
  auto threshold = global_log_state().level.load(std::memory_order_relaxed);
  return level != log_level::off && level >= threshold;
}

QD_FUNC void log_write(log_level level, std::string_view message) {
  if (!log_enabled(level)) return;
  auto& state = global_log_state();
  std::lock_guard lock(state.mutex);
  if (state.sink) {
    state.sink(level, message);
    return;
  }
  std::string line = "[quadrants] [";
  line += name(level);
  line += "] ";
  line += message;
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace detail

QD_FUNC void set_log_sink(log_sink sink) {
  auto& state = detail::global_log_state();
  std::lock_guard lock(state.mutex);
  state.sink = std::move(sink);
}

QD_FUNC void set_log_level(log_level level) noexcept {
  detail::global_log_state().level.store(level, std::memory_order_relaxed);
}

QD_FUNC log_level get_log_level() noexcept { return detail::global_log_state().level.load(std::memory_order_relaxed); }

QD_FUNC std::string_view name(log_level level) noexcept {
  switch (level) {
    case log_level::trace: return "trace";
    case log_level::debug: return "debug";
    case log_level::info: return "info";
    case log_level::warn: return "warn";
    case log_level::error: return "error";
    case log_level::critical: return "critical";
    case log_level::off: return "off";
  }
  return "?";
}

}  // namespace qd::inline v0
