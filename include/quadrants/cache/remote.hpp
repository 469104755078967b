// The remote cache tier: entries shared through a Redis server by every machine of a team,
// authenticated with an HMAC, fetched a kernel at a time, compiled once across machines.
#pragma once

#include <chrono>
#include <cstddef>
#include <iterator>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/cache/entry.hpp"
#include "quadrants/cache/key.hpp"

namespace qd::inline v0::cache {

// redis://[[user]:password@]host[:port][/db] or unix:///path/to.sock[?db=N]
struct remote_address {
  bool unix_socket = false;
  std::string host;  // tcp only; an IPv6 address without its brackets
  int port = 6379;
  std::string path;  // unix only
  int db = 0;
  std::string user, password;
  // The URL without the password, for messages.
  QD_FUNC std::string text() const;
};

// Throws qd::user_error naming what is wrong and a correct example.
QD_FUNC remote_address parse_remote_url(std::string_view url);

// Whether this build has the tier (hiredis and libsodium, QD_WITH_REMOTE_CACHE).
QD_FUNC bool remote_supported() noexcept;

struct remote_options {
  std::string url;
  std::string secret;            // the HMAC key; empty only with `unauthenticated`
  bool unauthenticated = false;  // the explicit opt-out: entries carry no tag and are not checked
  bool read_only = false;        // never writes: no entries, no locks, no counters
  std::chrono::milliseconds timeout{100};
  // How long a compile lock lives unless its holder stores the entry first, and so the
  // longest another process waits for it (a holder that dies frees it at expiry).
  std::chrono::milliseconds lock_ttl{30000};
  // After a fault the tier is skipped for this long, doubling per fault up to 5 minutes.
  std::chrono::milliseconds retry_after{5000};
  int zstd_level = 1;
};

// What remote's constructor checks: a qd::user_error for a malformed URL, a missing
// secret without `unauthenticated`, or a timeout under 1 ms.
QD_FUNC void check_remote_options(const remote_options& options);

// Counters since the remote was constructed.
struct remote_stats {
  std::uint64_t hits = 0;      // entries fetched and validated
  std::uint64_t misses = 0;    // keys asked for and not found (or refused)
  std::uint64_t stores = 0;    // entries written
  std::uint64_t rejected = 0;  // entries refused: bad tag, another secret's, or failed validation
  std::uint64_t errors = 0;    // faults: unreachable, timed out, closed, full, garbage
  std::uint64_t bytes_read = 0, bytes_written = 0;
  std::uint64_t round_trips = 0;  // pipelines sent
  std::uint64_t locks_taken = 0;  // compile locks this process took
  std::uint64_t waited = 0;       // entries received after waiting for another process's lock
};

// One fetched entry: the validated payload.
struct remote_entry {
  entry_kind kind = entry_kind::module;
  key k;
  std::vector<std::byte> payload;
};

// What a fetch learnt about each key asked for, in order.
enum class remote_status : std::uint8_t {
  hit,               // in `entries`
  absent,            // not on the server
  claimed,           // not on the server; this process now holds its compile lock
  locked_elsewhere,  // not on the server; another process is compiling it
  unavailable,       // the tier is down or backing off: nothing is known
};

struct remote_fetch {
  std::vector<remote_status> status;  // one per key asked for
  std::vector<remote_entry> entries;  // hits, plus the modules that fetched records name
};

namespace detail {
struct remote_state;
}

class remote {
 public:
  // Checks the options (a qd::user_error for a malformed URL, a missing secret, a timeout
  // under 1 ms) and connects lazily, at the first use. In a build without the tier it
  // logs one warning and stays unavailable.
  QD_FUNC explicit remote(remote_options options);
  QD_FUNC ~remote();  // releases the compile locks still held and adds this process's counters
  remote(const remote&) = delete;
  remote& operator=(const remote&) = delete;

  QD_FUNC const remote_address& address() const noexcept;
  QD_FUNC bool read_only() const noexcept;
  // 16 hex digits derived from the secret ("unauthenticated" without one): entries of
  // different secrets live apart on one server, and never overwrite each other.
  QD_FUNC const std::string& namespace_id() const noexcept;
  // The Redis key of an entry: qd:<namespace>:<kind>:<32 hex>.
  QD_FUNC std::string redis_key(entry_kind kind, const key& k) const;

  // One round trip: the entries of `keys`, and the modules that records among them name.
  // With `claim` (and not read-only), takes the compile lock of each key that is absent
  // and unlocked. Never throws; a fault makes every status `unavailable`.
  QD_FUNC remote_fetch fetch(entry_kind kind, std::span<const key> keys, bool claim);

  // For the store: fetch() of the keys that are absent locally, then, for those another
  // process is compiling, polling until they arrive, their locks vanish, or lock_ttl
  // passes. Entries received wait in a buffer for take(); keys found absent are
  // remembered so that take() answers them without asking again. Returns the number of
  // entries received (modules included).
  QD_FUNC std::size_t prefetch(entry_kind kind, std::span<const key> keys);
  // A buffered entry, else nullopt when prefetch() found it absent, else a fetch of it alone.
  QD_FUNC std::optional<std::vector<std::byte>> take(entry_kind kind, const key& k);

  // Writes an entry (and releases this process's lock on it). False when read-only,
  // backing off, full or failing. Never throws.
  QD_FUNC bool put(entry_kind kind, const key& k, std::span<const std::byte> payload);
  // Which of `keys` the server holds (one round trip); nullopt when unavailable.
  QD_FUNC std::optional<std::vector<bool>> contains(entry_kind kind, std::span<const key> keys);

  // The counters every process has added to the server (qd:<namespace>:stats), and the
  // server's own figures, for qd-cache stats; nullopt when unreachable (see last_error).
  struct server_report {
    std::vector<std::pair<std::string, std::string>> counters;  // field, value
    std::string version;
    std::uint64_t used_memory = 0, maxmemory = 0;
    std::string maxmemory_policy;
    std::uint64_t entries[std::size(all_entry_kinds) + 1] = {};  // by kind byte (1..), in this namespace
    std::uint64_t bytes[std::size(all_entry_kinds) + 1] = {};
  };
  QD_FUNC std::optional<server_report> report();
  // Every entry of this namespace on the server (a SCAN), for qd-cache pull and stats.
  struct listed_entry {
    entry_kind kind = entry_kind::module;
    key k;
    std::uint64_t size = 0;  // bytes of the value
  };
  QD_FUNC std::optional<std::vector<listed_entry>> list();
  QD_FUNC std::string last_error() const;

  QD_FUNC remote_stats stats() const noexcept;
  // False while the tier is backing off after a fault (or was never available).
  QD_FUNC bool available() const noexcept;

 private:
  std::unique_ptr<detail::remote_state> state_;
};

}  // namespace qd::inline v0::cache

#ifdef QD_HEADER_ONLY
#include "quadrants/cache/remote-inl.hpp"
#endif
