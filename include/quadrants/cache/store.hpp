// The on-disk cache: one validated, atomically published file per entry under a root directory.
// Safe for many processes and threads at once without locks; every I/O failure is a miss.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/cache/entry.hpp"
#include "quadrants/cache/key.hpp"

namespace qd::inline v0::cache {

// Layout under the root (flat per kind: a fan-out level would cost a directory creation on
// most first saves into a cold cache, and directories of 10^5 files are fine today):
//   <kind>/<32 hex>.qdc                   entries (kind: module, kernel, offload)
//   <kind>/.<32 hex>.<pid>.<n>.tmp        writes in flight (renamed onto the entry)
//   locks/<32 hex>.lock                   empty files for lock_for_compile's flock
//   scan-stamp                            total size found by the last full scan

// $QD_OFFLINE_CACHE_FILE_PATH, else $XDG_CACHE_HOME/quadrants/qdcache, else
// ~/.cache/quadrants/qdcache (empty when no home directory can be found).
QD_FUNC std::string default_root();

// <root>/<kind>/<32 hex>.qdc
QD_FUNC std::string entry_path(const std::string& root, entry_kind kind, const key& k);

// An entry's modification time is its last use. A hit rewrites it only when it is older
// than this, so a hot entry costs one metadata write per interval, not one per hit.
inline constexpr std::chrono::seconds touch_interval{3600};
// Temporary files older than this belong to crashed writers and are removed by scans.
inline constexpr std::chrono::seconds stale_temp_age{600};
// Saves trigger a full scan (sweep and eviction) when the last one, by any process, is
// older than this, when the estimated size passes the cap, or after this store wrote
// max_size / 16 bytes since its last scan.
inline constexpr std::chrono::seconds scan_interval{600};

struct store_options {
  std::string root;                                 // empty: default_root()
  std::uint64_t max_size = std::uint64_t{1} << 30;  // bytes of entry files (1 GiB); 0 = no limit
  // 1 by measurement (docs/cache.md): against 3, hits 10-20 % faster and encoding
  // 0.04-0.14 ms faster, for files ~5 % larger. 1-3 is the useful range; 0 stores raw.
  int zstd_level = 1;
};

// Counters since the store was constructed. Every load is a hit or a miss; `rejected`
// counts the misses caused by a corrupt or untrusted file. Bytes are entry file sizes.
struct store_stats {
  std::uint64_t hits = 0, misses = 0, stores = 0, evictions = 0, rejected = 0;
  std::uint64_t bytes_read = 0, bytes_written = 0;
};

namespace detail {
struct store_state;
}

class store {
 public:
  // Creates the root (0700, with a CACHEDIR.TAG) and the kind directories. Never throws
  // for I/O: a root that cannot be created, is not writable, or is not trusted (owned by
  // another user, writable by group or others) gives one warning; see readable() and
  // writable(). Throws qd::user_error for a zstd_level outside 0..22, and for a root that
  // is not a cache directory: "/", or a non-empty directory without CACHEDIR.TAG that
  // holds names the store does not make (it would be filled with kernel/, module/, ...).
  QD_FUNC explicit store(store_options options);
  QD_FUNC store(store&&) noexcept;
  QD_FUNC store& operator=(store&&) noexcept;
  QD_FUNC ~store();

  QD_FUNC const std::string& root() const noexcept;
  // False once the store is degraded: saves return false and the caller keeps results in
  // memory. A read-only root stays readable, so a prebuilt cache can still be used.
  QD_FUNC bool writable() const noexcept;
  QD_FUNC bool readable() const noexcept;

  // The validated payload, or nullopt. A corrupt entry is removed; an untrusted one is
  // refused (one warning per store) and left to be replaced by the next save. Never throws.
  QD_FUNC std::optional<std::vector<std::byte>> load(entry_kind kind, const key& k);
  // Publishes atomically (temporary file in the entry's directory, then rename), mode 0600.
  // False when the store is degraded or the write failed; a failed write degrades the
  // store with one warning. Never throws.
  QD_FUNC bool save(entry_kind kind, const key& k, std::span<const std::byte> payload);
  // The caller could not use `payload`, which load just returned (a module that does not
  // load): the entry is removed if it still holds that payload, so that looking again
  // before recompiling is a plain miss instead of a second decode. Never throws.
  QD_FUNC bool discard(entry_kind kind, const key& k, std::span<const std::byte> payload);

