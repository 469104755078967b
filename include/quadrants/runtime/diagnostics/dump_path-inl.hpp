// Implementation of runtime/diagnostics/dump_path.hpp.
#pragma once

#include "quadrants/base/log.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/ir/serialize.hpp"
#include "quadrants/runtime/diagnostics/dump_path.hpp"

namespace qd::inline v0::detail {

QD_FUNC std::string dump_file_stem(std::string_view kernel_name) {
  constexpr std::size_t max_length = 80;
  std::string stem;
  for (char c : kernel_name.substr(0, max_length)) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                      c == '-' || (c == '.' && !stem.empty());
    stem += safe ? c : '_';
  }
  if (stem.empty()) stem = "_";
  if (stem != kernel_name) stem += fmt::format("-{:08x}", static_cast<std::uint32_t>(ir::fnv1a(kernel_name)));
  return stem;
}

QD_FUNC void log_nothing_dumped(std::string_view kernel_name) {
  log_fmt(log_level::info,
          "kernel '{}': print_ir is on, but it was not compiled now (it came from the offline cache or from another "
          "kernel of this process); its dumped program is the source that code was compiled from. Clear the cache "
          "(qd-cache clean) or set offline_cache = false to see the compiler run",
          kernel_name);
}

}  // namespace qd::inline v0::detail
