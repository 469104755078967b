// Implementation of cache/entry.hpp.
#pragma once

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>
#include <zstd.h>

#include <cstring>
#include <memory>

#include "quadrants/base/error.hpp"
#include "quadrants/cache/entry.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::cache {

QD_FUNC std::string_view name(entry_kind kind) noexcept {
  switch (kind) {
    case entry_kind::module: return "module";
    case entry_kind::kernel: return "kernel";
    case entry_kind::offload: return "offload";
    case entry_kind::explain: return "explain";
    case entry_kind::variant: return "variant";
  }
  return "?";
}

QD_FUNC std::optional<entry_kind> entry_kind_from_name(std::string_view text) noexcept {
  for (entry_kind kind : all_entry_kinds)
    if (name(kind) == text) return kind;
  return std::nullopt;
}

namespace detail {

inline constexpr unsigned char entry_magic[8] = {'Q', 'D', 'C', 'A', 'C', 'H', 'E', 0};

QD_FUNC void store_le(std::byte* out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<std::byte>(v >> (8 * i));
}

QD_FUNC std::uint64_t load_le(const std::byte* in, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint64_t>(in[i]);
  return v;
}

struct zstd_cctx_free {
  void operator()(ZSTD_CCtx* c) const noexcept { ZSTD_freeCCtx(c); }
};
struct zstd_dctx_free {
  void operator()(ZSTD_DCtx* c) const noexcept { ZSTD_freeDCtx(c); }
};

// One context per thread: creating one costs more than compressing a small entry.
QD_FUNC ZSTD_CCtx* thread_cctx() {
  thread_local std::unique_ptr<ZSTD_CCtx, zstd_cctx_free> ctx(ZSTD_createCCtx());
  return ctx.get();
}
QD_FUNC ZSTD_DCtx* thread_dctx() {
  thread_local std::unique_ptr<ZSTD_DCtx, zstd_dctx_free> ctx(ZSTD_createDCtx());
  return ctx.get();
}

QD_FUNC std::nullopt_t reject(std::string* why, std::string reason) {
  if (why) *why = std::move(reason);
  return std::nullopt;
}

}  // namespace detail

QD_FUNC std::vector<std::byte> encode_entry(entry_kind kind, const key& k, std::span<const std::byte> payload,
                                            int level) {
  if (level < 0 || level > ZSTD_maxCLevel())
    throw user_error(fmt::format("cache entry: zstd level {} is outside 0..{}; use 1-3", level, ZSTD_maxCLevel()));
  if (payload.size() > max_payload_size_of(kind))
    throw user_error(fmt::format("cache entry: a {} payload of {} bytes exceeds the {}-byte maximum", name(kind),
                                 payload.size(), max_payload_size_of(kind)));
  std::vector<std::byte> out;
  entry_codec codec = entry_codec::none;
  std::size_t stored = payload.size();
  if (level > 0 && !payload.empty()) {
    out.resize(entry_header_size + ZSTD_compressBound(payload.size()));
    ZSTD_CCtx* cctx = detail::thread_cctx();
    std::size_t n = cctx ? ZSTD_compressCCtx(cctx, out.data() + entry_header_size, out.size() - entry_header_size,
                                             payload.data(), payload.size(), level)
                         : 0;
    // Kept raw when compression does not pay, or pays more than a reader accepts.
    if (cctx && !ZSTD_isError(n) && n < payload.size() && payload.size() <= n * max_expansion) {
      codec = entry_codec::zstd;
      stored = n;
    }
  }
  out.resize(entry_header_size + stored);
  if (codec == entry_codec::none && !payload.empty())
    std::memcpy(out.data() + entry_header_size, payload.data(), payload.size());

  std::byte* h = out.data();
  std::memcpy(h, detail::entry_magic, sizeof detail::entry_magic);
  detail::store_le(h + 8, format_version, 4);
  h[12] = static_cast<std::byte>(kind);
  h[13] = static_cast<std::byte>(codec);
  detail::store_le(h + 14, 0, 2);
  detail::store_le(h + 16, k.lo, 8);
  detail::store_le(h + 24, k.hi, 8);
  detail::store_le(h + 32, stored, 8);
  detail::store_le(h + 40, payload.size(), 8);
  detail::store_le(h + 48, XXH3_64bits(payload.data(), payload.size()), 8);
  detail::store_le(h + 56, XXH3_64bits(h, 56), 8);
  return out;
}

