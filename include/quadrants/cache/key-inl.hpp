// Implementation of cache/key.hpp.
#pragma once

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <new>

#include "quadrants/cache/key.hpp"

namespace qd::inline v0::cache {

namespace detail {
inline constexpr char hex_digits[] = "0123456789abcdef";

QD_FUNC XXH3_state_t* xxh3_state(unsigned char* storage) {
  return std::launder(reinterpret_cast<XXH3_state_t*>(storage));
}

QD_FUNC void put_le64(unsigned char* out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}
}  // namespace detail

QD_FUNC std::string key::hex() const {
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[static_cast<std::size_t>(i)] = detail::hex_digits[(hi >> (60 - 4 * i)) & 0xf];
    out[static_cast<std::size_t>(16 + i)] = detail::hex_digits[(lo >> (60 - 4 * i)) & 0xf];
  }
  return out;
}

QD_FUNC std::optional<key> key::from_hex(std::string_view text) {
  if (text.size() != 32) return std::nullopt;
  std::uint64_t halves[2] = {0, 0};
  for (std::size_t i = 0; i < 32; ++i) {
    char c = text[i];
    std::uint64_t digit;
    if (c >= '0' && c <= '9') {
      digit = static_cast<std::uint64_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<std::uint64_t>(c - 'a' + 10);
    } else {
      return std::nullopt;
    }
    halves[i / 16] = (halves[i / 16] << 4) | digit;
  }
  return key{halves[1], halves[0]};
}

static_assert(sizeof(XXH3_state_t) <= 576 && alignof(XXH3_state_t) <= 64,
              "key_builder::state_ is too small for this xxhash's XXH3_state_t");

QD_FUNC key_builder::key_builder() {
  // The default secret is static inside xxhash, so copying the bytes of a builder is
  // a valid copy of its state.
  XXH3_128bits_reset(::new (static_cast<void*>(state_)) XXH3_state_t);
}

// Each field is a one-byte type tag, then an 8-byte little-endian length or value.
QD_FUNC key_builder& key_builder::add(std::string_view field) {
  unsigned char prefix[9];
  prefix[0] = 's';
  detail::put_le64(prefix + 1, field.size());
  XXH3_128bits_update(detail::xxh3_state(state_), prefix, sizeof prefix);
  XXH3_128bits_update(detail::xxh3_state(state_), field.data(), field.size());
  return *this;
}

QD_FUNC key_builder& key_builder::add(std::uint64_t value) {
  unsigned char field[9];
  field[0] = 'u';
  detail::put_le64(field + 1, value);
  XXH3_128bits_update(detail::xxh3_state(state_), field, sizeof field);
  return *this;
}

QD_FUNC key key_builder::finish() const {
  XXH128_hash_t h = XXH3_128bits_digest(std::launder(reinterpret_cast<const XXH3_state_t*>(state_)));
  return key{h.low64, h.high64};
}

}  // namespace qd::inline v0::cache
