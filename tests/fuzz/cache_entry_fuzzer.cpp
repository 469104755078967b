// libFuzzer target for the cache entry reader (cache/entry.hpp) and the record decoders
// (cache/records.hpp): arbitrary bytes never crash or hang, and are accepted only when
// they are a valid entry (checked independently) or the canonical bytes of a record.
// Built with clang++ -fsanitize=fuzzer,address,undefined (make sanitize; docs/testing.md).
//
// The first input byte picks what the rest is:
//   0: an entry file, read with the kind and key its header names (and a wrong key);
//   1: a payload: encoded, round-tripped, then corrupted at fuzzer-chosen places;
//   2: a whole-kernel record;  3: an offload record.
// `cache_entry_fuzzer -qd_write_seeds=DIR` writes a seed corpus and exits.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>
#include <zstd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include <quadrants/cache/entry.hpp>
#include <quadrants/cache/records.hpp>

#include "libfuzzer_seeds.hpp"

namespace {

using bytes = std::vector<std::byte>;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "cache_entry_fuzzer: %s\n", what);
  std::abort();
}

std::uint64_t le(const std::byte* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint64_t>(p[i]);
  return v;
}

// The entry format of cache/entry.hpp, checked from its description rather than its code.
bool valid_entry(std::span<const std::byte> f, qd::cache::entry_kind kind, const qd::cache::key& k,
                 const bytes& payload) {
  if (f.size() < qd::cache::entry_header_size) return false;
  const std::byte* h = f.data();
  static const char magic[8] = {'Q', 'D', 'C', 'A', 'C', 'H', 'E', 0};
  if (std::memcmp(h, magic, 8) != 0 || le(h + 8, 4) != qd::cache::format_version) return false;
  if (le(h + 56, 8) != XXH3_64bits(h, 56) || le(h + 14, 2) != 0) return false;
  if (le(h + 12, 1) != static_cast<std::uint64_t>(kind) || le(h + 16, 8) != k.lo || le(h + 24, 8) != k.hi) return false;
  const std::uint64_t stored = le(h + 32, 8), size = le(h + 40, 8);
  if (stored != f.size() - qd::cache::entry_header_size || size != payload.size()) return false;
  // Each kind's maximum payload; a zstd payload at most 256 times its stored bytes.
  if (size > qd::cache::max_payload_size_of(kind) || (le(h + 13, 1) == 1 && size > stored * 256)) return false;
  if (le(h + 48, 8) != XXH3_64bits(payload.data(), payload.size())) return false;
  std::span<const std::byte> body = f.subspan(qd::cache::entry_header_size);
  switch (le(h + 13, 1)) {
    case 0:
      return body.size() == payload.size() &&
             (body.empty() || std::memcmp(body.data(), payload.data(), body.size()) == 0);
    case 1: {
      if (ZSTD_findFrameCompressedSize(body.data(), body.size()) != body.size()) return false;
      bytes out(payload.size() + 1);  // one spare byte: a longer frame shows
      std::size_t n = ZSTD_decompress(out.data(), out.size(), body.data(), body.size());
      return !ZSTD_isError(n) && n == payload.size() && (n == 0 || std::memcmp(out.data(), payload.data(), n) == 0);
    }
    default: return false;
  }
}

void check_entry(std::span<const std::byte> f) {
  std::string why;
  qd::cache::parse_entry_header(f, f.size(), &why);
  if (f.size() < qd::cache::entry_header_size) {
    if (qd::cache::decode_entry(f, qd::cache::entry_kind::module, {}, &why))
      fail("accepted a file shorter than a header");
    return;
  }
  const auto kind_byte = std::to_integer<std::uint8_t>(f[12]);
  const auto kind = kind_byte >= 1 && kind_byte <= std::size(qd::cache::all_entry_kinds)
                        ? static_cast<qd::cache::entry_kind>(kind_byte)
                        : qd::cache::entry_kind::module;
  const qd::cache::key k{le(f.data() + 16, 8), le(f.data() + 24, 8)};
  if (auto payload = qd::cache::decode_entry(f, kind, k, &why)) {
    if (!valid_entry(f, kind, k, *payload)) fail("accepted an invalid entry");
    if (le(f.data() + 13, 1) == 0 && qd::cache::encode_entry(kind, k, *payload, 0) != bytes(f.begin(), f.end()))
      fail("accepted a raw entry that is not the encoding of its payload");
  }
  const qd::cache::key other{k.lo ^ 1, k.hi};
  if (qd::cache::decode_entry(f, kind, other, &why)) fail("accepted an entry under another key");
}