QD_FUNC std::optional<entry_header> parse_entry_header(std::span<const std::byte> bytes, std::uint64_t file_size,
                                                       std::string* why) {
  using detail::reject;
  using detail::load_le;
  if (file_size == 0) return reject(why, "empty file");
  if (bytes.size() < entry_header_size || file_size < entry_header_size)
    return reject(why, fmt::format("truncated header ({} of {} bytes)", file_size, entry_header_size));
  const std::byte* h = bytes.data();
  if (std::memcmp(h, detail::entry_magic, sizeof detail::entry_magic) != 0)
    return reject(why, "bad magic (not a Quadrants cache entry)");
  entry_header e;
  // The version is checked before the header checksum: another version may lay out the
  // header differently, and "format version" is the more useful reason.
  e.version = static_cast<std::uint32_t>(load_le(h + 8, 4));
  if (e.version != format_version)
    return reject(why, fmt::format("format version {}, expected {}", e.version, format_version));
  if (load_le(h + 56, 8) != XXH3_64bits(h, 56)) return reject(why, "header checksum mismatch");
  if (load_le(h + 14, 2) != 0) return reject(why, "reserved header bits are set");
  auto kind_byte = std::to_integer<std::uint8_t>(h[12]);
  if (kind_byte < 1 || kind_byte > std::size(all_entry_kinds))
    return reject(why, fmt::format("unknown entry kind {}", kind_byte));
  e.kind = static_cast<entry_kind>(kind_byte);
  auto codec_byte = std::to_integer<std::uint8_t>(h[13]);
  if (codec_byte > 1) return reject(why, fmt::format("unknown codec {}", codec_byte));
  e.codec = static_cast<entry_codec>(codec_byte);
  e.k = key{load_le(h + 16, 8), load_le(h + 24, 8)};
  e.stored_size = load_le(h + 32, 8);
  e.payload_size = load_le(h + 40, 8);
  e.payload_checksum = load_le(h + 48, 8);
  if (e.stored_size != file_size - entry_header_size)
    return reject(why, fmt::format("size mismatch: header says {} payload bytes, file has {}", e.stored_size,
                                   file_size - entry_header_size));
  if (e.payload_size > max_payload_size_of(e.kind))
    return reject(why, fmt::format("absurd payload size {} for a {} entry (maximum {})", e.payload_size, name(e.kind),
                                   max_payload_size_of(e.kind)));
  if (e.codec == entry_codec::zstd && e.stored_size < (e.payload_size + max_expansion - 1) / max_expansion)
    return reject(why, fmt::format("{} stored bytes declare a {}-byte payload: more than the {}-fold expansion the "
                                   "writer ever produces",
                                   e.stored_size, e.payload_size, max_expansion));
  if (e.codec == entry_codec::none && e.stored_size != e.payload_size)
    return reject(why, fmt::format("raw payload: stored size {} != payload size {}", e.stored_size, e.payload_size));
  if (e.codec == entry_codec::zstd && e.stored_size > ZSTD_compressBound(e.payload_size))
    return reject(why,
                  fmt::format("compressed size {} is impossible for {} payload bytes", e.stored_size, e.payload_size));
  return e;
}

QD_FUNC std::optional<std::vector<std::byte>> decode_entry(std::span<const std::byte> file, entry_kind expected_kind,
                                                           const key& expected_key, std::string* why) {
  using detail::reject;
  std::optional<entry_header> e = parse_entry_header(file, file.size(), why);
  if (!e) return std::nullopt;
  if (e->kind != expected_kind)
    return reject(why, fmt::format("kind {}, expected {}", name(e->kind), name(expected_kind)));
  if (e->k != expected_key)
    return reject(why, fmt::format("key {} in the header, expected {}", e->k.hex(), expected_key.hex()));
  std::span<const std::byte> stored = file.subspan(entry_header_size);
  std::vector<std::byte> payload;
  if (e->codec == entry_codec::none) {
    payload.assign(stored.begin(), stored.end());
  } else {
    // Ask the frame itself before allocating: its declared size must match the header
    // and it must span exactly the stored bytes (no trailing or missing data).
    unsigned long long declared = ZSTD_getFrameContentSize(stored.data(), stored.size());
    if (declared == ZSTD_CONTENTSIZE_ERROR || declared == ZSTD_CONTENTSIZE_UNKNOWN)
      return reject(why, "zstd frame header is invalid");
    if (declared != e->payload_size)
      return reject(why, fmt::format("zstd frame declares {} bytes, header says {}", declared, e->payload_size));
    std::size_t frame = ZSTD_findFrameCompressedSize(stored.data(), stored.size());
    if (ZSTD_isError(frame) || frame != stored.size())
      return reject(why, "zstd frame is truncated or has trailing bytes");
    ZSTD_DCtx* dctx = detail::thread_dctx();
    if (!dctx) return reject(why, "out of memory for a zstd context");
    payload.resize(static_cast<std::size_t>(e->payload_size));
    std::size_t n = ZSTD_decompressDCtx(dctx, payload.data(), payload.size(), stored.data(), stored.size());
    if (ZSTD_isError(n)) return reject(why, fmt::format("zstd: {}", ZSTD_getErrorName(n)));
    if (n != payload.size()) return reject(why, fmt::format("decompressed {} bytes, expected {}", n, payload.size()));
  }
  if (XXH3_64bits(payload.data(), payload.size()) != e->payload_checksum)
    return reject(why, "payload checksum mismatch");
  return payload;
}

}  // namespace qd::inline v0::cache
