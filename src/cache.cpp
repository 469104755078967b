// Compiled mode of the cache layer: its implementation headers, built once.
#include "quadrants/cache/entry-inl.hpp"
#include "quadrants/cache/key-inl.hpp"
#include "quadrants/cache/store-inl.hpp"
#include "quadrants/cache/records-inl.hpp"
#include "quadrants/cache/hmac-inl.hpp"
#include "quadrants/cache/remote-inl.hpp"
