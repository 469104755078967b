// Implementation of runtime/diagnostics/text_file.hpp.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "quadrants/base/format.hpp"
#include "quadrants/runtime/diagnostics/text_file.hpp"

namespace qd::inline v0::detail::text_file_parts {

QD_FUNC std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

// "a FIFO", "a character device", ... for a file that is not regular.
QD_FUNC std::string_view kind_of(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO (a named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a directory";
  return "not a regular file";
}

QD_FUNC std::string not_regular(const std::string& path, mode_t mode) {
  return fmt::format(
      "{} is {}, not a regular file; dumps and coverage are written only to regular files or new "
      "names, so choose another path",
      path, kind_of(mode));
}

// Empty when files in the directory are safe from other users: it is owned by this user
// or root, and others cannot write it, or it is sticky (they cannot rename or remove ours).
QD_FUNC std::string directory_problem(const struct stat& st, const std::string& path) {
  if (!S_ISDIR(st.st_mode)) return fmt::format("{} is not a directory", path);
  if (st.st_uid != ::geteuid() && st.st_uid != 0)
    return fmt::format(
        "the directory {} is owned by uid {}, not by this user (uid {}) or root, so its owner could "
        "replace the files written there; choose a directory of your own",
        path, st.st_uid, ::geteuid());
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0)
    return fmt::format(
        "the directory {} is writable by group or others without the sticky bit (mode {:04o}), so "
        "another user could replace the files written there; run chmod go-w on it, or choose "
        "another directory",
        path, st.st_mode & 07777);
  return {};
}

// mkdir -p with mode 0755 for what it creates; 0 or an errno.
QD_FUNC int make_directories(const std::string& path) {
  for (std::size_t pos = 1;; ++pos) {
    pos = path.find('/', pos);
    const std::string part = path.substr(0, pos);
    if (!part.empty() && ::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return errno;
    if (pos == std::string::npos) return 0;
  }
}

class fd_holder {
 public:
  explicit fd_holder(int fd = -1) : fd_(fd) {}
  fd_holder(const fd_holder&) = delete;
  fd_holder& operator=(const fd_holder&) = delete;
  ~fd_holder() { reset(); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// Opens `root` (following links: the user named it) and then each directory of `relative`
// below it without following links, creating what is missing and checking each; the
// innermost one in `dir`. Empty on success, else why not.
QD_FUNC std::string open_trusted_directory(const std::filesystem::path& root, const std::filesystem::path& relative,
                                           fd_holder& dir) {
  const std::string root_text = root.string();
  if (int e = make_directories(root_text); e != 0)
    return fmt::format("cannot create the directory {} ({})", root_text, errno_text(e));
  dir.reset(::open(root_text.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) return fmt::format("cannot open the directory {} ({})", root_text, errno_text(errno));
  struct stat st;
  if (::fstat(dir.get(), &st) != 0) return fmt::format("cannot inspect {} ({})", root_text, errno_text(errno));
  if (std::string problem = directory_problem(st, root_text); !problem.empty()) return problem;
  std::filesystem::path walked = root;
  for (const std::filesystem::path& part : relative) {
    const std::string name = part.string();
    if (name.empty() || name == ".") continue;
    walked /= part;
    if (name == "..") return fmt::format("{} leaves the directory {}", walked.string(), root_text);
    if (::mkdirat(dir.get(), name.c_str(), 0755) != 0 && errno != EEXIST)
      return fmt::format("cannot create the directory {} ({})", walked.string(), errno_text(errno));
    const int next = ::openat(dir.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) {
      const int e = errno;
      if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
        return fmt::format("{} is {}, not a directory; links are not followed below {}", walked.string(),
                           kind_of(st.st_mode), root_text);
      return fmt::format("cannot open the directory {} ({})", walked.string(), errno_text(e));
    }
    dir.reset(next);
    if (::fstat(dir.get(), &st) != 0) return fmt::format("cannot inspect {} ({})", walked.string(), errno_text(errno));
    if (std::string problem = directory_problem(st, walked.string()); !problem.empty()) return problem;
  }
  return {};
}

QD_FUNC bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace qd::inline v0::detail::text_file_parts

namespace qd::inline v0::detail {

QD_FUNC bool write_text_atomically(const std::string& path, std::string_view text, std::string* why,
                                   const std::string& root) {
  namespace fs = std::filesystem;
  using namespace text_file_parts;
  auto failed = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  try {
    const fs::path target(path);
    const std::string name = target.filename().string();
    if (name.empty() || name == "." || name == "..") return failed(fmt::format("{} does not name a file", path));
    const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
    const fs::path top = root.empty() ? parent : fs::path(root);
    const fs::path below = parent.lexically_relative(top);
    if (below.empty() || *below.begin() == "..") return failed(fmt::format("{} is not inside {}", path, top.string()));
    fd_holder dir;
    if (std::string problem = open_trusted_directory(top, below, dir); !problem.empty()) return failed(problem);
    struct stat st;
    auto target_problem = [&]() -> std::string {
      if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return {};  // a new name
      return S_ISREG(st.st_mode) ? std::string() : not_regular(path, st.st_mode);
    };
    if (std::string problem = target_problem(); !problem.empty()) return failed(problem);
    // A name nobody can predict, created new: nothing planted there is followed or reused.
    std::random_device random;
    std::string temp;
    int out = -1;
    for (int attempt = 0; attempt < 16 && out < 0; ++attempt) {
      temp = fmt::format(".{}.{:08x}{:08x}.tmp", name.substr(0, 200), random(), random());
      out = ::openat(dir.get(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (out < 0 && errno != EEXIST) break;
    }
    if (out < 0) return failed(fmt::format("cannot create a temporary file beside {} ({})", path, errno_text(errno)));
    bool ok = write_all(out, text);
    int error = errno;
    if (::close(out) != 0 && ok) {
      ok = false;
      error = errno;
    }
    std::string problem = ok ? std::string() : fmt::format("cannot write {} ({})", path, errno_text(error));
    if (problem.empty()) problem = target_problem();  // planted since: still never replaced
    if (problem.empty() && ::renameat(dir.get(), temp.c_str(), dir.get(), name.c_str()) != 0)
      problem = fmt::format("cannot rename the temporary file to {} ({})", path, errno_text(errno));
    if (problem.empty()) return true;
    ::unlinkat(dir.get(), temp.c_str(), 0);
    return failed(problem);
  } catch (const std::exception& e) {
    return failed(e.what());
  }
}

QD_FUNC bool read_regular_file(const std::string& path, std::string& out, std::string* why, std::size_t max_bytes) {
  using namespace text_file_parts;
  auto failed = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  out.clear();
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return true;
    return failed(fmt::format("cannot inspect {} ({})", path, errno_text(errno)));
  }
  if (!S_ISREG(st.st_mode)) return failed(not_regular(path, st.st_mode));
  // O_NOFOLLOW and O_NONBLOCK: whatever replaced it since is neither followed nor waited on.
  fd_holder in(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (in.get() < 0) return failed(fmt::format("cannot open {} ({})", path, errno_text(errno)));
  if (::fstat(in.get(), &st) != 0) return failed(fmt::format("cannot inspect {} ({})", path, errno_text(errno)));
  if (!S_ISREG(st.st_mode)) return failed(not_regular(path, st.st_mode));
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    return failed(fmt::format("{} holds {} bytes, more than the {} expected", path, st.st_size, max_bytes));
  out.resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(in.get(), out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return failed(fmt::format("cannot read {} ({})", path, errno_text(errno)));
    if (n == 0) break;  // shrunk meanwhile
    done += static_cast<std::size_t>(n);
  }
  out.resize(done);
  return true;
}

}  // namespace qd::inline v0::detail
