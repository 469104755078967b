// Tests of cache/entry.hpp: round trips, codec choice, and rejection of every corruption.
#include "quadrants/cache/entry.hpp"

#include <doctest/doctest.h>
#include <sys/mman.h>
#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "cache/cache_test_support.hpp"
#include "quadrants/base/error.hpp"

using namespace qd::cache;
using bytes = std::vector<std::byte>;

namespace {

const key k1 = key_builder().add("entry test").add(std::uint64_t{1}).finish();
const key k2 = key_builder().add("entry test").add(std::uint64_t{2}).finish();

void put_u64(bytes& file, std::size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) file[at + static_cast<std::size_t>(i)] = static_cast<std::byte>(v >> (8 * i));
}
std::uint64_t get_u64(const bytes& file, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint64_t>(file[at + static_cast<std::size_t>(i)]);
  return v;
}
// Makes an edited header self-consistent again, so the check under test is the one that fires.
void reseal(bytes& file) { put_u64(file, 56, XXH3_64bits(file.data(), 56)); }

// The reason decode_entry gives, or "" when it accepts the file.
std::string rejection(const bytes& file, entry_kind kind = entry_kind::kernel, key k = k1) {
  std::string why;
  auto payload = decode_entry(file, kind, k, &why);
  if (payload) return "";
  CHECK_FALSE(why.empty());
  return why;
}

}  // namespace

TEST_CASE("every entry kind round-trips at every level") {
  const bytes payloads[] = {
      {}, qd_test::code_like_payload(1, 1), qd_test::code_like_payload(50 * 1024, 2), qd_test::random_payload(4096, 3)};
  for (entry_kind kind : all_entry_kinds)
    for (int level : {0, 1, 2, 3, 19})
      for (const bytes& payload : payloads) {
        CAPTURE(name(kind));
        CAPTURE(level);
        CAPTURE(payload.size());
        bytes file = encode_entry(kind, k1, payload, level);
        std::string why;
        auto back = decode_entry(file, kind, k1, &why);
        REQUIRE_MESSAGE(back, why);
        CHECK(*back == payload);
      }
}

TEST_CASE("compressible payloads are stored as zstd, incompressible ones raw") {
  bytes code = qd_test::code_like_payload(50 * 1024, 7);
  bytes file = encode_entry(entry_kind::module, k1, code, 3);
  CHECK(file[13] == std::byte{1});
  CHECK(file.size() < entry_header_size + code.size() / 2);
  bytes noise = qd_test::random_payload(50 * 1024, 7);
  file = encode_entry(entry_kind::module, k1, noise, 3);
  CHECK(file[13] == std::byte{0});
  CHECK(file.size() == entry_header_size + noise.size());
  file = encode_entry(entry_kind::module, k1, code, 0);
  CHECK(file[13] == std::byte{0});
}

TEST_CASE("the header has the documented layout") {
  bytes payload = qd_test::code_like_payload(1000, 9);
  bytes file = encode_entry(entry_kind::offload, k1, payload, 3);
  CHECK(std::memcmp(file.data(), "QDCACHE\0", 8) == 0);
  CHECK(get_u64(file, 8) % (1ull << 32) == format_version);
  CHECK(file[12] == std::byte{3});
  CHECK(get_u64(file, 16) == k1.lo);
  CHECK(get_u64(file, 24) == k1.hi);
  CHECK(get_u64(file, 32) == file.size() - entry_header_size);
  CHECK(get_u64(file, 40) == payload.size());
  CHECK(get_u64(file, 48) == XXH3_64bits(payload.data(), payload.size()));
  CHECK(get_u64(file, 56) == XXH3_64bits(file.data(), 56));
  auto header = parse_entry_header(file, file.size());
  REQUIRE(header);
  CHECK(header->kind == entry_kind::offload);
  CHECK(header->codec == entry_codec::zstd);
  CHECK(header->k == k1);
  CHECK(header->payload_size == payload.size());
}

TEST_CASE("bad levels and oversized payloads are refused by the writer") {
  bytes payload(10);
  CHECK_THROWS_AS(encode_entry(entry_kind::kernel, k1, payload, -1), qd::user_error);
  CHECK_THROWS_AS(encode_entry(entry_kind::kernel, k1, payload, 23), qd::user_error);
  // Reserved address space, never touched: the size check comes before anything reads it.
  std::size_t size = static_cast<std::size_t>(max_payload_size + 1);
  void* area = ::mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  REQUIRE(area != MAP_FAILED);
  std::span<const std::byte> huge(static_cast<const std::byte*>(area), size);
  CHECK_THROWS_AS(encode_entry(entry_kind::kernel, k1, huge, 1), qd::user_error);
  ::munmap(area, size);
}

