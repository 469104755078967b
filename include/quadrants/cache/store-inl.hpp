// Implementation of cache/store.hpp.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <zstd.h>
#ifndef XXH_STATIC_LINKING_ONLY
#define XXH_STATIC_LINKING_ONLY
#endif
#include <xxhash.h>

#include <algorithm>
#include <iterator>
#include <climits>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <limits>
#include <mutex>
#include <system_error>
#include <thread>

#include "quadrants/base/error.hpp"
#include "quadrants/cache/entry.hpp"
#include "quadrants/cache/store.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::cache {

namespace detail {

struct store_state {
  store_options options;
  std::string root;
  std::atomic<bool> readable{false}, writable{false};
  bool kind_trusted[std::size(all_entry_kinds) + 1] = {true, true, true, true, true, true};  // by kind byte (1..);
                                                                                             // fixed after construction
  std::atomic<bool> warned_degraded{false}, warned_trust{false};

  std::atomic<std::uint64_t> hits{0}, misses{0}, stores{0}, evictions{0}, rejected{0};
  std::atomic<std::uint64_t> bytes_read{0}, bytes_written{0};

  // Scan scheduling: the entry bytes found by the last scan, what this store wrote since,
  // and when that scan ran (unix seconds). `scan_mutex` keeps one scan per store at a time.
  std::mutex scan_mutex;
  std::atomic<bool> scan_known{false};
  std::atomic<std::uint64_t> scanned_bytes{0}, written_since_scan{0};
  std::atomic<std::int64_t> last_scan{0};
};

QD_FUNC std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

QD_FUNC std::int64_t unix_now() { return static_cast<std::int64_t>(std::time(nullptr)); }

// Empty when the file or directory may be trusted: owned by us and not writable by anyone else.
QD_FUNC std::string trust_problem(const struct stat& st) {
  if (st.st_uid != ::geteuid())
    return fmt::format("it is owned by uid {}, not by this user (uid {})", st.st_uid, ::geteuid());
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return fmt::format("it is writable by group or others (mode {:04o})", st.st_mode & 07777);
  return {};
}

// mkdir -p with `mode` for the directories it creates; 0 or an errno.
QD_FUNC int make_directories(const std::string& path, mode_t mode) {
  if (path.empty()) return ENOENT;
  for (std::size_t pos = 1;; ++pos) {
    pos = path.find('/', pos);
    std::string part = path.substr(0, pos);
    if (::mkdir(part.c_str(), mode) != 0 && errno != EEXIST) return errno;
    if (pos == std::string::npos) break;
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return errno;
  return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

QD_FUNC bool write_all(int fd, const std::byte* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

QD_FUNC bool read_all(int fd, std::byte* data, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, data + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Removes whatever is at `path` (a file, a link, or a directory tree); never throws.
QD_FUNC bool remove_path(const std::string& path) {
  if (::unlink(path.c_str()) == 0 || errno == ENOENT) return true;
  if (errno != EISDIR && errno != EPERM) return false;
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  return !ec;
}

QD_FUNC std::string kind_dir(const std::string& root, entry_kind kind) {
  std::string dir = root;
  dir += '/';
  dir += name(kind);
  return dir;
}

QD_FUNC std::string temp_name(const std::string& dir, std::string_view stem) {
  static std::atomic<std::uint64_t> counter{0};
  return fmt::format("{}/.{}.{}.{}.tmp", dir, stem, ::getpid(), counter.fetch_add(1, std::memory_order_relaxed));
}

// Names that temp_name() makes, and nothing else: a mistaken root must not lose files.
QD_FUNC bool is_temp_name(std::string_view name, std::string_view stem) {
  if (name.size() < 6 || name[0] != '.' || !name.ends_with(".tmp")) return false;
  std::string_view got = name.substr(1, name.find('.', 1) - 1);
  return stem.empty() ? key::from_hex(got).has_value() : got == stem;
}

// "<32 hex>.qdc"
QD_FUNC std::optional<key> entry_name_key(std::string_view name) {
  if (name.size() != 36 || !name.ends_with(".qdc")) return std::nullopt;
  return key::from_hex(name.substr(0, 32));
}

// The tag that marks the root as a cache directory, for backup tools too (bford.info/cachedir).
inline constexpr std::string_view cachedir_tag_name = "CACHEDIR.TAG";
inline constexpr std::string_view cachedir_tag =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by Quadrants for its offline cache.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n";

// Names the store makes at the root.
QD_FUNC bool is_root_name(std::string_view name) {
  return name == "locks" || name == "scan-stamp" || name == cachedir_tag_name || entry_kind_from_name(name) ||
         is_temp_name(name, "scan-stamp");
}

// Largest file an entry can be; anything bigger is refused before it is read.
QD_FUNC std::uint64_t max_entry_file_size() { return entry_header_size + ZSTD_compressBound(max_payload_size); }

struct dir_item {
  std::string name;
  struct stat st;
};

// The names in `path` with their lstat, skipping "." and ".."; empty when unreadable.
QD_FUNC std::vector<dir_item> read_directory(const std::string& path) {
  std::vector<dir_item> items;
  DIR* dir = ::opendir(path.c_str());
  if (!dir) return items;
  while (dirent* d = ::readdir(dir)) {
    std::string_view n = d->d_name;
    if (n == "." || n == "..") continue;
    dir_item item{std::string(n), {}};
    if (::fstatat(::dirfd(dir), d->d_name, &item.st, AT_SYMLINK_NOFOLLOW) == 0) items.push_back(std::move(item));
  }
  ::closedir(dir);
  return items;
}

QD_FUNC bool is_stale(const struct stat& st, std::int64_t now) {
  return now - static_cast<std::int64_t>(st.st_mtime) >= stale_temp_age.count();
}

QD_FUNC std::int64_t mtime_ns(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// An entry seen by a scan, with its modification time to the nanosecond: saves within
// one second must still be ordered for LRU.
struct found_entry {
  entry_info info;
  std::int64_t mtime_ns = 0;
};

// Every name at an entry position, optionally removing stale temporary files on the way.
QD_FUNC std::vector<found_entry> walk_entries(const std::string& root, bool sweep, std::uint64_t* swept) {
  std::vector<found_entry> entries;
  std::int64_t now = unix_now();
  auto sweep_temp = [&](const std::string& dir, const dir_item& item, std::string_view stem) {
    if (sweep && S_ISREG(item.st.st_mode) && is_temp_name(item.name, stem) && is_stale(item.st, now) &&
        ::unlink((dir + '/' + item.name).c_str()) == 0 && swept)
      ++*swept;
  };
  if (sweep)
    for (const dir_item& item : read_directory(root)) sweep_temp(root, item, "scan-stamp");
  for (entry_kind kind : all_entry_kinds) {
    std::string dir = kind_dir(root, kind);
    for (const dir_item& item : read_directory(dir)) {
      if (std::optional<key> k = entry_name_key(item.name)) {
        std::uint64_t size = S_ISREG(item.st.st_mode) ? static_cast<std::uint64_t>(item.st.st_size) : 0;
        entries.push_back(
            {{dir + '/' + item.name, kind, *k, size, static_cast<std::int64_t>(item.st.st_mtime)}, mtime_ns(item.st)});
      } else {
        sweep_temp(dir, item, "");  // an entry's temporary file: .<32 hex>.<pid>.<n>.tmp
      }
    }
  }
  return entries;
}

// Removes lock files that nobody holds. Taking the flock first means a holder is never
// robbed; a waiter that opened the old file notices the unlink and reopens.
QD_FUNC void sweep_locks(const std::string& root) {
  std::string dir = root + "/locks";
  std::int64_t now = unix_now();
  for (const dir_item& item : read_directory(dir)) {
    if (!S_ISREG(item.st.st_mode) || item.name.size() != 37 || !item.name.ends_with(".lock") ||
        !key::from_hex(std::string_view(item.name).substr(0, 32)) || !is_stale(item.st, now))
      continue;
    std::string path = dir + '/' + item.name;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) ::unlink(path.c_str());
    ::close(fd);
  }
}

// Removes an entry unless it changed since it was listed (a process renewed or replaced it).
QD_FUNC bool remove_if_unchanged(const found_entry& e) {
  struct stat st;
  if (::lstat(e.info.path.c_str(), &st) != 0) return errno == ENOENT;
  std::uint64_t size = S_ISREG(st.st_mode) ? static_cast<std::uint64_t>(st.st_size) : 0;
  if (mtime_ns(st) != e.mtime_ns || size != e.info.file_size) return false;
  return remove_path(e.info.path);
}

// The scan behind eviction and cleaning: sweeps temporaries and locks, removes entries
// unused since `unused_before`, then, if more than `trigger` bytes remain, the least
// recently used ones until at most `target` remain.
QD_FUNC clean_result scan_and_remove(const std::string& root, std::uint64_t trigger, std::uint64_t target,
                                     std::int64_t unused_before) {
  clean_result r;
  std::vector<found_entry> entries = walk_entries(root, true, &r.removed_temporaries);
  sweep_locks(root);
  std::sort(entries.begin(), entries.end(), [](const found_entry& a, const found_entry& b) {
    return a.mtime_ns != b.mtime_ns ? a.mtime_ns < b.mtime_ns : a.info.path < b.info.path;
  });
  std::uint64_t total = 0;
  for (const found_entry& e : entries) total += e.info.file_size;
  bool evicting = false;
  for (const found_entry& e : entries) {
    bool old = e.info.last_use < unused_before;
    if (!old && !evicting && total > trigger) evicting = true;
    if ((old || (evicting && total > target)) && remove_if_unchanged(e)) {
      ++r.removed_entries;
      r.removed_bytes += e.info.file_size;
      total -= e.info.file_size;
    } else {
      ++r.remaining_entries;
    }
  }
  r.remaining_bytes = total;
  return r;
}

// The scan stamp: the entry bytes found by the last full scan; its mtime is when.
QD_FUNC std::optional<std::pair<std::uint64_t, std::int64_t>> read_scan_stamp(const std::string& root) {
  int fd = ::open((root + "/scan-stamp").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat st;
  char text[32] = {};
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::pread(fd, text, sizeof text - 1, 0) > 0;
  ::close(fd);
  if (!ok) return std::nullopt;
  char* end = nullptr;
  std::uint64_t total = std::strtoull(text, &end, 10);
  if (end == text) return std::nullopt;
  return std::pair{total, static_cast<std::int64_t>(st.st_mtime)};
}

QD_FUNC void write_scan_stamp(const std::string& root, std::uint64_t total) {
  std::string tmp = temp_name(root, "scan-stamp");
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;
  std::string text = fmt::format("{}\n", total);
  bool ok = write_all(fd, reinterpret_cast<const std::byte*>(text.data()), text.size());
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(tmp.c_str(), (root + "/scan-stamp").c_str()) != 0) ::unlink(tmp.c_str());
}

enum class read_outcome { hit, missing, untrusted, corrupt };

struct read_result {
  read_outcome outcome = read_outcome::missing;
  std::vector<std::byte> payload;
  std::string why;
  std::uint64_t file_size = 0;
};

// Reads and validates the entry file `path` in `dir` for (kind, k). With `repair`, a
// corrupt file is removed and a hit renews a last-use stamp older than touch_interval.
QD_FUNC read_result read_entry_file(const std::string& dir, const std::string& path, entry_kind kind, const key& k,
                                    bool repair) {
  read_result r;
  auto corrupt = [&](std::string why, const std::string& bad_path, const struct stat* seen) {
    r.outcome = read_outcome::corrupt;
    r.why = std::move(why);
    // Remove only what we judged: a process may have just renamed a good entry into place.
    struct stat now;
    if (repair &&
        (!seen || (::lstat(bad_path.c_str(), &now) == 0 && now.st_ino == seen->st_ino && now.st_dev == seen->st_dev)))
      remove_path(bad_path);
    return std::move(r);
  };
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return r;  // no entry of this kind yet
  if (!S_ISDIR(st.st_mode)) return corrupt(fmt::format("{} is not a directory", dir), dir, &st);
  if (std::string problem = trust_problem(st); !problem.empty()) {
    r.outcome = read_outcome::untrusted;
    r.why = fmt::format("directory {}: {}", dir, problem);
    return r;
  }
  // O_NONBLOCK: a FIFO planted at the path must not hang the open.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    if (e == ELOOP) return corrupt("a symbolic link, not an entry file", path, nullptr);
    if (e != ENOENT) r.why = errno_text(e);
    return r;
  }
  struct fd_closer {
    int fd;
    ~fd_closer() { ::close(fd); }
  } closer{fd};
  if (::fstat(fd, &st) != 0) {
    r.why = errno_text(errno);
    return r;
  }
  if (!S_ISREG(st.st_mode))
    return corrupt(S_ISDIR(st.st_mode) ? "a directory, not an entry file" : "not a regular file", path, &st);
  if (std::string problem = trust_problem(st); !problem.empty()) {
    r.outcome = read_outcome::untrusted;
    r.why = std::move(problem);
    return r;
  }
  auto size = static_cast<std::uint64_t>(st.st_size);
  r.file_size = size;
  if (size > max_entry_file_size()) return corrupt(fmt::format("absurd file size {}", size), path, &st);
  std::vector<std::byte> bytes(static_cast<std::size_t>(size));
  if (!read_all(fd, bytes.data(), bytes.size())) return corrupt("short read", path, &st);
  std::string why;
  std::optional<std::vector<std::byte>> payload = decode_entry(bytes, kind, k, &why);
  if (!payload) return corrupt(std::move(why), path, &st);
  if (repair && unix_now() - static_cast<std::int64_t>(st.st_mtime) >= touch_interval.count()) {
    struct timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
    ::futimens(fd, times);  // best effort: a read-only cache keeps its old stamp
  }
  r.outcome = read_outcome::hit;
  r.payload = std::move(*payload);
  return r;
}

// Why the store must not fill `root` (empty: it may): "/" never; a non-empty directory
// only when it has the tag or holds nothing but names the store makes (a cache from before
// the tag), so that a mistaken path is never filled with kernel/, module/, ...
QD_FUNC std::string foreign_root_problem(const std::string& root) {
  char resolved[PATH_MAX];
  if (::realpath(root.c_str(), resolved) != nullptr && std::string_view(resolved) == "/")
    return "it is the file system's root";
  bool tagged = false;
  std::vector<std::string> others;
  for (const dir_item& item : read_directory(root)) {
    if (item.name == cachedir_tag_name)
      tagged = true;
    else if (!is_root_name(item.name))
      others.push_back(item.name);
  }
  if (tagged || others.empty()) return {};
  std::sort(others.begin(), others.end());
  std::string names;
  for (std::size_t i = 0; i < others.size() && i < 3; ++i) names += fmt::format("{}'{}'", i ? ", " : "", others[i]);
  return fmt::format("it holds files Quadrants did not make ({}{}) and no {}", names, others.size() > 3 ? ", ..." : "",
                     cachedir_tag_name);
}

QD_FUNC void write_cachedir_tag(const std::string& root) {
  int fd = ::open((root + '/' + std::string(cachedir_tag_name)).c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;  // there already, or a read-only root: nothing to do
  (void)write_all(fd, reinterpret_cast<const std::byte*>(cachedir_tag.data()), cachedir_tag.size());
  ::close(fd);
}

// Creates and checks the root and kind directories, and decides what the store may do.
QD_FUNC void open_root(store_state& s) {
  auto degrade = [&](std::string why) {
    s.warned_degraded = true;
    qd::detail::log_fmt(log_level::warn, "offline cache: {}; caching in memory only", why);
  };
  if (s.root.empty()) return degrade("no cache directory (set QD_OFFLINE_CACHE_FILE_PATH, XDG_CACHE_HOME or HOME)");
  int err = make_directories(s.root, 0700);
  struct stat st;
  if (err != 0 && ::stat(s.root.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) err = 0;  // exists, e.g. read-only
  if (err != 0) return degrade(fmt::format("cannot create the cache directory {} ({})", s.root, errno_text(err)));
  if (::stat(s.root.c_str(), &st) != 0)
    return degrade(fmt::format("cannot use the cache directory {} ({})", s.root, errno_text(errno)));
  if (std::string problem = foreign_root_problem(s.root); !problem.empty())
    throw user_error(
        fmt::format("offline cache: {} is not a Quadrants cache directory: {}. Point "
                    "offline_cache_file_path (QD_OFFLINE_CACHE_FILE_PATH) at a directory of its own, "
                    "new or empty, or set offline_cache = false",
                    s.root, problem));
  if (std::string problem = trust_problem(st); !problem.empty()) {
    s.warned_trust = true;
    qd::detail::log_fmt(log_level::warn,
                        "offline cache: not using the cache directory {}: {}; caching in memory only "
                        "(make it yours with mode 0700, or choose another offline_cache_file_path)",
                        s.root, problem);
    return;
  }
  s.readable = true;
  bool can_write = ::access(s.root.c_str(), W_OK | X_OK) == 0;
  int write_error = errno;
  if (can_write) write_cachedir_tag(s.root);
  for (entry_kind kind : all_entry_kinds) {
    std::string dir = kind_dir(s.root, kind);
    if (can_write && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      can_write = false;
      write_error = errno;
    }
    if (::lstat(dir.c_str(), &st) != 0) continue;  // created by a save when first needed
    std::string problem = S_ISDIR(st.st_mode) ? trust_problem(st) : "it is not a directory";
    if (problem.empty()) continue;
    s.kind_trusted[static_cast<int>(kind)] = false;
    if (!s.warned_trust.exchange(true))
      qd::detail::log_fmt(log_level::warn, "offline cache: not using {}: {}; {} entries are cached in memory only", dir,
                          problem, name(kind));
  }
  if (!can_write)
    return degrade(fmt::format("the cache directory {} is not writable ({}); existing entries are still read", s.root,
                               errno_text(write_error)));
  s.writable = true;
}

// A full scan; the caller holds s.scan_mutex.
QD_FUNC void run_scan(store_state& s) {
  std::uint64_t cap = s.options.max_size;
  std::uint64_t trigger = cap ? cap : std::numeric_limits<std::uint64_t>::max();
  // Evicting to 90 % leaves room for the next saves before another scan is due.
  clean_result r = scan_and_remove(s.root, trigger, cap / 10 * 9, std::numeric_limits<std::int64_t>::min());
  write_scan_stamp(s.root, r.remaining_bytes);
  s.evictions.fetch_add(r.removed_entries, std::memory_order_relaxed);
  s.scanned_bytes = r.remaining_bytes;
  s.written_since_scan = 0;
  s.last_scan = unix_now();
  s.scan_known = true;
}

}  // namespace detail

QD_FUNC std::string default_root() {
  if (const char* p = std::getenv("QD_OFFLINE_CACHE_FILE_PATH"); p && *p) return p;
  // The XDG spec says relative values are invalid and must be ignored.
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return std::string(x) + "/quadrants/qdcache";
  std::string home;
  if (const char* h = std::getenv("HOME"); h && *h) {
    home = h;
  } else {
    struct passwd pw, *found = nullptr;
    char buffer[4096];
    if (::getpwuid_r(::getuid(), &pw, buffer, sizeof buffer, &found) == 0 && found && found->pw_dir)
      home = found->pw_dir;
  }
  if (home.empty()) return {};
  return home + "/.cache/quadrants/qdcache";
}

QD_FUNC std::string entry_path(const std::string& root, entry_kind kind, const key& k) {
  return detail::kind_dir(root, kind) + '/' + k.hex() + ".qdc";
}

QD_FUNC store::store(store_options options) : state_(std::make_unique<detail::store_state>()) {
  if (options.zstd_level < 0 || options.zstd_level > ZSTD_maxCLevel())
    throw user_error(fmt::format("cache store: zstd_level {} is outside 0..{}; use 1-3 (1 is the default)",
                                 options.zstd_level, ZSTD_maxCLevel()));
  state_->root = options.root.empty() ? default_root() : options.root;
  while (state_->root.size() > 1 && state_->root.back() == '/') state_->root.pop_back();
  state_->options = std::move(options);
  detail::open_root(*state_);
}

QD_FUNC store::store(store&&) noexcept = default;
QD_FUNC store& store::operator=(store&&) noexcept = default;
QD_FUNC store::~store() = default;

QD_FUNC const std::string& store::root() const noexcept { return state_->root; }
QD_FUNC bool store::writable() const noexcept { return state_->writable.load(std::memory_order_relaxed); }
QD_FUNC bool store::readable() const noexcept { return state_->readable.load(std::memory_order_relaxed); }

QD_FUNC std::optional<std::vector<std::byte>> store::load(entry_kind kind, const key& k) {
  detail::store_state& s = *state_;
  try {
    if (s.readable.load(std::memory_order_relaxed) && s.kind_trusted[static_cast<int>(kind)]) {
      std::string dir = detail::kind_dir(s.root, kind);
      std::string path = dir + '/' + k.hex() + ".qdc";
      detail::read_result r = detail::read_entry_file(dir, path, kind, k, true);
      s.bytes_read.fetch_add(r.file_size, std::memory_order_relaxed);
      switch (r.outcome) {
        case detail::read_outcome::hit: s.hits.fetch_add(1, std::memory_order_relaxed); return std::move(r.payload);
        case detail::read_outcome::missing:
          if (!r.why.empty()) qd::detail::log_fmt(log_level::debug, "offline cache: cannot read {}: {}", path, r.why);
          break;
        case detail::read_outcome::corrupt:
          s.rejected.fetch_add(1, std::memory_order_relaxed);
          qd::detail::log_fmt(log_level::debug, "offline cache: rejected {}: {}; removed", path, r.why);
          break;
        case detail::read_outcome::untrusted:
          s.rejected.fetch_add(1, std::memory_order_relaxed);
          qd::detail::log_fmt(s.warned_trust.exchange(true) ? log_level::debug : log_level::warn,
                              "offline cache: not loading {}: {}; it will be recompiled (fix with chmod go-w, or "
                              "remove it)",
                              path, r.why);
          break;
      }
    }
  } catch (...) {
    // Only allocation can throw here; a miss is always a correct answer.
  }
  s.misses.fetch_add(1, std::memory_order_relaxed);
  return std::nullopt;
}

QD_FUNC bool store::contains(entry_kind kind, const key& k) const noexcept {
  const detail::store_state& s = *state_;
  try {
    return s.readable.load(std::memory_order_relaxed) && s.kind_trusted[static_cast<int>(kind)] &&
           ::access(entry_path(s.root, kind, k).c_str(), F_OK) == 0;
  } catch (...) {
    return false;
  }
}

QD_FUNC bool store::save(entry_kind kind, const key& k, std::span<const std::byte> payload) {
  detail::store_state& s = *state_;
  if (!s.writable.load(std::memory_order_relaxed) || !s.kind_trusted[static_cast<int>(kind)]) return false;
  try {
    if (payload.size() > max_payload_size_of(kind)) {
      qd::detail::log_fmt(log_level::debug, "offline cache: not storing a {}-byte {} payload (maximum {})",
                          payload.size(), name(kind), max_payload_size_of(kind));
      return false;
    }
    std::vector<std::byte> bytes = encode_entry(kind, k, payload, s.options.zstd_level);
    std::string hex = k.hex();
    std::string dir = detail::kind_dir(s.root, kind);
    std::string path = dir + '/' + hex + ".qdc";
    std::string tmp = detail::temp_name(dir, hex);
    // A vanished directory (ENOENT, ENOTDIR: a concurrent clean, a root being replaced)
    // loses this save only; a full, read-only or forbidden disk stops saving for good.
    auto fail = [&](const char* step, int e) {
      ::unlink(tmp.c_str());
      if (e == ENOENT || e == ENOTDIR) {
        qd::detail::log_fmt(log_level::debug, "offline cache: not stored {} ({}: {}); later saves try again", path,
                            step, detail::errno_text(e));
        return false;
      }
      s.writable = false;
      if (!s.warned_degraded.exchange(true))
        qd::detail::log_fmt(log_level::warn,
                            "offline cache: cannot write {} ({}: {}); caching in memory only from now on", path, step,
                            detail::errno_text(e));
      return false;
    };
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    for (int attempt = 0; attempt < 3 && fd < 0 && (errno == ENOENT || errno == ENOTDIR); ++attempt) {
      // The kind directory is missing, or something else took its place.
      struct stat st;
      if (::lstat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) detail::remove_path(dir);
      detail::make_directories(dir, 0700);
      fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    }
    if (fd < 0) return fail("create", errno);
    bool written = detail::write_all(fd, bytes.data(), bytes.size());
    int e = errno;
    if (::close(fd) != 0 && written) {
      written = false;
      e = errno;
    }
    if (!written) return fail("write", e);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      e = errno;
      if (e == EISDIR || e == ENOTEMPTY || e == EEXIST) {
        detail::remove_path(path);  // a directory where the entry belongs
        if (::rename(tmp.c_str(), path.c_str()) == 0)
          e = 0;
        else
          e = errno;
      }
      if (e == ENOENT) {  // a concurrent clean removed the temporary file
        ::unlink(tmp.c_str());
        return false;
      }
      if (e != 0) return fail("rename", e);
    }
    s.stores.fetch_add(1, std::memory_order_relaxed);
    s.bytes_written.fetch_add(bytes.size(), std::memory_order_relaxed);
    maybe_scan(bytes.size());
    return true;
  } catch (...) {
    return false;
  }
}

QD_FUNC bool store::discard(entry_kind kind, const key& k, std::span<const std::byte> payload) {
  detail::store_state& s = *state_;
  if (!s.writable.load(std::memory_order_relaxed)) return false;
  // Compare the header only: the same payload checksum and size mean the same entry, so a
  // different one another process has just renamed into place is kept.
  std::string path = detail::kind_dir(s.root, kind) + '/' + k.hex() + ".qdc";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;
  std::byte header[entry_header_size];
  struct stat st {};
  bool same = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && detail::read_all(fd, header, sizeof header);
  ::close(fd);
  if (!same) return false;
  std::optional<entry_header> h = parse_entry_header(header, static_cast<std::uint64_t>(st.st_size));
  if (!h || h->kind != kind || h->k != k || h->payload_size != payload.size() ||
      h->payload_checksum != XXH3_64bits(payload.data(), payload.size()))
    return false;
  struct stat now {};
  if (::lstat(path.c_str(), &now) != 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev) return false;
  return ::unlink(path.c_str()) == 0;
}

QD_FUNC store_stats store::stats() const noexcept {
  const detail::store_state& s = *state_;
  store_stats r;
  r.hits = s.hits.load(std::memory_order_relaxed);
  r.misses = s.misses.load(std::memory_order_relaxed);
  r.stores = s.stores.load(std::memory_order_relaxed);
  r.evictions = s.evictions.load(std::memory_order_relaxed);
  r.rejected = s.rejected.load(std::memory_order_relaxed);
  r.bytes_read = s.bytes_read.load(std::memory_order_relaxed);
  r.bytes_written = s.bytes_written.load(std::memory_order_relaxed);
  return r;
}

QD_FUNC void store::enforce_size_limit() {
  if (!state_->writable.load(std::memory_order_relaxed)) return;
  std::lock_guard lock(state_->scan_mutex);
  detail::run_scan(*state_);
}

QD_FUNC void store::maybe_scan(std::uint64_t bytes_written) {
  detail::store_state& s = *state_;
  std::uint64_t cap = s.options.max_size;
  std::uint64_t written = s.written_since_scan.fetch_add(bytes_written, std::memory_order_relaxed) + bytes_written;
  std::int64_t now = detail::unix_now();
  bool due = !s.scan_known || now - s.last_scan >= scan_interval.count();
  if (due) {
    // Another process may have scanned recently: then its total stands in for ours.
    if (auto stamp = detail::read_scan_stamp(s.root);
        stamp && now - stamp->second < scan_interval.count() && stamp->second > s.last_scan) {
      s.scanned_bytes = stamp->first;
      s.written_since_scan = written = 0;
      s.last_scan = stamp->second;
      s.scan_known = true;
      due = false;
    }
  }
  if (!due && cap && (s.scanned_bytes + written > cap || written > cap / 16)) due = true;
  if (due) {
    std::unique_lock lock(s.scan_mutex, std::try_to_lock);
    if (lock.owns_lock()) detail::run_scan(s);  // else another thread is scanning
  }
}

QD_FUNC store::compile_lock& store::compile_lock::operator=(compile_lock&& other) noexcept {
  if (this != &other) {
    unlock();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

QD_FUNC store::compile_lock::~compile_lock() { unlock(); }

QD_FUNC void store::compile_lock::unlock() noexcept {
  if (fd_ < 0) return;
  ::flock(fd_, LOCK_UN);
  ::close(fd_);
  fd_ = -1;
}

QD_FUNC store::compile_lock store::lock_for_compile(const key& k, std::chrono::milliseconds timeout) {
  detail::store_state& s = *state_;
  if (!s.writable.load(std::memory_order_relaxed)) return {};
  try {
    std::string dir = s.root + "/locks";
    std::string path = dir + '/' + k.hex() + ".lock";
    auto deadline = std::chrono::steady_clock::now() + timeout;
    auto pause = std::chrono::microseconds(500);
    for (;;) {
      // O_CLOEXEC: a compiler we spawn must not inherit, and so prolong, the lock.
      int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
      if (fd < 0 && errno == ENOENT) {
        ::mkdir(dir.c_str(), 0700);
        fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
      }
      if (fd < 0) return {};
      for (;;) {
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
          // A sweep may have unlinked the file we locked; then lock the new one.
          struct stat held, current;
          if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &current) == 0 && held.st_ino == current.st_ino &&
              held.st_dev == current.st_dev)
            return compile_lock(fd);
          ::close(fd);
          break;
        }
        if (errno == EINTR) continue;
        if (errno != EWOULDBLOCK || std::chrono::steady_clock::now() >= deadline) {
          ::close(fd);
          qd::detail::log_fmt(log_level::debug, "offline cache: proceeding without the compile lock {}", path);
          return {};
        }
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(20000));
      }
    }
  } catch (...) {
    return {};
  }
}

QD_FUNC std::vector<entry_info> list_entries(const std::string& root) {
  std::vector<entry_info> out;
  for (detail::found_entry& e : detail::walk_entries(root, false, nullptr)) out.push_back(std::move(e.info));
  return out;
}

QD_FUNC std::vector<layout_problem> check_layout(const std::string& root, bool fix) {
  std::vector<layout_problem> out;
  struct stat st;
  if (::stat(root.c_str(), &st) != 0) return out;  // no cache yet
  if (!S_ISDIR(st.st_mode)) return {{root, "not a directory"}};
  if (std::string problem = detail::foreign_root_problem(root); !problem.empty())
    out.push_back({root, "not a Quadrants cache directory: " + problem});
  // Our own directory writable by others: remove that permission. Another user's: report.
  auto check_dir = [&](const std::string& path, const struct stat& dst) {
    std::string problem = detail::trust_problem(dst);
    if (problem.empty()) return;
    bool fixed = fix && dst.st_uid == ::geteuid() && ::chmod(path.c_str(), dst.st_mode & 0700) == 0;
    out.push_back({path, "untrusted: " + problem, fixed});
  };
  check_dir(root, st);
  for (entry_kind kind : all_entry_kinds) {
    std::string dir = detail::kind_dir(root, kind);
    if (::lstat(dir.c_str(), &st) != 0) continue;  // made by the first save
    if (S_ISDIR(st.st_mode)) {
      check_dir(dir, st);
      continue;
    }
    // The store's saves replace it too; verify reports it rather than let it pass silently.
    bool fixed = fix && detail::remove_path(dir);
    out.push_back({dir,
                   fmt::format("{} where the {} directory belongs", S_ISLNK(st.st_mode) ? "a symbolic link" : "a file",
                               name(kind)),
                   fixed});
  }
  return out;
}

QD_FUNC bool verify_entry(const std::string& path, std::string* why) {
  auto fail = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  try {
    // <root>/<kind>/<32 hex>.qdc
    std::size_t name_at = path.rfind('/');
    if (name_at == std::string::npos || name_at == 0) return fail("not an entry path (<root>/<kind>/<32 hex>.qdc)");
    std::size_t kind_at = path.rfind('/', name_at - 1);
    kind_at = kind_at == std::string::npos ? 0 : kind_at + 1;
    std::string_view p = path;
    std::optional<entry_kind> kind = entry_kind_from_name(p.substr(kind_at, name_at - kind_at));
    std::optional<key> k = detail::entry_name_key(p.substr(name_at + 1));
    if (!kind || !k) return fail("not an entry path (<root>/<kind>/<32 hex>.qdc)");
    detail::read_result r = detail::read_entry_file(path.substr(0, name_at), path, *kind, *k, false);
    switch (r.outcome) {
      case detail::read_outcome::hit: return true;
      case detail::read_outcome::missing: return fail(r.why.empty() ? "no such file" : r.why);
      case detail::read_outcome::untrusted: return fail("untrusted: " + r.why);
      case detail::read_outcome::corrupt: return fail(r.why);
    }
    return fail("unknown outcome");
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}

QD_FUNC clean_result evict_to_size(const std::string& root, std::uint64_t target_bytes) {
  return detail::scan_and_remove(root, target_bytes, target_bytes, std::numeric_limits<std::int64_t>::min());
}

QD_FUNC clean_result remove_unused_since(const std::string& root, std::int64_t unix_seconds) {
  auto none = std::numeric_limits<std::uint64_t>::max();
  return detail::scan_and_remove(root, none, none, unix_seconds);
}

}  // namespace qd::inline v0::cache
