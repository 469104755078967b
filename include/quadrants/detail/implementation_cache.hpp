// Every implementation (-inl) file of the cache layer: the one list that
// src/cache.cpp and <quadrants/implementation.hpp> both compile. Internal.
#pragma once

#include "quadrants/cache/entry-inl.hpp"
#include "quadrants/cache/key-inl.hpp"
#include "quadrants/cache/store-inl.hpp"
#include "quadrants/cache/records-inl.hpp"
#include "quadrants/cache/hmac-inl.hpp"
#include "quadrants/cache/remote-inl.hpp"
#include "quadrants/cache/key_recipe-inl.hpp"
#include "quadrants/cache/tier_list-inl.hpp"
#include "quadrants/cache/memory_tier-inl.hpp"
#include "quadrants/cache/disk_tier-inl.hpp"
#include "quadrants/cache/remote_tier-inl.hpp"
#include "quadrants/cache/code_cache-inl.hpp"