TEST_CASE("every corruption is rejected with a reason") {
  const bytes payload = qd_test::code_like_payload(20000, 11);
  const bytes good = encode_entry(entry_kind::kernel, k1, payload, 3);
  REQUIRE(rejection(good) == "");
  bytes file = good;

  SUBCASE("zero-length file") { CHECK(rejection({}) == "empty file"); }
  SUBCASE("truncated header") {
    for (std::size_t n : {std::size_t{1}, std::size_t{8}, std::size_t{30}, std::size_t{63}}) {
      file.resize(n);
      CHECK(rejection(file).find("truncated header") != std::string::npos);
    }
  }
  SUBCASE("truncated payload") {
    file.resize(file.size() - 10);
    CHECK(rejection(file).find("size mismatch") != std::string::npos);
    file.resize(entry_header_size);
    CHECK(rejection(file).find("size mismatch") != std::string::npos);
  }
  SUBCASE("truncated payload with the header resealed to match") {
    file.resize(file.size() - 10);
    put_u64(file, 32, file.size() - entry_header_size);
    reseal(file);
    CHECK(rejection(file).find("zstd frame") != std::string::npos);
  }
  SUBCASE("trailing bytes") {
    file.push_back(std::byte{0});
    CHECK(rejection(file).find("size mismatch") != std::string::npos);
  }
  SUBCASE("one flipped payload byte, anywhere") {
    for (std::size_t at = entry_header_size; at < good.size(); at += 37) {
      file = good;
      file[at] ^= std::byte{0x10};
      CAPTURE(at);
      CHECK(rejection(file) != "");
    }
  }
  SUBCASE("one flipped payload byte in a raw entry") {
    bytes raw = encode_entry(entry_kind::kernel, k1, payload, 0);
    raw[raw.size() / 2] ^= std::byte{1};
    CHECK(rejection(raw) == "payload checksum mismatch");
  }
  SUBCASE("one flipped header byte, any of them") {
    for (std::size_t at = 0; at < entry_header_size; ++at) {
      file = good;
      file[at] ^= std::byte{0x01};
      CAPTURE(at);
      CHECK(rejection(file) != "");
    }
  }
  SUBCASE("wrong magic") {
    file[0] = std::byte{'X'};
    CHECK(rejection(file).find("magic") != std::string::npos);
  }
  SUBCASE("wrong format version") {
    file[8] = static_cast<std::byte>(format_version + 1);
    CHECK(rejection(file).find("format version") != std::string::npos);
    reseal(file);
    CHECK(rejection(file).find("format version") != std::string::npos);
  }
  SUBCASE("wrong kind") {
    CHECK(rejection(file, entry_kind::module).find("kind kernel, expected module") != std::string::npos);
    file[12] = std::byte{9};
    reseal(file);
    CHECK(rejection(file).find("unknown entry kind") != std::string::npos);
  }
  SUBCASE("wrong key echo") {
    CHECK(rejection(file, entry_kind::kernel, k2).find("key") != std::string::npos);
    put_u64(file, 16, k2.lo);
    reseal(file);
    CHECK(rejection(file).find("key") != std::string::npos);
  }
  SUBCASE("unknown codec and reserved bits") {
    file[13] = std::byte{7};
    reseal(file);
    CHECK(rejection(file).find("codec") != std::string::npos);
    file = good;
    file[15] = std::byte{1};
    reseal(file);
    CHECK(rejection(file).find("reserved") != std::string::npos);
  }
  SUBCASE("absurd sizes are refused before allocating") {
    put_u64(file, 40, 1ull << 40);
    reseal(file);
    CHECK(rejection(file).find("absurd payload size") != std::string::npos);
    file = good;
    put_u64(file, 40, ~0ull);
    reseal(file);
    CHECK(rejection(file).find("absurd payload size") != std::string::npos);
    file = good;
    put_u64(file, 32, ~0ull);
    reseal(file);
    CHECK(rejection(file).find("size mismatch") != std::string::npos);
  }
  SUBCASE("a payload size that disagrees with the zstd frame") {
    put_u64(file, 40, payload.size() + 1);
    reseal(file);
    CHECK(rejection(file).find("zstd frame declares") != std::string::npos);
  }
  SUBCASE("a raw entry whose sizes disagree") {
    bytes raw = encode_entry(entry_kind::kernel, k1, payload, 0);
    put_u64(raw, 40, payload.size() - 1);
    reseal(raw);
    CHECK(rejection(raw).find("raw payload") != std::string::npos);
  }
  SUBCASE("a checksum of other bytes") {
    put_u64(file, 48, get_u64(file, 48) + 1);
    reseal(file);
    CHECK(rejection(file) == "payload checksum mismatch");
  }
}

