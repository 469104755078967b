// Formatting helpers for implementation files only: fmt's full API and log_fmt.
// Never included by a public header, so user translation units do not parse fmt.
#pragma once

#include <fmt/format.h>

#include <string>
#include <utility>

#include "quadrants/base/log.hpp"

namespace qd::inline v0::detail {

template <class... Args>
void log_fmt(log_level level, fmt::format_string<Args...> format, Args&&... args) {
  if (!log_enabled(level)) return;
  log_write(level, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace qd::inline v0::detail
