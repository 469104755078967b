// The launch metadata records (cache/records.hpp): they round-trip, and every byte
// string a decoder accepts is exactly what the encoder writes for the record it returns.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "quadrants/cache/records.hpp"

namespace {

using bytes = std::vector<std::byte>;

bytes of(std::initializer_list<int> values) {
  bytes out;
  for (int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

}  // namespace

TEST_CASE("kernel and offload records round-trip") {
  qd::cache::kernel_record k{
      {1, 0xffffffffffffffffull}, 3, true, {{"qd_task0", true, false, {0, 2}}, {"qd_task1", false, true, {}}}};
  auto back = qd::cache::decode_kernel_record(qd::cache::encode(k));
  REQUIRE(back);
  CHECK(back->module == k.module);
  CHECK(back->constructs == 3);
  CHECK(back->needs_temporaries);
  CHECK(back->tasks == k.tasks);
  qd::cache::offload_record o{{5, 6}, {"qd_o1", true, true, {0, 1, 2}}};
  auto ob = qd::cache::decode_offload_record(qd::cache::encode(o));
  REQUIRE(ob);
  CHECK(ob->task == o.task);
}

// Found by the libFuzzer target (tests/fuzz/cache_entry_fuzzer.cpp): the varint reader
// accepted overlong spellings and bits past 64, and the construct count was truncated to
// 32 bits, so different bytes decoded to the same record.
TEST_CASE("records whose bytes are not the encoder's spelling are rejected") {
  const bytes canonical = qd::cache::encode(qd::cache::offload_record{{1, 2}, {"e", true, false, {2}}});
  CHECK(canonical == of({'O', 1, 2, 1, 'e', 1, 1, 2}));
  CHECK(qd::cache::decode_offload_record(canonical));
  CHECK_FALSE(qd::cache::decode_offload_record(of({'O', 1, 2, 1, 'e', 1, 1, 0x82, 0x00})));  // 2, overlong
  CHECK_FALSE(qd::cache::decode_offload_record(of({'O', 0x81, 0x00, 2, 1, 'e', 1, 1, 2})));  // 1, overlong
  // 2^63 is the longest number: ten bytes, the last 0x01; more bits (or a continuation) are not a number.
  bytes big = of({'O', 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 2, 1, 'e', 1, 1, 2});
  auto ok = qd::cache::decode_offload_record(big);
  REQUIRE(ok);
  CHECK(ok->module.lo == (std::uint64_t{1} << 63));
  big[10] = std::byte{0x03};
  CHECK_FALSE(qd::cache::decode_offload_record(big));
  // A construct count beyond 32 bits.
  bytes kernel = qd::cache::encode(qd::cache::kernel_record{{1, 2}, 1, false, {}});
  CHECK(kernel == of({'K', 1, 2, 1, 0, 0}));
  CHECK_FALSE(qd::cache::decode_kernel_record(of({'K', 1, 2, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0})));  // 2^32
  CHECK(qd::cache::decode_kernel_record(of({'K', 1, 2, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0})));        // 2^32 - 1
  // Trailing bytes and truncations.
  bytes longer = canonical;
  longer.push_back(std::byte{0});
  CHECK_FALSE(qd::cache::decode_offload_record(longer));
  for (std::size_t n = 0; n < canonical.size(); ++n)
    CHECK_FALSE(qd::cache::decode_offload_record(bytes(canonical.begin(), canonical.begin() + static_cast<long>(n))));
}

TEST_CASE("explanation records round-trip, and truncated or foreign bytes are rejected") {
  qd::cache::explain_record e{"step",
                              "kernel 'step': 2 constructs\n",
                              "digraph \"step\" {}\n",
                              {{1, 2}, {3, 4}},
                              "split",
                              {7, 8},
                              1764000000123456789};
  const bytes encoded = qd::cache::encode(e);
  auto back = qd::cache::decode_explain_record(encoded);
  REQUIRE(back);
  CHECK(*back == e);
  // Every proper prefix is rejected, and so is a byte more.
  for (std::size_t n = 0; n < encoded.size(); ++n)
    CHECK_FALSE(qd::cache::decode_explain_record(std::span<const std::byte>(encoded.data(), n)));
  bytes longer = encoded;
  longer.push_back(std::byte{0});
  CHECK_FALSE(qd::cache::decode_explain_record(longer));
  // Another record kind's bytes, and a record without a kernel name.
  CHECK_FALSE(qd::cache::decode_explain_record(
      qd::cache::encode(qd::cache::offload_record{{5, 6}, {"qd_o1", true, false, {}}})));
  CHECK_FALSE(qd::cache::decode_explain_record(qd::cache::encode(qd::cache::explain_record{"", "text", "dot", {}})));
}

TEST_CASE("variant records round-trip, and truncated, foreign or out-of-range bytes are rejected") {
  qd::cache::variant_record v{{{{1, 2}, {3, 4}, {"qd_o1", true, false, {0, 1}}, true, 256, {3, 0}},
                               {{5, 6}, {3, 4}, {"qd_o2", false, true, {0}}, false, 0, {1}}},
                              4096};
  const bytes encoded = qd::cache::encode(v);
  auto back = qd::cache::decode_variant_record(encoded);
  REQUIRE(back);
  CHECK(*back == v);
  for (std::size_t n = 0; n < encoded.size(); ++n)
    CHECK_FALSE(qd::cache::decode_variant_record(std::span<const std::byte>(encoded.data(), n)));
  bytes longer = encoded;
  longer.push_back(std::byte{0});
  CHECK_FALSE(qd::cache::decode_variant_record(longer));
  // Another kind's bytes; a variant of no task; a random flag other than 0 or 1.
  CHECK_FALSE(qd::cache::decode_variant_record(
      qd::cache::encode(qd::cache::offload_record{{5, 6}, {"qd_o1", true, false, {}}})));
  CHECK_FALSE(qd::cache::decode_variant_record(qd::cache::encode(qd::cache::variant_record{{}, 0})));
  const bytes one =
      qd::cache::encode(qd::cache::variant_record{{{{1, 2}, {3, 4}, {"e", true, false, {}}, false, 7, {}}}, 0});
  CHECK(one == of({'V', 0, 1, 1, 2, 3, 4, 1, 'e', 1, 0, 0, 7, 0}));
  bytes flag = one;
  flag[11] = std::byte{2};
  CHECK_FALSE(qd::cache::decode_variant_record(flag));
}
