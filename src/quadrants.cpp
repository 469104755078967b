// Compiled mode of the library: every implementation header (-inl) but the cache
// layer's, built once (src/cache.cpp has those, so the two build in parallel).
#include "quadrants/detail/implementation_core.hpp"
