// Implementation of backend/shared_library.hpp.
#pragma once

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "quadrants/backend/shared_library.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::backend {
namespace detail {

QD_FUNC bool is_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

QD_FUNC bool is_directory(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The first of `names` in `dir`.
QD_FUNC std::string find_in(const std::string& dir, const std::vector<std::string>& names) {
  for (const auto& n : names) {
    std::string candidate = dir + "/" + n;
    if (is_file(candidate)) return candidate;
  }
  return {};
}

QD_FUNC std::string joined(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : std::string(separator)) + i;
  return out;
}

}  // namespace detail

QD_FUNC std::string locate_library(const library_search& s) {
  using detail::find_in;
  for (const auto& var : s.variables) {
    const char* value = std::getenv(var.c_str());
    if (value == nullptr || *value == '\0') continue;
    std::string v = value;
    if (detail::is_file(v)) return v;
    if (detail::is_directory(v))
      for (const char* sub : {"", "/lib64", "/lib"})
        if (auto f = find_in(v + sub, s.names); !f.empty()) return f;
    throw driver_error(fmt::format("{}: {}='{}' names neither the library nor a directory holding one of {} (directly, "
                                   "or in lib64/ or lib/). Point {} at the library file or its installation",
                                   s.what, var, v, detail::joined(s.names, ", "), var),
                       "locate " + s.names.front(), 0);
  }
  std::vector<std::string> dirs;
  if (const char* ld = std::getenv("LD_LIBRARY_PATH")) {
    std::istringstream in(ld);
    for (std::string d; std::getline(in, d, ':');)
      if (!d.empty()) dirs.push_back(d);
  }
  dirs.insert(dirs.end(), s.directories.begin(), s.directories.end());
  for (const auto& d : dirs)
    if (auto f = find_in(d, s.names); !f.empty()) return f;
  throw driver_error(fmt::format("{} was not found: none of {} in LD_LIBRARY_PATH or {}. Install it, or set {} to the "
                                 "library file or its installation directory",
                                 s.what, detail::joined(s.names, ", "), detail::joined(s.directories, ", "),
                                 detail::joined(s.variables, " or ")),
                     "locate " + s.names.front(), 0);
}

QD_FUNC std::string library_fingerprint(const library_search& s) {
  std::string path;
  try {
    path = locate_library(s);
  } catch (const driver_error&) {
    return "missing " + s.names.front();
  }
  return file_fingerprint(path);
}

QD_FUNC std::string file_fingerprint(const std::string& path) {
  std::error_code ec;
  auto real = std::filesystem::canonical(path, ec);
  struct stat st {};
  if (ec || ::stat(real.c_str(), &st) != 0) return "unreadable " + path;
  return fmt::format("{} {} {}.{}", real.string(), static_cast<long long>(st.st_size),
                     static_cast<long long>(st.st_mtim.tv_sec), static_cast<long long>(st.st_mtim.tv_nsec));
}

QD_FUNC shared_library::shared_library(const library_search& s) : path_(locate_library(s)), what_(s.what) {
  handle_ = ::dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* err = ::dlerror();
    throw driver_error(fmt::format("{}: dlopen('{}') failed: {}. Set {} to a working copy of the library", s.what,
                                   path_, err ? err : "unknown error", detail::joined(s.variables, " or ")),
                       "dlopen", 0);
  }
}

QD_FUNC void* shared_library::symbol(const char* name) const {
  void* p = optional_symbol(name);
  if (p == nullptr)
    throw driver_error(
        fmt::format("{}: '{}' has no symbol '{}'; the library is too old or not the expected one", what_, path_, name),
        name, 0);
  return p;
}

QD_FUNC void* shared_library::optional_symbol(const char* name) const noexcept {
  ::dlerror();
  return ::dlsym(handle_, name);
}

}  // namespace qd::inline v0::backend
