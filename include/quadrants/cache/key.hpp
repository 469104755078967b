// Cache keys: 128-bit content hashes (XXH3-128) of everything that affects generated code.
// key_builder hashes length-prefixed fields, so field boundaries are part of the key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "quadrants/base/api.hpp"

namespace qd::inline v0::cache {

// Bump when the entry layout or the meaning of a key field changes: old entries then
// stop matching (their keys differ) and are evicted as least recently used.
inline constexpr std::uint32_t format_version = 2;

struct key {
  std::uint64_t lo = 0, hi = 0;

  friend bool operator==(const key&, const key&) = default;

  // 32 lowercase hex digits, high half first; also the entry's file name.
  QD_FUNC std::string hex() const;
  // Inverse of hex(); accepts exactly 32 lowercase hex digits, so every key has one spelling.
  QD_FUNC static std::optional<key> from_hex(std::string_view text);
};

struct key_hash {
  std::size_t operator()(const key& k) const noexcept {
    return static_cast<std::size_t>(k.lo ^ (k.hi * 0x9e3779b97f4a7c15ull));
  }
};

// Streaming XXH3-128 over typed, length-prefixed fields: add("ab").add("c") differs from
// add("a").add("bc"), and add(std::uint64_t{1}) differs from an 8-byte string field.
class key_builder {
 public:
  QD_FUNC key_builder();
  QD_FUNC key_builder& add(std::string_view field);
  QD_FUNC key_builder& add(std::uint64_t value);
  // The key of the fields added so far; the builder can keep accepting fields.
  QD_FUNC key finish() const;

 private:
  // An XXH3_state_t lives here (checked in key-inl.hpp), so xxhash.h stays out of
  // this header and building a key allocates nothing.
  alignas(64) unsigned char state_[576];
};

}  // namespace qd::inline v0::cache

#ifdef QD_HEADER_ONLY
#include "quadrants/cache/key-inl.hpp"
#endif
