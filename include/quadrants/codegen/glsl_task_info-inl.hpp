// Implementation of codegen/glsl_task_info.hpp.
#pragma once

#include <charconv>

#include "quadrants/base/error.hpp"
#include "quadrants/codegen/glsl_task_info.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::codegen {
namespace detail {

QD_FUNC std::vector<std::string_view> words_of(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t at = 0;
  while (at < line.size()) {
    while (at < line.size() && line[at] == ' ') ++at;
    std::size_t end = line.find(' ', at);
    if (end == std::string_view::npos) end = line.size();
    if (end > at) out.push_back(line.substr(at, end - at));
    at = end;
  }
  return out;
}

QD_FUNC unsigned number_of(std::string_view word, std::string_view line) {
  unsigned v = 0;
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
  if (ec != std::errc() || end != word.data() + word.size())
    throw internal_error(fmt::format("GLSL task marker: '{}' is not a number in '{}'", word, line));
  return v;
}

QD_FUNC int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

QD_FUNC glsl_print_piece piece_of(std::string_view word, std::string_view line) {
  glsl_print_piece p;
  if (word.size() >= 1 && word[0] == 't' && word.size() % 2 == 1) {
    for (std::size_t i = 1; i < word.size(); i += 2) {
      const int hi = hex_digit(word[i]), lo = hex_digit(word[i + 1]);
      if (hi < 0 || lo < 0) throw internal_error(fmt::format("GLSL task marker: bad text piece in '{}'", line));
      p.text += static_cast<char>(hi * 16 + lo);
    }
    return p;
  }
  if (word.size() >= 2 && word[0] == 'v')
    for (int t = 0; t < dtype_count; ++t)
      if (name(static_cast<dtype>(t)) == word.substr(1)) {
        p.is_text = false;
        p.type = static_cast<dtype>(t);
        return p;
      }
  throw internal_error(fmt::format("GLSL task marker: bad print piece '{}' in '{}'", word, line));
}

}  // namespace detail

QD_FUNC std::string glsl_task_macro(std::string_view entry) { return "QD_TASK_" + std::string(entry); }

QD_FUNC std::string glsl_task_markers(const glsl_task_info& task) {
  std::string out = fmt::format("//@qd_task {} {} {} {}\n", task.entry, task.workgroup_size,
                                task.parallel ? "parallel" : "serial", task.prints.size());
  for (std::size_t s = 0; s < task.prints.size(); ++s) {
    out += fmt::format("//@qd_print {}", s);
    for (const glsl_print_piece& p : task.prints[s]) {
      if (!p.is_text) {
        out += fmt::format(" v{}", name(p.type));
        continue;
      }
      out += " t";
      for (char c : p.text) out += fmt::format("{:02x}", static_cast<unsigned char>(c));
    }
    out += '\n';
  }
  return out;
}

QD_FUNC std::vector<glsl_task_info> glsl_tasks_in(std::string_view source) {
  std::vector<glsl_task_info> tasks;
  std::size_t expected_sites = 0;
  for (std::size_t at = 0; at < source.size();) {
    std::size_t end = source.find('\n', at);
    if (end == std::string_view::npos) end = source.size();
    const std::string_view line = source.substr(at, end - at);
    at = end + 1;
    if (line.starts_with("//@qd_task ")) {
      const auto w = detail::words_of(line);
      if (w.size() != 5 || (w[3] != "parallel" && w[3] != "serial"))
        throw internal_error(fmt::format("GLSL task marker: malformed '{}'", line));
      if (!tasks.empty() && tasks.back().prints.size() != expected_sites)
        throw internal_error(fmt::format("GLSL task marker: task '{}' lacks print sites", tasks.back().entry));
      glsl_task_info t;
      t.entry = std::string(w[1]);
      t.workgroup_size = detail::number_of(w[2], line);
      t.parallel = w[3] == "parallel";
      expected_sites = detail::number_of(w[4], line);
      tasks.push_back(std::move(t));
    } else if (line.starts_with("//@qd_print ")) {
      const auto w = detail::words_of(line);
      if (tasks.empty() || w.size() < 2 || detail::number_of(w[1], line) != tasks.back().prints.size() ||
          tasks.back().prints.size() >= expected_sites)
        throw internal_error(fmt::format("GLSL task marker: a print site out of place: '{}'", line));
      std::vector<glsl_print_piece> pieces;
      for (std::size_t k = 2; k < w.size(); ++k) pieces.push_back(detail::piece_of(w[k], line));
      tasks.back().prints.push_back(std::move(pieces));
    }
  }
  if (!tasks.empty() && tasks.back().prints.size() != expected_sites)
    throw internal_error(fmt::format("GLSL task marker: task '{}' lacks print sites", tasks.back().entry));
  return tasks;
}

}  // namespace qd::inline v0::codegen
