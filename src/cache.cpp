// Compiled mode of the cache layer: its implementation headers, built once.
#include "quadrants/detail/implementation_cache.hpp"
