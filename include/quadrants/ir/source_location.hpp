// Where the user wrote each IR node: a file (as std::source_location names it) and a line.
// Kept beside the nodes, outside the canonical bytes, so moving code keeps every cache key.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace qd::inline v0::ir {

struct source_loc {
  const char* file = nullptr;  // static storage (std::source_location::file_name()); null: unknown
  std::uint32_t line = 0;
  constexpr bool known() const { return file != nullptr && line != 0; }
  friend constexpr bool operator==(const source_loc& a, const source_loc& b) {
    return a.line == b.line && std::string_view(a.file ? a.file : "") == std::string_view(b.file ? b.file : "");
  }
};

// Nodes from `first` on (up to the next run's first) were written at `loc`.
struct source_run {
  std::int32_t first = 0;
  source_loc loc;
};

// "file:line", or "" when unknown.
inline std::string to_text(const source_loc& l) {
  if (!l.known()) return {};
  return std::string(l.file) + ":" + std::to_string(l.line);
}

}  // namespace qd::inline v0::ir
