// Implementation of backend/compiler_log.hpp.
#pragma once

#include <cctype>

#include "quadrants/backend/compiler_log.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::backend {
namespace detail {

// The line number right after `file` at `at` ("(N)" or ":N:"), or 0.
QD_FUNC int line_after(std::string_view log, std::size_t at) {
  if (at >= log.size() || (log[at] != '(' && log[at] != ':')) return 0;
  int line = 0;
  for (std::size_t i = at + 1; i < log.size() && std::isdigit(static_cast<unsigned char>(log[i])); ++i)
    line = line * 10 + (log[i] - '0');
  return line;
}

}  // namespace detail

QD_FUNC std::string quote_generated_line(std::string_view log, std::string_view source, std::string_view file) {
  int line = 0;
  // Prefer a location on a line that reports an error; else the first location.
  for (std::size_t at = log.find(file); at != std::string_view::npos; at = log.find(file, at + 1)) {
    int l = detail::line_after(log, at + file.size());
    if (l <= 0) continue;
    std::size_t eol = log.find('\n', at);
    std::string_view rest = log.substr(at, eol == std::string_view::npos ? std::string_view::npos : eol - at);
    if (rest.find("error") != std::string_view::npos) {
      line = l;
      break;
    }
    if (line == 0) line = l;
  }
  if (line <= 0) return {};
  std::size_t pos = 0;
  for (int l = 1; l < line && pos != std::string_view::npos; ++l) {
    pos = source.find('\n', pos);
    if (pos != std::string_view::npos) ++pos;
  }
  if (pos == std::string_view::npos || pos >= source.size()) return {};
  std::size_t end = source.find('\n', pos);
  return fmt::format("generated line {}: {}", line,
                     source.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
}

}  // namespace qd::inline v0::backend
