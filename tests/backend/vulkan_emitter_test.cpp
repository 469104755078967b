// The GLSL emitter on a real Vulkan driver (lavapipe in CI): traced kernels lowered,
// emitted as GLSL compute shaders, compiled by shaderc, every module validated by
// spirv-val, run through the Vulkan device and compared with the reference interpreter
// run on the same tasks with the same random streams -- bitwise, except the math
// functions, which are held to the tolerances docs/backends.md states. Without a Vulkan
// device each test reports itself skipped, with the reason.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backend/vulkan_support.hpp"
#include "runtime/runtime_test_support.hpp"
#include "support/host_semantics.hpp"

using qd_test::kernel_arg;
using qd_test::run_options;
template <class T>
using lim = std::numeric_limits<T>;

namespace {

std::string element_text(qd::dtype t, const std::byte* p) {
  auto get = [&](auto v) {
    std::memcpy(&v, p, sizeof(v));
    return v;
  };
  switch (t) {
    case qd::dtype::f32: return std::to_string(get(0.0f)) + " (bits " + std::to_string(get(0u)) + ")";
    case qd::dtype::f64: return std::to_string(get(0.0)) + " (bits " + std::to_string(get(std::uint64_t{0})) + ")";
    case qd::dtype::i32: return std::to_string(get(std::int32_t{0}));
    case qd::dtype::u32: return std::to_string(get(std::uint32_t{0}));
    case qd::dtype::i64: return std::to_string(get(std::int64_t{0}));
    case qd::dtype::u8:
    case qd::dtype::boolean: return std::to_string(static_cast<int>(get(std::uint8_t{0})));
  }
  return "?";
}

struct both_runs {
  std::vector<kernel_arg> reference, vulkan;
  qd_test::run_result reference_result, vulkan_result;
};

// Runs `fn` on the reference interpreter and on Vulkan from the same arguments; every
// array must end bitwise equal, except those in `loose`, which the caller checks.
both_runs run_both(qd::backend::device& vk, const qd::ir::function& fn, const std::vector<kernel_arg>& args,
                   const run_options& o = {}, const std::vector<std::size_t>& loose = {}) {
  both_runs r{args, args, {}, {}};
  auto reference = qd::backend::reference::make_device();
  r.reference_result = qd_test::run_kernel(*reference, fn, r.reference, o);
  r.vulkan_result = qd_test::run_kernel(vk, fn, r.vulkan, o);
  for (int k = 0; k < 5; ++k) CHECK(r.vulkan_result.error[k] == r.reference_result.error[k]);
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!args[i].is_array || std::find(loose.begin(), loose.end(), i) != loose.end()) continue;
    const auto size = static_cast<std::size_t>(qd::size_of(fn.params[i].type));
    int shown = 0;
    for (std::size_t at = 0; at + size <= args[i].bytes.size(); at += size) {
      if (std::memcmp(r.reference[i].bytes.data() + at, r.vulkan[i].bytes.data() + at, size) == 0) continue;
      CAPTURE(i);
      CAPTURE(at / size);
      CHECK(element_text(fn.params[i].type, r.vulkan[i].bytes.data() + at) ==
            element_text(fn.params[i].type, r.reference[i].bytes.data() + at));
      if (++shown == 8) break;
    }
    if (shown) {
      MESSAGE(r.vulkan_result.source);
      break;
    }
    CHECK(r.reference[i].grad == r.vulkan[i].grad);
  }
  return r;
}

