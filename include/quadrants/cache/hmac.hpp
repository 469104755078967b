// HMAC-SHA-256 (libsodium) for the remote cache tier: an entry carries a tag over its key
// and bytes under the team's secret, so a shared server cannot feed a process foreign code.
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <string_view>

#include "quadrants/base/api.hpp"

namespace qd::inline v0::cache {

inline constexpr std::size_t hmac_size = 32;
using hmac_tag = std::array<std::byte, hmac_size>;

// Whether this build has libsodium (QD_WITH_REMOTE_CACHE); without it hmac() throws.
QD_FUNC bool hmac_supported() noexcept;

// HMAC-SHA-256 of the concatenated `parts`, keyed by `secret` (any length).
QD_FUNC hmac_tag hmac(std::string_view secret, std::initializer_list<std::span<const std::byte>> parts);

// Constant-time comparison, so a forger learns nothing from how long a check took.
QD_FUNC bool hmac_equal(const hmac_tag& a, const hmac_tag& b) noexcept;

}  // namespace qd::inline v0::cache

#ifdef QD_HEADER_ONLY
#include "quadrants/cache/hmac-inl.hpp"
#endif
