// The remote cache (cache/remote.hpp, a Redis server) as a cache tier: a kernel's entries
// fetched in one round trip, its misses locked so that one machine of the team builds them.
#pragma once

#include <memory>

#include "quadrants/base/api.hpp"
#include "quadrants/cache/remote.hpp"
#include "quadrants/cache/tier.hpp"

namespace qd::inline v0::cache {

// Its build locks are taken by prefetch (one round trip finds the entries and claims the
// missing ones) and released by the put of the entry.
QD_FUNC std::unique_ptr<tier> make_remote_tier(std::shared_ptr<remote> server);

}  // namespace qd::inline v0::cache

#ifdef QD_HEADER_ONLY
#include "quadrants/cache/remote_tier-inl.hpp"
#endif