template <class T>
void check_integer_operators(qd::backend::device& vk) {
  using R = typename decltype(std::declval<qd::expr<T>>() + std::declval<qd::expr<T>>())::value_type;
  auto fn = qd_test::trace_kernel_ir([](qd::types::ndarray<T, 1> x, qd::types::ndarray<T, 1> y,
                                        qd::types::ndarray<R, 2> out) {
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      qd::expr<R> a = x[i];
      qd::expr<R> b = y[i];
      int c = 0;
      auto put = [&](const auto& v) { out(i, c++) = v; };
      auto flag = [&](const qd::boolean& v) { out(i, c++) = qd::cast<R>(v); };
      put(a + b), put(a - b), put(a * b), put(a / b), put(a % b);
      put(a & b), put(a | b), put(a ^ b), put(a << b), put(a >> b);
      put(qd::min(a, b)), put(qd::max(a, b)), put(-a), put(~a), put(qd::abs(a)), put(+a);
      flag(a == b), flag(a != b), flag(a < b), flag(a <= b), flag(a > b), flag(a >= b);
      flag(a > 0 && b > 0), flag(a > 0 || b > 0), flag(!(a > b));
      put(a * 3 - 7), put(a / 2), put(a % 3), put(7 - a), put(100 / a);
      put(a << 3), put(a >> 1), put(a & 0x5a);
      flag(a != 0 && b / a > 1);
    });
  });
  std::vector<T> xs, ys;
  for (T a : qd_test::interesting_values<T>())
    for (T b : qd_test::interesting_values<T>()) xs.push_back(a), ys.push_back(b);
  const auto n = static_cast<std::int64_t>(xs.size());
  const std::int64_t columns = 34;
  auto r = run_both(vk, fn, {kernel_arg::array(xs), kernel_arg::array(ys),
                             kernel_arg::array(std::vector<R>(static_cast<std::size_t>(n * columns)), {n, columns})});
  // And the host's semantics, independently of the interpreter.
  const auto got = r.vulkan[2].template values<R>();
  int mismatches = 0;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    const auto want = qd_test::integer_row<R>(static_cast<R>(xs[k]), static_cast<R>(ys[k]));
    REQUIRE(want.size() == static_cast<std::size_t>(columns));
    for (std::size_t c = 0; c < want.size(); ++c) mismatches += got[k * want.size() + c] != want[c];
  }
  CHECK(mismatches == 0);
}

template <class T>
void check_float_operators(qd::backend::device& vk) {
  auto fn = qd_test::trace_kernel_ir([](qd::types::ndarray<T, 1> x, qd::types::ndarray<T, 1> y,
                                        qd::types::ndarray<T, 2> out) {
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      qd::expr<T> a = x[i];
      qd::expr<T> b = y[i];
      int c = 0;
      auto put = [&](const qd::expr<T>& v) { out(i, c++) = v; };
      auto flag = [&](const qd::boolean& v) { out(i, c++) = qd::cast<T>(v); };
      put(a + b), put(a - b), put(a * b), put(a / b), put(-a), put(+a);
      put(a * 2.0), put(a + 1), put(1.5 - a), put(3 / a);
      flag(a == b), flag(a != b), flag(a < b), flag(a <= b), flag(a > b), flag(a >= b);
      flag(a < 0 || b < 0), flag(a > 0 && b > 0);
      put(qd::min(a, b)), put(qd::max(a, b)), put(qd::abs(a)), put(qd::floor(a)), put(qd::ceil(a));
      put(qd::fma(a, b, a)), put(qd::sqrt(qd::abs(a))), put(qd::select(a < b, a, b * 0.1));
    });
  });
  const std::vector<T> values = {T(0), T(-0.0), T(1), T(-1), T(0.1), T(-2.5), T(3.75), T(1e30), T(-7e-20),
                                 lim<T>::infinity(), -lim<T>::infinity(), lim<T>::quiet_NaN(), lim<T>::max(),
                                 lim<T>::min(), T(1) + lim<T>::epsilon(), T(12345.678)};
  std::vector<T> xs, ys;
  for (T a : values)
    for (T b : values) xs.push_back(a), ys.push_back(b);
  const auto n = static_cast<std::int64_t>(xs.size());
  run_both(vk, fn, {kernel_arg::array(xs), kernel_arg::array(ys),
                    kernel_arg::array(std::vector<T>(static_cast<std::size_t>(n * 26)), {n, 26})});
}

// Units in the last place between two floats of T (0 when equal or both NaN).
template <class T>
double ulps(T got, T want) {
  if ((std::isnan(got) && std::isnan(want)) || got == want) return 0;
  if (std::isnan(got) || std::isnan(want) || std::isinf(got) || std::isinf(want)) return 1e30;
  const T spacing = std::max(std::abs(std::nextafter(want, lim<T>::infinity()) - want), lim<T>::denorm_min());
  return static_cast<double>(std::abs(got - want) / spacing);
}

