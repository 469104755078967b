// The kernel lambda's signature: noexcept and mutable lambdas are reflected like
// plain ones, and scalar arguments bind only where no value changes.
#include <doctest/doctest.h>

#include <quadrants/quadrants.hpp>

#include <cstdint>
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
