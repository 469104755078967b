// The kernel lambda's signature: noexcept and mutable lambdas are reflected like
// plain ones, and scalar arguments bind only where no value changes.
#include <doctest/doctest.h>

#include <quadrants/quadrants.hpp>

#include <cstdint>
#include <limits>
#include <vector>

namespace {

void init_cpu() { qd::init({.arch = qd::arch::cpu, .offline_cache = false}); }

}  // namespace

TEST_CASE("a noexcept kernel lambda is reflected and runs like a plain one") {
  init_cpu();
  auto fill = qd::kernel("fill_noexcept", [](qd::types::ndarray<float, 1> x, qd::f32 v) noexcept {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = v + qd::cast<float>(i); });
  });
  auto twice = qd::kernel("twice_mutable_noexcept", [](qd::types::ndarray<float, 1> x) mutable noexcept {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * 2.0f; });
  });
  qd::ndarray<float, 1> x(5);
  fill(x, 0.5f);
  twice(x);
  CHECK(x.to_host() == std::vector<float>{1.0f, 3.0f, 5.0f, 7.0f, 9.0f});
  CHECK(fill.name() == "fill_noexcept");
}

// The rule, stated case by case from the C++ types' ranges and mantissas.
static_assert(qd::detail::preserves_value<int, std::int64_t>());
static_assert(qd::detail::preserves_value<int, double>());  // 31 bits fit a 53-bit mantissa
static_assert(!qd::detail::preserves_value<int, float>());  // 2^24 + 1 would round
static_assert(qd::detail::preserves_value<std::int16_t, float>());
static_assert(qd::detail::preserves_value<float, double>());
static_assert(!qd::detail::preserves_value<double, float>());
static_assert(!qd::detail::preserves_value<double, std::int32_t>());         // 3.7
static_assert(!qd::detail::preserves_value<std::int32_t, std::uint32_t>());  // -1
static_assert(qd::detail::preserves_value<std::uint32_t, std::int64_t>());
static_assert(!qd::detail::preserves_value<std::uint32_t, std::int32_t>());
static_assert(!qd::detail::preserves_value<std::int64_t, double>());
static_assert(!qd::detail::preserves_value<std::size_t, std::int64_t>());
static_assert(qd::detail::preserves_value<long long, std::int64_t>());
static_assert(qd::detail::preserves_value<bool, std::int32_t>());
static_assert(!qd::detail::preserves_value<int, bool>());
static_assert(qd::detail::preserves_value<char, std::int32_t>());
static_assert(!qd::detail::preserves_value<char, std::uint8_t>());
static_assert(qd::detail::preserves_value<std::uint8_t, std::uint32_t>());
static_assert(!qd::detail::preserves_value<long double, double>());

TEST_CASE("value-preserving scalar arguments reach the kernel unchanged") {
  init_cpu();
  auto widen = qd::kernel("widen", {"out_i", "out_f", "n", "big", "f", "small"},
                          [](qd::types::ndarray<std::int64_t, 1> out_i, qd::types::ndarray<double, 1> out_f, qd::i64 n,
                             qd::i64 big, qd::f64 f, qd::f32 small) {
                            out_i[0] = n;
                            out_i[1] = big;
                            out_f[0] = f;
                            out_f[1] = small;
                          });
  qd::ndarray<std::int64_t, 1> out_i(2);
  qd::ndarray<double, 1> out_f(2);
  const int n = -7;                                                     // int -> qd::i64
  const std::uint32_t big = std::numeric_limits<std::uint32_t>::max();  // u32 -> qd::i64
  const float f = 0.1f;                                                 // float -> qd::f64: exactly 0.1f
  const std::int16_t small = -30000;                                    // i16 -> qd::f32
  widen(out_i, out_f, n, big, f, small);
  CHECK(out_i.to_host() == std::vector<std::int64_t>{-7, 4294967295LL});
  CHECK(out_f.to_host() == std::vector<double>{static_cast<double>(0.1f), -30000.0});
}

TEST_CASE("C++ values a kernel lambda captures are read once, when it is traced (docs/dsl.md)") {
  init_cpu();
  float scale = 2.0f;
  auto k = qd::kernel("captured_scale", [&](qd::types::ndarray<float, 1> x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * scale; });
  });
  qd::ndarray<float, 1> x(3);
  x.fill(1.0f);
  k(x);
  CHECK(x.to_host() == std::vector<float>{2.0f, 2.0f, 2.0f});
  scale = 10.0f;  // no effect on k: its trace holds 2.0f
  k(x);
  CHECK(x.to_host() == std::vector<float>{4.0f, 4.0f, 4.0f});
  init_cpu();  // not even in a new program: the kernel object keeps its trace
  qd::ndarray<float, 1> y(3);
  y.fill(1.0f);
  k(y);
  CHECK(y.to_host() == std::vector<float>{2.0f, 2.0f, 2.0f});
  // A new kernel object traces again and sees the new value.
  auto k2 = qd::kernel("captured_scale", [&](qd::types::ndarray<float, 1> x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * scale; });
  });
  k2(y);
  CHECK(y.to_host() == std::vector<float>{20.0f, 20.0f, 20.0f});
}
