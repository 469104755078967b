// Process-wide cache statistics of the running program: disk hits and misses,
// stores, evictions, rejected entries, bytes, in-memory reuse and compiles.
#pragma once

#include <cstdint>

#include "quadrants/base/api.hpp"

namespace qd::inline v0 {

struct cache_statistics {
  std::uint64_t hits = 0;       // entries loaded from the offline cache
  std::uint64_t misses = 0;     // lookups that found no valid entry
  std::uint64_t stores = 0;     // entries written
  std::uint64_t evictions = 0;  // entries removed to stay under offline_cache_max_size
  std::uint64_t rejected = 0;   // corrupt or untrusted entries refused (counted in misses)
  std::uint64_t bytes_read = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t memory_hits = 0;  // modules reused from this process's memory
  std::uint64_t compiles = 0;     // compiler invocations
  bool disk_writable = false;     // false with offline_cache off or a degraded cache
  // The remote tier (remote_cache; docs/cache.md), all 0 without it.
  std::uint64_t remote_hits = 0;      // entries fetched and validated (modules included)
  std::uint64_t remote_misses = 0;    // keys the server did not have (or had refused entries for)
  std::uint64_t remote_stores = 0;    // entries written to the server
  std::uint64_t remote_rejected = 0;  // refused: bad HMAC, or failed validation
  std::uint64_t remote_errors = 0;    // faults: unreachable, timed out, closed, full, garbage
  std::uint64_t remote_bytes_read = 0;
  std::uint64_t remote_bytes_written = 0;
  std::uint64_t remote_round_trips = 0;  // pipelines sent to the server
  std::uint64_t remote_lock_waits = 0;   // entries received after waiting for another process's compile
};

// Since qd::init; a qd::user_error before it.
QD_FUNC cache_statistics offline_cache_statistics();

}  // namespace qd::inline v0

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/statistics-inl.hpp"
#endif