TEST_CASE("arbitrary bytes never crash the reader and are never accepted") {
  std::uint64_t state = 12345;
  const bytes good = encode_entry(entry_kind::module, k1, qd_test::code_like_payload(3000, 5), 3);
  for (int round = 0; round < 3000; ++round) {
    bytes file;
    if (round % 2 == 0) {
      // Pure noise, sometimes behind a valid header prefix.
      file = qd_test::random_payload(qd_test::splitmix(state) % 200, state);
      if (round % 4 == 0 && file.size() >= 16) std::memcpy(file.data(), good.data(), 16);
    } else {
      // A valid entry with a few random byte changes or a random cut.
      file = good;
      int edits = 1 + static_cast<int>(qd_test::splitmix(state) % 4);
      for (int e = 0; e < edits; ++e) {
        std::size_t at = qd_test::splitmix(state) % file.size();
        std::byte change = static_cast<std::byte>(1 + qd_test::splitmix(state) % 255);
        file[at] ^= change;
      }
      if (round % 3 == 0) file.resize(qd_test::splitmix(state) % file.size());
    }
    CHECK(!decode_entry(file, entry_kind::module, k1));
  }
}

namespace {

// A well-formed entry, checksums and all, whose zstd frame holds `payload_size` zero bytes:
// built by streaming, so the test never holds the payload (it compresses about 32,000 times).
bytes zeros_entry(entry_kind kind, const key& k, std::uint64_t payload_size) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 1);
  ZSTD_CCtx_setPledgedSrcSize(cctx, payload_size);
  XXH3_state_t* hash = XXH3_createState();
  XXH3_64bits_reset(hash);
  const bytes chunk(1 << 20);
  bytes frame(entry_header_size);
  bytes out(ZSTD_CStreamOutSize());
  for (std::uint64_t done = 0; done < payload_size;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), payload_size - done));
    done += n;
    XXH3_64bits_update(hash, chunk.data(), n);
    ZSTD_inBuffer in{chunk.data(), n, 0};
    const ZSTD_EndDirective mode = done == payload_size ? ZSTD_e_end : ZSTD_e_continue;
    for (bool finished = false; !finished;) {
      ZSTD_outBuffer o{out.data(), out.size(), 0};
      const std::size_t left = ZSTD_compressStream2(cctx, &o, &in, mode);
      REQUIRE_FALSE(ZSTD_isError(left));
      frame.insert(frame.end(), out.begin(), out.begin() + static_cast<std::ptrdiff_t>(o.pos));
      finished = mode == ZSTD_e_end ? left == 0 : in.pos == in.size;
    }
  }
  // The header exactly as encode_entry writes it.
  const bytes reference = encode_entry(kind, k, bytes(), 0);
  std::memcpy(frame.data(), reference.data(), entry_header_size);
  frame[13] = std::byte{1};  // zstd
  put_u64(frame, 32, frame.size() - entry_header_size);
  put_u64(frame, 40, payload_size);
  put_u64(frame, 48, XXH3_64bits_digest(hash));
  reseal(frame);
  XXH3_freeState(hash);
  ZSTD_freeCCtx(cctx);
  return frame;
}

}  // namespace

TEST_CASE("an entry that expands absurdly is refused from its header, before anything is decompressed") {
  // 1 GiB of zeros in about 32 KB: every checksum right, and once accepted after
  // allocating and decompressing the whole gigabyte (twice per process).
  const bytes forged = zeros_entry(entry_kind::module, k1, max_payload_size);
  CHECK(forged.size() < (64u << 10));
  std::string why = rejection(forged, entry_kind::module);
  CHECK(why.find("declare a 1073741824-byte payload") != std::string::npos);
  CHECK(why.find("256-fold expansion") != std::string::npos);
  // The writer keeps such a payload raw rather than write what a reader refuses.
  const bytes sparse(1 << 20);
  const bytes written = encode_entry(entry_kind::module, k1, sparse, 1);
  CHECK(written.size() == entry_header_size + sparse.size());
  CHECK(decode_entry(written, entry_kind::module, k1) == sparse);
  const bytes code = qd_test::code_like_payload(50000, 3);
  CHECK(encode_entry(entry_kind::module, k1, code, 1).size() < code.size() / 2);  // real code still compresses
}

TEST_CASE("each kind's payload is bounded by what the library writes for it") {
  CHECK(max_payload_size_of(entry_kind::module) == max_payload_size);
  CHECK(max_payload_size_of(entry_kind::kernel) == 16u << 20);
  CHECK(max_payload_size_of(entry_kind::offload) == 1u << 20);
  for (entry_kind kind : {entry_kind::kernel, entry_kind::offload}) {
    CAPTURE(name(kind));
    const bytes over(static_cast<std::size_t>(max_payload_size_of(kind) + 1));
    CHECK_THROWS_WITH_AS(encode_entry(kind, k1, over, 1), doctest::Contains("exceeds the"), qd::user_error);
    // A raw record of that size, resealed, is refused by the reader.
    bytes file = encode_entry(kind, k1, bytes(over.size() - 1), 0);
    file.push_back(std::byte{0});
    put_u64(file, 32, over.size());
    put_u64(file, 40, over.size());
    put_u64(file, 48, XXH3_64bits(file.data() + entry_header_size, over.size()));
    reseal(file);
    CHECK(rejection(file, kind)
              .find("absurd payload size " + std::to_string(over.size()) + " for a " + std::string(name(kind)) +
                    " entry") != std::string::npos);
  }
}
