// One level of the cache (this process's memory, the disk, a shared server): the small
// interface every tier implements, so that the lookup protocol is written once (tier_list).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "quadrants/backend/loaded_module.hpp"
#include "quadrants/base/api.hpp"
#include "quadrants/cache/entry.hpp"
#include "quadrants/cache/key.hpp"

namespace qd::inline v0::cache {

// What a tier holds for a key: the payload's bytes, or, in a tier that keeps code loaded
// (memory), the module itself (then no payload: it was validated when it was put).
struct tier_item {
  std::vector<std::byte> payload;
  std::shared_ptr<backend::loaded_module> module;
};

// Counters since the tier was made, for qd::cache_statistics and logs; a tier fills
// what it knows and leaves the rest 0.
struct tier_stats {
  std::uint64_t hits = 0, misses = 0, stores = 0, evictions = 0, rejected = 0, errors = 0;
  std::uint64_t bytes_read = 0, bytes_written = 0;
  std::uint64_t round_trips = 0, lock_waits = 0;
  bool writable = false;
};

// Held while this process builds an entry, so that other processes wait and then find
// it instead of building it too. Released when destroyed (or when its holder dies).
class build_lock {
 public:
  virtual ~build_lock() = default;
};

class tier {
 public:
  virtual ~tier() = default;
  // "memory", "disk", "remote": for messages and qd::cache_statistics.
  virtual std::string_view name() const = 0;
  // False while the tier cannot answer (down, backing off): the list skips it.
  virtual bool available() const { return true; }

  // The entry of `k`, or nullopt (absent, unreadable, refused: a miss, whatever the cause).
  // A payload is validated as bytes (checksums, signatures); what it means is checked by
  // the caller, who discards it when it is of no use. Never throws.
  virtual std::optional<tier_item> get(entry_kind kind, const key& k) = 0;
  // Stores `payload` (and `module`, in a tier that keeps code loaded); false when it did
  // not. The list passes an empty payload (code with nothing worth storing: an
  // interpreter's) only to tiers that keep modules. Never throws.
  virtual bool put(entry_kind kind, const key& k, std::span<const std::byte> payload,
                   const std::shared_ptr<backend::loaded_module>& module) = 0;
  // The caller could not use what get() returned (stale, foreign, does not load): remove it
  // if the tier still holds that payload. Never throws.
  virtual void discard(entry_kind kind, const key& k, std::span<const std::byte> payload) {
    (void)kind, (void)k, (void)payload;
  }

  // True for a tier that keeps loaded modules (this process's memory). Such a tier keeps
  // the bytes of a record put without a module (a variant record) too.
  virtual bool keeps_modules() const { return false; }

  // Whether the tier holds `k`, known cheaply (a map lookup, an access()): the list tells a
  // prefetching tier below only the keys no tier above holds. False when unknown.
  virtual bool holds(entry_kind kind, const key& k) {
    (void)kind, (void)k;
    return false;
  }
  // True for a tier that answers a batch of keys faster than the keys one at a time (a
  // network round trip): the list calls prefetch() before a kernel's gets.
  virtual bool prefetches() const { return false; }
  // Fetches `keys` (and what they name) ahead of the gets, and may take their build locks.
  virtual void prefetch(entry_kind kind, std::span<const key> keys) { (void)kind, (void)keys; }

  // Waits up to `timeout` for the right to build `k`; null when the tier has no locks, or
  // gave up waiting (the lock only saves duplicate work).
  virtual std::unique_ptr<build_lock> lock_for_build(entry_kind kind, const key& k, std::chrono::milliseconds timeout) {
    (void)kind, (void)k, (void)timeout;
    return nullptr;
  }

  virtual tier_stats stats() const { return {}; }
};

}  // namespace qd::inline v0::cache
