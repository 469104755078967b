// Implementation of runtime/diagnostics/debug_dump.hpp.
#pragma once

#include <filesystem>
#include <mutex>
#include <set>

#include "quadrants/base/log.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/runtime/diagnostics/debug_dump.hpp"
#include "quadrants/runtime/diagnostics/dump_path.hpp"
#include "quadrants/runtime/diagnostics/text_file.hpp"

namespace qd::inline v0::detail {

QD_FUNC std::string kernel_dump_dir(const settings& s, std::string_view kernel_name) {
  std::filesystem::path root = s.debug_dump_path.empty() ? std::string("qd_dump") : s.debug_dump_path;
  return (root / dump_file_stem(kernel_name)).string();
}

QD_FUNC void dump_debug_file(const settings& s, std::string_view kernel_name, std::string_view relative,
                             std::string_view text) {
  static std::mutex mutex;
  static std::set<std::string> logged, warned;
  const std::string root = s.debug_dump_path.empty() ? std::string("qd_dump") : s.debug_dump_path;
  const std::string path = kernel_dump_dir(s, kernel_name) + "/" + std::string(relative);
  std::string why;
  const bool written = write_text_atomically(path, text, &why, root);  // every directory from the root down checked
  std::lock_guard lock(mutex);
  if (written && logged.insert(root).second) {
    std::error_code ec;
    const auto absolute = std::filesystem::absolute(root, ec);
    log_fmt(log_level::info, "print_ir: writing each kernel's IR and generated source under {}/<kernel>/",
            ec ? root : absolute.string());
  } else if (!written && warned.insert(root).second) {
    log_fmt(log_level::warn,
            "kernel '{}': print_ir cannot write its debug dump to {}: {}; further failures there "
            "are not reported",
            kernel_name, path, why);
  }
}

}  // namespace qd::inline v0::detail