// exp, log, sin, cos, tanh and pow over many arguments, each within its stated bound of
// <cmath> (the reference interpreter's); returns the worst error of each, in ulps.
template <class T>
std::vector<double> check_math_functions(qd::backend::device& vk, const std::vector<double>& bounds) {
  auto fn = qd_test::trace_kernel_ir([](qd::types::ndarray<T, 1> x, qd::types::ndarray<T, 1> y,
                                        qd::types::ndarray<T, 2> out) {
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      qd::expr<T> a = x[i];
      qd::expr<T> positive = qd::abs(a);
      out(i, 0) = qd::exp(a);
      out(i, 1) = qd::log(positive);
      out(i, 2) = qd::sin(a);
      out(i, 3) = qd::cos(a);
      out(i, 4) = qd::tanh(a);
      out(i, 5) = qd::pow(positive, y[i]);
      out(i, 6) = qd::pow(a, qd::floor(y[i]));
    });
  });
  std::vector<T> xs, ys;
  for (int k = -3000; k <= 3000; ++k) xs.push_back(static_cast<T>(k) * T(0.0371));  // |x| < 112
  for (T v : {T(1e-3), T(-1e-5), T(1e-30), T(0.5), T(2), T(0.999), T(1.001), T(88.5), T(-87), T(700), T(-740),
              T(1000), T(-5000.5), T(6400), T(12345.6), T(1e5), T(-0.0), T(0), lim<T>::infinity(),
              -lim<T>::infinity(), lim<T>::quiet_NaN(), lim<T>::min(), lim<T>::max(), T(0.55), T(0.549), T(22.5)})
    xs.push_back(v);
  for (std::size_t k = 0; k < xs.size(); ++k) ys.push_back(T(0.37) * static_cast<T>(static_cast<int>(k % 29) - 14));
  const auto n = static_cast<std::int64_t>(xs.size());
  auto r = run_both(vk, fn,
                    {kernel_arg::array(xs), kernel_arg::array(ys),
                     kernel_arg::array(std::vector<T>(static_cast<std::size_t>(n * 7)), {n, 7})},
                    {}, {2});
  const auto got = r.vulkan[2].template values<T>(), want = r.reference[2].template values<T>();
  std::vector<double> worst(7, 0.0);
  for (std::size_t k = 0; k < xs.size(); ++k)
    for (std::size_t c = 0; c < 7; ++c) {
      // f64 sin and cos past 2.1e8, where the reduction is no longer exact: only bounded.
      if ((c == 2 || c == 3) && std::is_same_v<T, double> && std::abs(xs[k]) > T(2.1e8) && std::isfinite(xs[k])) {
        CHECK(std::abs(got[k * 7 + c]) <= T(1));
        continue;
      }
      const double e = ulps(got[k * 7 + c], want[k * 7 + c]);
      worst[c] = std::max(worst[c], e);
      if (e > bounds[c]) {
        CAPTURE(c);
        CAPTURE(xs[k]);
        CAPTURE(ys[k]);
        CHECK(got[k * 7 + c] == want[k * 7 + c]);
      }
    }
  return worst;
}

}  // namespace

TEST_CASE("emitted GLSL: integer operators of every type match the reference and the host, bit for bit") {
  auto vk = qd_test::open_vulkan();
  if (!vk) return;
  check_integer_operators<std::int32_t>(*vk);
  check_integer_operators<std::uint32_t>(*vk);
  check_integer_operators<std::int64_t>(*vk);
  check_integer_operators<std::uint8_t>(*vk);
}

TEST_CASE("emitted GLSL: f32 and f64 operators, comparisons and exact functions match bit for bit") {
  auto vk = qd_test::open_vulkan();
  if (!vk) return;
  check_float_operators<float>(*vk);
  check_float_operators<double>(*vk);
}

TEST_CASE("emitted GLSL: exp, log, sin, cos, tanh and pow are within their stated bounds of <cmath>") {
  auto vk = qd_test::open_vulkan();
  if (!vk) return;
  // The bounds docs/backends.md states (ulps; the last two columns: pow).
  const auto f32 = check_math_functions<float>(*vk, {2, 2, 2, 2, 3, 2, 2});
  const auto f64 = check_math_functions<double>(*vk, {2, 2, 2, 2, 3, 2, 2});
  MESSAGE("worst ulps, f32: exp " << f32[0] << " log " << f32[1] << " sin " << f32[2] << " cos " << f32[3]
                                  << " tanh " << f32[4] << " pow " << std::max(f32[5], f32[6]));
  MESSAGE("worst ulps, f64: exp " << f64[0] << " log " << f64[1] << " sin " << f64[2] << " cos " << f64[3]
                                  << " tanh " << f64[4] << " pow " << std::max(f64[5], f64[6]));
}
