// Tests of cache/key.hpp: field boundaries, hex round trip, distinctness.
#include "quadrants/cache/key.hpp"

#include <doctest/doctest.h>
#include <xxhash.h>

#include <string>
#include <unordered_set>

using qd::cache::key;
using qd::cache::key_builder;

TEST_CASE("field boundaries are part of the key") {
  CHECK(key_builder().add("ab").add("c").finish() != key_builder().add("a").add("bc").finish());
  CHECK(key_builder().add("abc").finish() != key_builder().add("ab").add("c").finish());
  CHECK(key_builder().add("").finish() != key_builder().finish());
  CHECK(key_builder().add("").add("x").finish() != key_builder().add("x").add("").finish());
}

TEST_CASE("integer and string fields never collide") {
  // The integer's eight little-endian bytes spell "aaaaaaaa".
  CHECK(key_builder().add(std::uint64_t{0x6161616161616161}).finish() != key_builder().add("aaaaaaaa").finish());
  CHECK(key_builder().add(std::uint64_t{1}).finish() != key_builder().add(std::uint64_t{2}).finish());
  CHECK(key_builder().add(std::uint64_t{0}).finish() != key_builder().finish());
}

TEST_CASE("the same fields give the same key, and finish does not consume the builder") {
  key_builder b;
  b.add("backend=cuda").add(std::uint64_t{90}).add("ir bytes");
  key first = b.finish();
  CHECK(b.finish() == first);
  CHECK(key_builder().add("backend=cuda").add(std::uint64_t{90}).add("ir bytes").finish() == first);
  key_builder copy = b;
  copy.add("more");
  b.add("more");
  CHECK(copy.finish() == b.finish());
  CHECK(copy.finish() != first);
}

TEST_CASE("a key is XXH3-128 of the documented field encoding, and is pinned") {
  // Fields: 's' + u64 length + bytes, or 'u' + u64 value; integers little-endian.
  key k = key_builder().add(std::uint64_t{1}).add("quadrants").add(std::uint64_t{42}).finish();
  std::string encoded;
  auto le64 = [&](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) encoded.push_back(static_cast<char>(v >> (8 * i)));
  };
  encoded += 'u';
  le64(1);
  encoded += 's';
  le64(9);
  encoded += "quadrants";
  encoded += 'u';
  le64(42);
  XXH128_hash_t h = XXH3_128bits(encoded.data(), encoded.size());
  CHECK(k == key{h.low64, h.high64});
  // If this fails, the derivation changed: bump cache::format_version, then update it.
  CHECK(k.hex() == "1ba8a33efaaf5cadc709f43f90e41efe");
}

TEST_CASE("hex is 32 lowercase digits and round-trips") {
  key k = key_builder().add("round trip").finish();
  std::string hex = k.hex();
  REQUIRE(hex.size() == 32);
  CHECK(hex.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(key::from_hex(hex) == k);
  CHECK(key{0x0123456789abcdefull, 0xfedcba9876543210ull}.hex() == "fedcba98765432100123456789abcdef");
  CHECK(key::from_hex("fedcba98765432100123456789abcdef") == key{0x0123456789abcdefull, 0xfedcba9876543210ull});
  CHECK(key{}.hex() == std::string(32, '0'));
}

TEST_CASE("from_hex accepts only the canonical spelling") {
  std::string hex = key_builder().add("x").finish().hex();
  CHECK_FALSE(key::from_hex(""));
  CHECK_FALSE(key::from_hex(hex.substr(1)));
  CHECK_FALSE(key::from_hex(hex + "0"));
  std::string upper = "ABCDEF00000000000000000000000000";
  CHECK_FALSE(key::from_hex(upper));
  std::string bad = hex;
  bad[7] = 'g';
  CHECK_FALSE(key::from_hex(bad));
  bad[7] = ' ';
  CHECK_FALSE(key::from_hex(bad));
}

TEST_CASE("different fields give different keys and different key hashes") {
  std::unordered_set<std::string> hexes;
  std::unordered_set<std::size_t> hashes;
  for (std::uint64_t i = 0; i < 2000; ++i) {
    key k = key_builder().add("construct").add(i).finish();
    hexes.insert(k.hex());
    hashes.insert(qd::cache::key_hash{}(k));
  }
  for (int i = 0; i < 1000; ++i)
    hexes.insert(key_builder().add(std::string(static_cast<std::size_t>(i), 'x')).finish().hex());
  CHECK(hexes.size() == 3000);
  CHECK(hashes.size() == 2000);
}
