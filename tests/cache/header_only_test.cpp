// The cache layer in header-only mode: the same store, with nothing compiled ahead.
#include <doctest/doctest.h>

#include "cache/cache_test_support.hpp"
#include "quadrants/cache/store.hpp"

#ifndef QD_HEADER_ONLY
#error "this test must be built without QD_SEPARATE_COMPILATION"
#endif

using namespace qd::cache;

TEST_CASE("header-only mode saves, loads and validates entries") {
  qd_test::temp_dir dir;
  store s({.root = dir.path});
  key k = key_builder().add("header only").finish();
  std::vector<std::byte> payload = qd_test::code_like_payload(10000, 1);
  REQUIRE(s.save(entry_kind::offload, k, payload));
  CHECK(s.load(entry_kind::offload, k) == payload);
  std::string why;
  CHECK_MESSAGE(verify_entry(entry_path(dir.path, entry_kind::offload, k), &why), why);
  CHECK(decode_entry(encode_entry(entry_kind::module, k, payload, 1), entry_kind::module, k) == payload);
}
