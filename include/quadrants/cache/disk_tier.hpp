// The disk cache (cache/store.hpp) as a cache tier: entries and their compile locks
// shared by the processes of one machine.
#pragma once

#include <memory>

#include "quadrants/base/api.hpp"
#include "quadrants/cache/store.hpp"
#include "quadrants/cache/tier.hpp"

namespace qd::inline v0::cache {

// Reads and writes `disk`; its build locks are the store's per-key flock.
QD_FUNC std::unique_ptr<tier> make_disk_tier(std::shared_ptr<store> disk);

}  // namespace qd::inline v0::cache

#ifdef QD_HEADER_ONLY
#include "quadrants/cache/disk_tier-inl.hpp"
#endif
