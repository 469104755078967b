// An array of 2^31 elements or more without 4 GiB of memory, for the tests of 64-bit element
// offsets (runtime/per_offload_test.cpp on the CPU, the GPU suite on the emulated GPUs): a
// 2^16 x 2^16 byte array 2^31 bytes into a reservation, only the pages written backed. An
// offset wrapped to 32 bits lands inside the reservation, where a test can see it. `poke`
// writes v at (i, j) in a serial task and v + 1 + k at (i, j + 1 + k), k < 4, in a loop;
// check_pokes checks a huge and a small array after three launches.
#pragma once

#include <doctest/doctest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <quadrants/quadrants.hpp>

namespace qd_test {

struct huge_array_mapping {
  static constexpr std::size_t side = 65536, before = std::size_t{1} << 31, bytes = before + side * side;
  static constexpr std::int32_t i = 40000, j = 7;  // offset 2,621,440,007, past 2^31 - 1
  static constexpr std::size_t at = static_cast<std::size_t>(i) * side + j;
  static constexpr auto wrapped = static_cast<std::int32_t>(static_cast<std::uint32_t>(at));  // -1,673,527,289

  huge_array_mapping() {
    map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    REQUIRE(map != MAP_FAILED);
    base = static_cast<std::uint8_t*>(map) + before;
  }
  ~huge_array_mapping() { ::munmap(map, bytes); }
  huge_array_mapping(const huge_array_mapping&) = delete;
  huge_array_mapping& operator=(const huge_array_mapping&) = delete;

  qd::external_array<std::uint8_t, 2> array() const {
    return {base, {static_cast<std::int64_t>(side), static_cast<std::int64_t>(side)}};
  }

  void* map = nullptr;
  std::uint8_t* base = nullptr;
};

inline auto make_poke_kernel() {
  return qd::kernel("poke", {"a", "i", "j", "v"},
                    [](qd::types::ndarray<std::uint8_t, 2> a, qd::i32 i, qd::i32 j, qd::i32 v) {
                      a(i, j) = qd::cast<std::uint8_t>(v);  // a serial task
                      qd::range_for(4, [&](qd::i32 k) { a(i, j + 1 + k) = qd::cast<std::uint8_t>(v + 1 + k); });
                    });
}

// After poke(small 4 x 16, 2, 3, 10), poke(huge, i, j, 20), poke(small, 1, 0, 30).
inline void check_pokes(const huge_array_mapping& huge, const std::vector<std::uint8_t>& small) {
  for (std::size_t k = 0; k < 5; ++k) {
    CAPTURE(k);
    CHECK(huge.base[huge_array_mapping::at + k] == 20 + k);
    CHECK(huge.base[huge_array_mapping::wrapped + static_cast<std::ptrdiff_t>(k)] == 0);
    CHECK(small[2 * 16 + 3 + k] == 10 + k);
    CHECK(small[1 * 16 + k] == 30 + k);
  }
  CHECK(std::count(small.begin(), small.end(), 0) == 64 - 10);
}

}  // namespace qd_test
