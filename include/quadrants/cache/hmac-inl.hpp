// Implementation of cache/hmac.hpp.
#pragma once

#include <cstring>

#include "quadrants/base/error.hpp"
#include "quadrants/cache/hmac.hpp"

#if defined(QD_WITH_REMOTE_CACHE)
#include <sodium.h>
#endif

namespace qd::inline v0::cache {

QD_FUNC bool hmac_supported() noexcept {
#if defined(QD_WITH_REMOTE_CACHE)
  return true;
#else
  return false;
#endif
}

QD_FUNC hmac_tag hmac(std::string_view secret, std::initializer_list<std::span<const std::byte>> parts) {
  hmac_tag tag{};
#if defined(QD_WITH_REMOTE_CACHE)
  if (sodium_init() < 0) throw internal_error("libsodium failed to initialize");
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char*>(secret.data()), secret.size());
  for (std::span<const std::byte> part : parts)
    crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(part.data()), part.size());
  crypto_auth_hmacsha256_final(&state, reinterpret_cast<unsigned char*>(tag.data()));
  sodium_memzero(&state, sizeof state);
#else
  (void)secret;
  (void)parts;
  throw user_error("cache::hmac: this build of Quadrants has no libsodium (build with QD_WITH_REMOTE_CACHE)");
#endif
  return tag;
}

QD_FUNC bool hmac_equal(const hmac_tag& a, const hmac_tag& b) noexcept {
#if defined(QD_WITH_REMOTE_CACHE)
  return crypto_verify_32(reinterpret_cast<const unsigned char*>(a.data()),
                          reinterpret_cast<const unsigned char*>(b.data())) == 0;
#else
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff = static_cast<unsigned char>(diff | std::to_integer<unsigned char>(a[i] ^ b[i]));
  return diff == 0;
#endif
}

}  // namespace qd::inline v0::cache
