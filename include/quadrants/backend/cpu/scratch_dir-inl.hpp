// Implementation of backend/cpu/scratch_dir.hpp.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>

#include "quadrants/backend/cpu/scratch_dir.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::backend::cpu {

QD_FUNC std::string scratch_root() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

QD_FUNC int remove_abandoned_scratch_dirs(const std::string& root) {
  DIR* d = ::opendir(root.c_str());
  if (d == nullptr) return 0;
  int removed = 0;
  const std::time_t now = std::time(nullptr);
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name.substr(0, 7) != "qd-cxx-" || name.size() != 13) continue;
    std::string path = root + "/" + e->d_name;
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    // Ours, a real directory, not just made (its owner locks it right after mkdtemp),
    // and nobody holds it: the process that made it is gone.
    bool abandoned = ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() &&
                     now - st.st_mtime > 60 && ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (abandoned) {
      std::error_code ec;
      removed += std::filesystem::remove_all(path, ec) > 0 && !ec;
    }
    ::close(fd);
  }
  ::closedir(d);
  return removed;
}

QD_FUNC scratch_dir::scratch_dir() {
  static std::once_flag swept;
  std::string root = scratch_root();
  std::call_once(swept, [&] { remove_abandoned_scratch_dirs(root); });
  std::string pattern = root + "/qd-cxx-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    throw driver_error(fmt::format("cannot create a scratch directory for compiling ({}): {}; set TMPDIR to a "
                                   "writable directory with free space",
                                   pattern, std::strerror(errno)),
                       "mkdtemp", errno);
  path_ = pattern;
  // Held until the destructor; the kernel drops it if this process dies.
  lock_fd_ = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock_fd_ >= 0) ::flock(lock_fd_, LOCK_EX);
}

QD_FUNC scratch_dir::~scratch_dir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

}  // namespace qd::inline v0::backend::cpu
