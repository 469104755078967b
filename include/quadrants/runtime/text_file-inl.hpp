// Implementation of runtime/text_file.hpp.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "quadrants/detail/format.hpp"
#include "quadrants/runtime/text_file.hpp"

namespace qd::detail {

QD_FUNC bool write_text_atomically(const std::string& path, std::string_view text, std::string* why) {
  namespace fs = std::filesystem;
  static std::atomic<std::uint64_t> counter{0};
  std::error_code ec;
  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  const fs::path temp = target.string() + fmt::format(".{}.{}.tmp", static_cast<long>(::getpid()),
                                                      counter.fetch_add(1, std::memory_order_relaxed));
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) {
      if (why) *why = ec ? ec.message() : std::string("cannot write a temporary file there");
      fs::remove(temp, ec);
      return false;
    }
  }
  fs::rename(temp, target, ec);
  if (ec) {
    if (why) *why = ec.message();
    std::error_code ignored;
    fs::remove(temp, ignored);
    return false;
  }
  return true;
}

}  // namespace qd::detail