  QD_FUNC store_stats stats() const noexcept;

  // A full scan now: removes stale temporary files and unheld lock files, and when the
  // entries exceed max_size evicts the least recently used down to 90 % of it.
  QD_FUNC void enforce_size_limit();

  // An advisory per-key flock() that lets one process compile while others wait, then
  // load. The kernel releases it when the holder exits or dies; the lock file stays.
  class compile_lock {
   public:
    compile_lock() noexcept = default;
    compile_lock(compile_lock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    QD_FUNC compile_lock& operator=(compile_lock&& other) noexcept;
    QD_FUNC ~compile_lock();
    // True when this process holds the lock; false after a timeout or on a degraded store,
    // in which case the caller proceeds anyway (the lock only saves duplicate work).
    bool owns_lock() const noexcept { return fd_ >= 0; }
    explicit operator bool() const noexcept { return owns_lock(); }
    QD_FUNC void unlock() noexcept;

   private:
    friend class store;
    explicit compile_lock(int fd) noexcept : fd_(fd) {}
    int fd_ = -1;
  };
  // Waits up to `timeout` for the lock of `k`. Typical use: take it, load() again (the
  // holder may just have saved it), compile and save on a miss, then let it go.
  QD_FUNC compile_lock lock_for_compile(const key& k, std::chrono::milliseconds timeout);

  // Whether an entry file for `k` exists (an access(): not read, not validated): how the
  // tier list learns what a tier below need not fetch. False when the store cannot read.
  QD_FUNC bool contains(entry_kind kind, const key& k) const noexcept;

 private:
  QD_FUNC void maybe_scan(std::uint64_t bytes_written);
  std::unique_ptr<detail::store_state> state_;
};

// What is on disk, for qd-cache and tests. Lists every name at an entry's path, whatever
// its type, so that verification also finds directories or links where a file belongs.
struct entry_info {
  std::string path;
  entry_kind kind = entry_kind::module;
  key k;
  std::uint64_t file_size = 0;
  std::int64_t last_use = 0;  // unix seconds (the file's modification time)
};
QD_FUNC std::vector<entry_info> list_entries(const std::string& root);

// Everything load() checks for the entry at `path` (trust, type, header, kind and key
// from the path, sizes, checksum); the reason in `why` when it fails.
QD_FUNC bool verify_entry(const std::string& path, std::string* why = nullptr);

// What a store refuses about the root and its kind directories (the trust rules above; a
// root that is "/" or a directory of other files; a file where a kind directory belongs),
// one problem per path. With `fix`, what this user can repair is repaired and marked
// fixed: write permission for group and others removed from our own directories, and
// whatever stands where a kind directory belongs removed.
struct layout_problem {
  std::string path;
  std::string problem;
  bool fixed = false;
};
QD_FUNC std::vector<layout_problem> check_layout(const std::string& root, bool fix);

struct clean_result {
  std::uint64_t removed_entries = 0, removed_bytes = 0;
  std::uint64_t remaining_entries = 0, remaining_bytes = 0;
  std::uint64_t removed_temporaries = 0;
};
// Removes least recently used entries until at most `target_bytes` remain (0 removes
// every entry), plus stale temporary files and unheld lock files.
QD_FUNC clean_result evict_to_size(const std::string& root, std::uint64_t target_bytes);
// Removes entries last used before `unix_seconds`, plus stale temporary and lock files.
QD_FUNC clean_result remove_unused_since(const std::string& root, std::int64_t unix_seconds);

}  // namespace qd::inline v0::cache

#ifdef QD_HEADER_ONLY
#include "quadrants/cache/store-inl.hpp"
#endif
