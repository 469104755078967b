// The typing rules of mixed operands. Every statement and expression kind runs in the
// per-backend suite (tests/backend/gpu_suite_test.cpp), on the CPU and each GPU present.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/runtime_test_support.hpp"
#include "support/host_semantics.hpp"

namespace {

using doctest::Contains;
using qd_test::init_cpu;
using namespace qd_test;  // host_semantics.hpp
template <class T>
using lim = std::numeric_limits<T>;

}  // namespace

TEST_CASE("mixed operand types promote as documented") {
  init_cpu();
  using I = qd::i32;
  static_assert(std::is_same_v<decltype(std::declval<I>() + std::declval<qd::f32>()), qd::f32>);
  static_assert(std::is_same_v<decltype(std::declval<I>() / 2.0), qd::f32>);  // float literal, integer operand
  static_assert(std::is_same_v<decltype(std::declval<I>() / 2), qd::i32>);
  static_assert(std::is_same_v<decltype(std::declval<qd::i64>() + std::declval<qd::f32>()), qd::f32>);
  static_assert(std::is_same_v<decltype(std::declval<qd::f32>() + std::declval<qd::f64>()), qd::f64>);
  static_assert(std::is_same_v<decltype(std::declval<qd::u32>() + std::declval<I>()), qd::u32>);
  static_assert(std::is_same_v<decltype(std::declval<qd::u8>() + std::declval<qd::u8>()), qd::i32>);
  static_assert(std::is_same_v<decltype(std::declval<qd::u8>() * 2), qd::i32>);
  static_assert(std::is_same_v<decltype(std::declval<I>() + std::declval<qd::i64>()), qd::i64>);
  static_assert(std::is_same_v<decltype(std::declval<I>() < std::declval<qd::f32>()), qd::boolean>);
  static_assert(std::is_same_v<decltype(qd::sqrt(std::declval<I>())), qd::f32>);
  static_assert(std::is_same_v<decltype(qd::sqrt(std::declval<qd::f64>())), qd::f64>);
  static_assert(std::is_same_v<decltype(qd::pow(std::declval<I>(), 2)), qd::f32>);
  static_assert(std::is_same_v<decltype(qd::abs(std::declval<I>())), qd::i32>);
  static_assert(std::is_same_v<decltype(qd::min(std::declval<I>(), std::declval<qd::f32>())), qd::f32>);
  static_assert(std::is_same_v<decltype(qd::fma(std::declval<I>(), 2, 1)), qd::f32>);
  static_assert(std::is_same_v<decltype(qd::fma(2, 3, std::declval<I>())), qd::f32>);
  static_assert(std::is_same_v<decltype(qd::fma(1.0, std::declval<qd::f32>(), std::declval<qd::f64>())), qd::f64>);
  static_assert(std::is_same_v<decltype(qd::select(std::declval<qd::boolean>(), std::declval<I>(), 1.0)), qd::f32>);

  auto k = qd::kernel(
      "promotions", {"i", "u", "b", "l", "f", "d", "out"},
      [](qd::types::ndarray<std::int32_t, 1> i32s, qd::types::ndarray<std::uint32_t, 1> u32s,
         qd::types::ndarray<std::uint8_t, 1> u8s, qd::types::ndarray<std::int64_t, 1> i64s,
         qd::types::ndarray<float, 1> f32s, qd::types::ndarray<double, 1> f64s, qd::types::ndarray<double, 2> out) {
        qd::range_for(i32s.shape(0), [&](qd::i32 r) {
          auto i = i32s[r];
          auto u = u32s[r];
          auto b = u8s[r];
          auto l = i64s[r];
          auto f = f32s[r];
          auto d = f64s[r];
          int c = 0;
          auto put = [&](const auto& v) { out(r, c++) = v; };
          put(i + f), put(i / 2.0), put(l + f), put(f + d), put(u + i), put(b + b), put(b * 2), put(i + l);
          put(i * 3 / 2), put(qd::sqrt(i)), put(qd::pow(i, 2)), put(qd::abs(i)), put(qd::min(i, f)),
              put(qd::fma(i, 2, 1));
          put(qd::select(i > 0, i, 1.5));
        });
      });
  const std::vector<std::int32_t> is = {7, -3, lim<std::int32_t>::max(), 0};
  const std::vector<std::uint32_t> us = {1, 4000000000u, 5, 0};
  const std::vector<std::uint8_t> bs = {200, 255, 0, 17};
  const std::vector<std::int64_t> ls = {(std::int64_t{1} << 40) + 1, -5, 1, 16777217};
  const std::vector<float> fs = {0.0f, 0.1f, -2.5f, 1e-8f};
  const std::vector<double> ds = {0.1, 1e-300, -0.25, 3.0};
  const std::int64_t n = 4, columns = 15;
  qd::ndarray<std::int32_t, 1> i32s(n);
  qd::ndarray<std::uint32_t, 1> u32s(n);
  qd::ndarray<std::uint8_t, 1> u8s(n);
  qd::ndarray<std::int64_t, 1> i64s(n);
  qd::ndarray<float, 1> f32s(n);
  qd::ndarray<double, 1> f64s(n);
  qd::ndarray<double, 2> out({n, columns});
  i32s.from_host(is), u32s.from_host(us), u8s.from_host(bs), i64s.from_host(ls), f32s.from_host(fs), f64s.from_host(ds);
  k(i32s, u32s, u8s, i64s, f32s, f64s, out);
  auto got = out.to_host();
  for (std::size_t r = 0; r < 4; ++r) {
    std::int32_t i = is[r];
    std::uint32_t u = us[r];
    std::uint8_t b = bs[r];
    std::int64_t l = ls[r];
    float f = fs[r];
    double d = ds[r];
    const std::vector<double> want = {static_cast<float>(i) + f,
                                      static_cast<float>(i) / 2.0f,
                                      static_cast<float>(l) + f,
                                      static_cast<double>(f) + d,
                                      static_cast<double>(u + static_cast<std::uint32_t>(i)),
                                      static_cast<double>(b + b),
                                      static_cast<double>(b * 2),
                                      static_cast<double>(i + l),
                                      static_cast<double>(host_div(wrap_mul(i, 3), 2)),
                                      std::sqrt(static_cast<float>(i)),
                                      std::pow(static_cast<float>(i), 2.0f),
                                      static_cast<double>(i < 0 ? -i : i),
                                      std::min(static_cast<float>(i), f),
                                      std::fma(static_cast<float>(i), 2.0f, 1.0f),
                                      i > 0 ? static_cast<double>(static_cast<float>(i)) : 1.5};
    for (std::size_t c = 0; c < want.size(); ++c) {
      CAPTURE(r);
      CAPTURE(c);
      CHECK(same_float(got[r * columns + c], want[c]));
    }
  }
}
