// The first cache tier: the modules this program has loaded, by key, so that a module or
// offload is loaded once however many kernels use it. Dropped with the program.
#pragma once

#include <memory>

#include "quadrants/base/api.hpp"
#include "quadrants/cache/tier.hpp"

namespace qd::inline v0::cache {

// Keeps loaded modules only (no payloads); thread-safe. Its stats count hits.
QD_FUNC std::unique_ptr<tier> make_memory_tier();

}  // namespace qd::inline v0::cache

#ifdef QD_HEADER_ONLY
#include "quadrants/cache/memory_tier-inl.hpp"
#endif
