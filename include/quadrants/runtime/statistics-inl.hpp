// Implementation of runtime/statistics.hpp.
#pragma once

#include "quadrants/cache/remote.hpp"
#include "quadrants/cache/store.hpp"
#include "quadrants/runtime/program.hpp"
#include "quadrants/runtime/statistics.hpp"

namespace qd {

QD_FUNC cache_statistics offline_cache_statistics() {
  detail::program_use use("qd::offline_cache_statistics");
  detail::program& p = *use;
  cache_statistics s;
  if (cache::store* st = p.store()) {
    cache::store_stats d = st->stats();
    s.hits = d.hits;
    s.misses = d.misses;
    s.stores = d.stores;
    s.evictions = d.evictions;
    s.rejected = d.rejected;
    s.bytes_read = d.bytes_read;
    s.bytes_written = d.bytes_written;
    s.disk_writable = st->writable();
    if (const cache::remote* r = st->remote_tier()) {
      cache::remote_stats t = r->stats();
      s.remote_hits = t.hits;
      s.remote_misses = t.misses;
      s.remote_stores = t.stores;
      s.remote_rejected = t.rejected;
      s.remote_errors = t.errors;
      s.remote_bytes_read = t.bytes_read;
      s.remote_bytes_written = t.bytes_written;
      s.remote_round_trips = t.round_trips;
      s.remote_lock_waits = t.waited;
    }
  }
  s.memory_hits = p.memory_hits.load(std::memory_order_relaxed);
  s.compiles = p.compiles.load(std::memory_order_relaxed);
  return s;
}

}  // namespace qd
