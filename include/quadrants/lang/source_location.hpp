// qd::source_location: std::source_location where the standard library has it, else the
// same interface over the compiler's __builtin_FILE/__builtin_LINE. DSL entry points take
// one as a defaulted last parameter, so the IR records the user's file and line.
#pragma once

#include <cstdint>
#include <version>

#if defined(__cpp_lib_source_location)
#include <source_location>
#endif

#include "quadrants/lang/trace.hpp"

namespace qd::inline v0 {

#if defined(__cpp_lib_source_location)
using source_location = std::source_location;
#else
class source_location {
 public:
  static constexpr source_location current(const char* file = __builtin_FILE(),
                                           std::uint_least32_t line = __builtin_LINE(),
                                           std::uint_least32_t column = __builtin_COLUMN()) noexcept {
    source_location l;
    l.file_ = file;
    l.line_ = line;
    l.column_ = column;
    return l;
  }
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr std::uint_least32_t line() const noexcept { return line_; }
  constexpr std::uint_least32_t column() const noexcept { return column_; }

 private:
  const char* file_ = "";
  std::uint_least32_t line_ = 0;
  std::uint_least32_t column_ = 0;
};
#endif

namespace detail {
// Nodes traced from now on were written at `loc`.
inline void at(const source_location& loc) noexcept {
  set_location(loc.file_name(), static_cast<std::uint32_t>(loc.line()));
}
}  // namespace detail

}  // namespace qd::inline v0
