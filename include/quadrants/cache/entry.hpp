// The on-disk entry format: a fixed 64-byte little-endian header and the payload (a zstd frame).
// Pure functions over bytes, so the reader can be driven by tests and fuzzers without a disk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/cache/key.hpp"

namespace qd::inline v0::cache {

// module: the compiled binary of one compiler program; kernel: a whole-kernel record;
// offload: a per-construct record that references a module; explain: what a compiled
// kernel is made of (its name, kernel.explain() and kernel.dot(), the keys of its
// records), for `qd-cache explain`; variant: a split kernel's offloads and modules in one
// record (a warm start's one read per kernel). The store treats all payloads as opaque bytes.
enum class entry_kind : std::uint8_t { module = 1, kernel = 2, offload = 3, explain = 4, variant = 5 };

inline constexpr entry_kind all_entry_kinds[] = {entry_kind::module, entry_kind::kernel, entry_kind::offload,
                                                 entry_kind::explain, entry_kind::variant};

// Tables indexed by the kind byte (store, remote) have one slot per kind plus slot 0.
static_assert(std::size(all_entry_kinds) == 5 && static_cast<int>(entry_kind::variant) == 5,
              "a new entry kind: update the tables indexed by kind byte (cache/store-inl.hpp kind_trusted)");

// "module", "kernel", "offload", "explain", "variant": also the entry's directory under the cache root.
QD_FUNC std::string_view name(entry_kind kind) noexcept;
QD_FUNC std::optional<entry_kind> entry_kind_from_name(std::string_view text) noexcept;

enum class entry_codec : std::uint8_t { none = 0, zstd = 1 };

// Header layout (offsets in bytes, integers little-endian):
//   0 magic "QDCACHE\0" | 8 format_version u32 | 12 kind u8 | 13 codec u8 | 14 reserved u16 (0)
//  16 key.lo u64 | 24 key.hi u64 | 32 stored (compressed) size u64 | 40 payload size u64
//  48 XXH3-64 of the payload u64 | 56 XXH3-64 of bytes [0, 56) u64
inline constexpr std::size_t entry_header_size = 64;
// Payloads larger than this are refused by the writer, and claims of more by the reader,
// which therefore never allocates more than this for one entry.
inline constexpr std::uint64_t max_payload_size = std::uint64_t{1} << 30;

// The largest payload of each kind, from what the library writes: a module is a compiled
// binary (up to max_payload_size); a kernel record takes tens of bytes per task, an offload
// record tens of bytes. Writer and reader both refuse more.
constexpr std::uint64_t max_payload_size_of(entry_kind kind) noexcept {
  switch (kind) {
    case entry_kind::module: return max_payload_size;
    case entry_kind::kernel: return std::uint64_t{16} << 20;
    case entry_kind::offload: return std::uint64_t{1} << 20;
    case entry_kind::explain: return std::uint64_t{8} << 20;
    case entry_kind::variant: return std::uint64_t{16} << 20;
  }
  return 0;
}

// A zstd entry's payload is at most this many times its stored bytes, so decoding costs
// time and memory in proportion to the file read (a 32 KB entry once declared, validly,
// 1 GiB of zeros). Compiled code compresses 3-10 times; the writer stores a payload raw
// rather than pass this.
inline constexpr std::uint64_t max_expansion = 256;

struct entry_header {
  std::uint32_t version = 0;
  entry_kind kind = entry_kind::module;
  entry_codec codec = entry_codec::none;
  key k;
  std::uint64_t stored_size = 0;   // bytes after the header
  std::uint64_t payload_size = 0;  // bytes after decompression
  std::uint64_t payload_checksum = 0;
};

// The entry file for `payload`. `level` 1..22 compresses with zstd at that level (1-3 is
// the useful range: higher levels cost up to 100 ms for 5-30 % smaller files); 0 stores
// the payload raw, and so does any level when compression would not make it smaller.
// Throws qd::user_error for a level outside 0..22 or a payload over max_payload_size_of(kind).
QD_FUNC std::vector<std::byte> encode_entry(entry_kind kind, const key& k, std::span<const std::byte> payload,
                                            int level);

// Checks the header alone (size, magic, version, header checksum, reserved bits, kind,
// codec, sizes against `file_size`, max_payload_size_of(kind) and max_expansion).
// nullopt with the reason in `why` on any mismatch.
QD_FUNC std::optional<entry_header> parse_entry_header(std::span<const std::byte> bytes, std::uint64_t file_size,
                                                       std::string* why = nullptr);

// The payload of a complete entry file, after checking everything: the header as above,
// the expected kind and key, the zstd frame's sizes, the exact decompressed size and the
// payload checksum. nullopt with the reason in `why` on any mismatch; never throws for
// bad bytes, never reads outside `file`, and never allocates more than max_payload_size.
QD_FUNC std::optional<std::vector<std::byte>> decode_entry(std::span<const std::byte> file, entry_kind expected_kind,
                                                           const key& expected_key, std::string* why = nullptr);

}  // namespace qd::inline v0::cache

#ifdef QD_HEADER_ONLY
#include "quadrants/cache/entry-inl.hpp"
#endif