void check_round_trip(std::span<const std::byte> in) {
  if (in.size() < 12) return;
  const auto kind = static_cast<qd::cache::entry_kind>(1 + std::to_integer<int>(in[0]) % 3);
  const int level = std::to_integer<int>(in[1]) % 4;
  const qd::cache::key k{le(in.data() + 2, 8), 0x5eed};
  const int edits = std::to_integer<int>(in[10]) % 4;
  std::span<const std::byte> rest = in.subspan(11);
  if (rest.size() < static_cast<std::size_t>(edits) * 3) return;
  std::span<const std::byte> payload = rest.subspan(static_cast<std::size_t>(edits) * 3);
  const bytes entry = qd::cache::encode_entry(kind, k, payload, level);
  auto back = qd::cache::decode_entry(entry, kind, k);
  if (!back || *back != bytes(payload.begin(), payload.end())) fail("an encoded entry did not decode to its payload");
  // Corrupt it: flips at fuzzer-chosen offsets, then maybe a truncation.
  bytes bad = entry;
  for (int e = 0; e < edits; ++e) {
    const std::size_t at = le(rest.data() + e * 3, 2) % bad.size();
    bad[at] ^= rest[static_cast<std::size_t>(e) * 3 + 2];
  }
  if (edits == 3 && std::to_integer<int>(rest[8]) & 1) bad.resize(bad.size() - 1 - le(rest.data(), 1) % bad.size());
  if (bad == entry) return;
  std::string why;
  auto got = qd::cache::decode_entry(bad, kind, k, &why);
  if (!got) return;
  // A corrupted zstd frame may still decode to a payload with the header's checksum; a raw
  // entry or a header with any change may not.
  if (!valid_entry(bad, kind, k, *got)) fail("accepted a corrupted entry");
  if (std::to_integer<int>(bad[13]) == 0) fail("accepted a corrupted raw entry");
  if (std::memcmp(bad.data(), entry.data(), qd::cache::entry_header_size) != 0) fail("accepted a corrupted header");
}

template <class Decode>
void check_record(std::span<const std::byte> in, Decode decode) {
  if (auto r = decode(in)) {
    if (qd::cache::encode(*r) != bytes(in.begin(), in.end())) fail("accepted a record that is not canonical");
  }
}

void write_seeds(const std::string& dir) {
  std::filesystem::create_directories(dir);
  int n = 0;
  auto save = [&](std::uint8_t mode, const bytes& b) {
    bytes out{static_cast<std::byte>(mode)};
    out.insert(out.end(), b.begin(), b.end());
    std::ofstream(dir + "/seed" + std::to_string(n++), std::ios::binary)
        .write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
  };
  const std::string text = "QD_FN void qd_task0(const qd_ctx* ctx) { /* a module's source, compressible */ }";
  const bytes payload(reinterpret_cast<const std::byte*>(text.data()),
                      reinterpret_cast<const std::byte*>(text.data()) + text.size());
  qd::cache::kernel_record kr{{1, 2}, 2, true, {{"qd_task0", true, false, {0, 1}}, {"qd_task1", false, true, {1}}}};
  qd::cache::offload_record orec{{3, 4}, {"qd_o00ff", true, false, {0, 1, 2}}};
  for (auto kind : qd::cache::all_entry_kinds)
    for (int level : {0, 1}) {
      save(0, qd::cache::encode_entry(kind, {0x1234, 0x5678}, payload, level));
      save(0, qd::cache::encode_entry(kind, {7, 9}, qd::cache::encode(kr), level));
    }
  save(0, qd::cache::encode_entry(qd::cache::entry_kind::module, {1, 1}, {}, 0));
  bytes structured{std::byte{1}, std::byte{1}, std::byte{0x42}, std::byte{0}, std::byte{0}, std::byte{0},
                   std::byte{0}, std::byte{0}, std::byte{0},    std::byte{0}, std::byte{0}};
  structured.insert(structured.end(), payload.begin(), payload.end());
  save(1, structured);
  save(2, qd::cache::encode(kr));
  save(3, qd::cache::encode(orec));
  qd::cache::variant_record vrec{{{{3, 4}, {5, 6}, orec.task, true, 128, {2, 0}}}, 4096};
  save(4, qd::cache::encode(vrec));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  qd_fuzz::handle_seed_flag(argc, argv, write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0: check_entry(in); break;
    case 1: check_round_trip(in); break;
    case 2: check_record(in, [](std::span<const std::byte> b) { return qd::cache::decode_kernel_record(b); }); break;
    case 3: check_record(in, [](std::span<const std::byte> b) { return qd::cache::decode_offload_record(b); }); break;
    case 4: check_record(in, [](std::span<const std::byte> b) { return qd::cache::decode_variant_record(b); }); break;
  }
  return 0;
}
