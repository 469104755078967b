// SPEC §2's API block, written as a user reading only the spec would write it:
// it must compile unchanged and compute the right values.
#include <doctest/doctest.h>

#include <quadrants/quadrants.hpp>

#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

#include "support/log_capture.hpp"

TEST_CASE("the SPEC §2 example compiles and runs as written") {
  qd_test::log_capture logs;  // arch = cuda falls back to cpu here, with one warning
  qd::init({.arch = qd::arch::cuda});

  std::vector<float> host(1024);
  std::iota(host.begin(), host.end(), 0.0f);
  qd::ndarray<float, 1> x(1024), out(1024);
  x.from_host(std::span<const float>(host));
  qd::ndarray<float, 1> a(1024, qd::needs_grad);
  qd::ndarray<int32_t, 2> m({7, 9});

  auto running_total =
      qd::kernel("running_total", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out) {
        qd::var<float> total = 0.0f;
        qd::range_for(x.shape(0), [&](qd::i32 i) { total += x[i]; });
        qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = total; });
      });
  running_total(x, out);
  running_total.compile();
  auto obs = running_total.per_offload_cache_observations();

  std::vector<float> result = out.to_host();
  CHECK(result.size() == 1024);
  CHECK(result[17] == 523776.0f);  // 0 + 1 + ... + 1023, exact in f32
  CHECK(out.shape(0) == 1024);
  CHECK(m.to_host().size() == 63);
  CHECK(a.grad().shape(0) == 1024);
  CHECK(obs.frontend_constructs_total == -1);  // per-offload by default on CUDA; the CPU fallback defaults to whole
  CHECK(logs.count(qd::log_level::warn, "falling back to arch = cpu") == 1);
}

TEST_CASE("the statements SPEC §2 lists, as a user would write them") {
  qd::init({.arch = qd::arch::cpu});
  auto k = qd::kernel("everything", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1, qd::needs_grad> g,
                                       qd::types::ndarray<int32_t, 2> m, qd::types::ndarray<float, 1> out,
                                       qd::f32 scale, qd::i32 steps, qd::boolean flag, qd::u8 small, qd::u32 mask,
                                       qd::i64 big, qd::f64 precise) {
    qd::range_for(0, x.shape(0), [&](qd::i32 i) {
      qd::f32 v = x[i] * scale;
      qd::if_(v > 2.0f, [&] { out[i] = qd::sqrt(v); }).else_([&] { out[i] = qd::abs(v) + qd::floor(v); });
      g.grad()[i] = qd::max(v, 0.0f);
    });
    qd::range_for(m.shape(0), [&](qd::i32 i) {
      qd::var<int32_t> j = 0;
      qd::while_([&] { return j < m.shape(1); },
                 [&] {
                   m(i, j) = i * 10 + j;
                   j += 1;
                 });
    });
    qd::var<int32_t> count = 0;
    qd::range_for(x.shape(0), [&](qd::i32) { qd::atomic_add(count, 1); });
    qd::f32 r = qd::random<float>();
    qd::f32 first = qd::volatile_load(x[0]);
    qd::f32 edge = x.at(x.shape(0) + 5, qd::boundary::clamp);
    out[0] = qd::cast<float>(count) + qd::cast<qd::f32>(steps) + qd::select(flag, 1.0f, 0.0f) + qd::cast<float>(small) +
             qd::cast<float>(mask & 1u) + qd::cast<float>(big) + qd::cast<float>(precise) + first + edge +
             qd::min(r, 0.0f) + qd::pow(qd::exp(qd::log(qd::cos(qd::sin(qd::tanh(qd::ceil(first)))))), 0.0f) +
             qd::fma(first, 2.0f, 1.0f);
  });
  qd::ndarray<float, 1> x(8), out(8), g(8, qd::needs_grad);
  qd::ndarray<int32_t, 2> m({3, 4});
  x.from_host(std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f});
  k(x, g, m, out, 2.0f, 3, true, std::uint8_t{4}, 5u, int64_t{6}, 7.0);  // an int for qd::u8 would not compile
  auto o = out.to_host();
  // count 8, steps 3, flag 1, small 4, mask&1 1, big 6, precise 7, first 0.5, edge 4, min(r, 0) 0, pow(..., 0) 1,
  // fma(0.5, 2, 1) 2
  CHECK(o[0] == 8 + 3 + 1 + 4 + 1 + 6 + 7 + 0.5f + 4.0f + 0.0f + 1.0f + 2.0f);
  CHECK(o[3] == doctest::Approx(2.0f));  // sqrt(4)
  CHECK(o[1] == 2.0f + 2.0f);            // abs(2) + floor(2)
  CHECK(g.grad().to_host()[7] == 8.0f);
  CHECK(m.to_host()[2 * 4 + 3] == 23);
}
