// Test helper: captures every log line while alive, then restores stderr.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quadrants/base/log.hpp"

namespace qd_test {

struct log_capture {
  std::mutex mutex;
  std::vector<std::pair<qd::log_level, std::string>> lines;
  log_capture() {
    qd::set_log_sink([this](qd::log_level level, std::string_view text) {
      std::lock_guard lock(mutex);
      lines.emplace_back(level, std::string(text));
    });
  }
  log_capture(const log_capture&) = delete;
  log_capture& operator=(const log_capture&) = delete;
  ~log_capture() { qd::set_log_sink({}); }

  // The lines logged at `level`.
  std::vector<std::string> at(qd::log_level level) {
    std::lock_guard lock(mutex);
    std::vector<std::string> out;
    for (auto& [l, text] : lines)
      if (l == level) out.push_back(text);
    return out;
  }
  // Every line, newline-terminated, for failure messages.
  std::string all() {
    std::lock_guard lock(mutex);
    std::string out;
    for (auto& line : lines) out += line.second + "\n";
    return out;
  }
  // How many lines at `level` contain `needle`.
  int count(qd::log_level level, std::string_view needle = {}) {
    int n = 0;
    for (const auto& text : at(level)) n += text.find(needle) != std::string::npos;
    return n;
  }
};

}  // namespace qd_test
