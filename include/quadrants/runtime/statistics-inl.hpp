// Implementation of runtime/statistics.hpp.
#pragma once

#include "quadrants/cache/code_cache.hpp"
#include "quadrants/runtime/pipeline/program.hpp"
#include "quadrants/runtime/statistics.hpp"

namespace qd::inline v0 {

QD_FUNC cache_statistics offline_cache_statistics() {
  detail::program_use use("qd::offline_cache_statistics");
  detail::program& p = *use;
  const cache::tier_list& tiers = p.code().tiers();
  cache_statistics s;
  if (const cache::tier* memory = tiers.find("memory")) s.memory_hits = memory->stats().hits;
  if (const cache::tier* disk = tiers.find("disk")) {
    cache::tier_stats d = disk->stats();
    s.hits = d.hits;
    s.misses = d.misses;
    s.stores = d.stores;
    s.evictions = d.evictions;
    s.rejected = d.rejected;
    s.bytes_read = d.bytes_read;
    s.bytes_written = d.bytes_written;
    s.disk_writable = d.writable;
  }
  if (const cache::tier* remote = tiers.find("remote")) {
    cache::tier_stats t = remote->stats();
    s.remote_hits = t.hits;
    s.remote_misses = t.misses;
    s.remote_stores = t.stores;
    s.remote_rejected = t.rejected;
    s.remote_errors = t.errors;
    s.remote_bytes_read = t.bytes_read;
    s.remote_bytes_written = t.bytes_written;
    s.remote_round_trips = t.round_trips;
    s.remote_lock_waits = t.lock_waits;
  }
  s.compiles = p.code().compiles();
  return s;
}

}  // namespace qd::inline v0
