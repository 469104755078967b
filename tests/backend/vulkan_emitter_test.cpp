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
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "backend/suite_kernels.hpp"
#include "backend/vulkan_support.hpp"
#include "runtime/runtime_test_support.hpp"
#include "quadrants/base/float_to_int.hpp"
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
    case qd::dtype::i8: return std::to_string(static_cast<int>(get(std::int8_t{0})));
    case qd::dtype::i16: return std::to_string(get(std::int16_t{0}));
    case qd::dtype::u16: return std::to_string(get(std::uint16_t{0}));
    case qd::dtype::u64: return std::to_string(get(std::uint64_t{0}));
    case qd::dtype::f16: return "f16 bits " + std::to_string(get(std::uint16_t{0}));
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
  auto fn = qd_test::trace_kernel_ir(qd_test::kernels::integer_operators_body<T>());
  std::vector<T> xs, ys;
  for (T a : qd_test::interesting_values<T>())
    for (T b : qd_test::interesting_values<T>()) xs.push_back(a), ys.push_back(b);
  const auto n = static_cast<std::int64_t>(xs.size());
  const std::int64_t columns = 34;
  auto r = run_both(vk, fn,
                    {kernel_arg::array(xs), kernel_arg::array(ys),
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

// Float operands at the edges: zeros, infinities, NaN, the extremes, values near 1.
template <class T>
std::vector<T> float_edges() {
  return {T(0),
          T(-0.0),
          T(1),
          T(-1),
          T(0.1),
          T(-2.5),
          T(3.75),
          T(1e30),
          T(-7e-20),
          lim<T>::infinity(),
          -lim<T>::infinity(),
          lim<T>::quiet_NaN(),
          lim<T>::max(),
          lim<T>::min(),
          T(1) + lim<T>::epsilon(),
          T(12345.678)};
}

template <class T>
void check_float_operators(qd::backend::device& vk) {
  auto fn = qd_test::trace_kernel_ir(
      [](qd::types::ndarray<T, 1> x, qd::types::ndarray<T, 1> y, qd::types::ndarray<T, 2> out) {
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
  const std::vector<T> values = float_edges<T>();
  std::vector<T> xs, ys;
  for (T a : values)
    for (T b : values) xs.push_back(a), ys.push_back(b);
  const auto n = static_cast<std::int64_t>(xs.size());
  run_both(vk, fn,
           {kernel_arg::array(xs), kernel_arg::array(ys),
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
  auto fn = qd_test::trace_kernel_ir(
      [](qd::types::ndarray<T, 1> x, qd::types::ndarray<T, 1> y, qd::types::ndarray<T, 2> out) {
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
  for (T v : {T(1e-3),
              T(-1e-5),
              T(1e-30),
              T(0.5),
              T(2),
              T(0.999),
              T(1.001),
              T(88.5),
              T(-87),
              T(700),
              T(-740),
              T(1000),
              T(-5000.5),
              T(6400),
              T(12345.6),
              T(1e5),
              T(-0.0),
              T(0),
              lim<T>::infinity(),
              -lim<T>::infinity(),
              lim<T>::quiet_NaN(),
              lim<T>::min(),
              lim<T>::max(),
              T(0.55),
              T(0.549),
              T(22.5)})
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
  check_integer_operators<std::uint64_t>(*vk);
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
  MESSAGE("worst ulps, f32: exp " << f32[0] << " log " << f32[1] << " sin " << f32[2] << " cos " << f32[3] << " tanh "
                                  << f32[4] << " pow " << std::max(f32[5], f32[6]));
  MESSAGE("worst ulps, f64: exp " << f64[0] << " log " << f64[1] << " sin " << f64[2] << " cos " << f64[3] << " tanh "
                                  << f64[4] << " pow " << std::max(f64[5], f64[6]));
}

TEST_CASE("emitted GLSL: casts between every type, float-to-int saturation and select") {
  auto vk = qd_test::open_vulkan();
  if (!vk) return;
  auto fn = qd_test::trace_kernel_ir([](qd::types::ndarray<std::int32_t, 1> is, qd::types::ndarray<std::int64_t, 1> ls,
                                        qd::types::ndarray<float, 1> fs, qd::types::ndarray<double, 1> ds,
                                        qd::types::ndarray<double, 2> out, qd::types::ndarray<std::uint8_t, 2> small,
                                        qd::types::ndarray<std::int64_t, 2> ints) {
    qd::range_for(is.shape(0), [&](qd::i32 r) {
      auto i = is[r];
      auto l = ls[r];
      auto f = fs[r];
      auto d = ds[r];
      int c = 0;
      auto put = [&](const auto& v) { out(r, c++) = v; };
      put(qd::cast<std::int32_t>(f)), put(qd::cast<std::int32_t>(d)), put(qd::cast<std::int32_t>(l));
      put(qd::cast<std::uint32_t>(i)), put(qd::cast<std::uint8_t>(i)), put(qd::cast<float>(d));
      put(qd::cast<float>(i)), put(qd::cast<std::int64_t>(f)), put(qd::cast<std::int32_t>(qd::cast<bool>(i)));
      put(qd::cast<std::int32_t>(qd::cast<bool>(f))), put(qd::cast<std::uint32_t>(l)), put(qd::cast<float>(l));
      put(qd::select(i > 0, f, i)), put(qd::select(f < 0, -1, qd::i32(1))), put(qd::select(d > 0.5, l, i));
      put(qd::cast<std::uint32_t>(f)), put(qd::cast<std::uint32_t>(d)), put(qd::cast<std::uint8_t>(f));
      put(qd::cast<std::uint8_t>(d)), put(qd::cast<std::int64_t>(d)), put(qd::cast<double>(l));
      qd::i64 wide = i;
      qd::f64 wider = f;
      put(wide * 4), put(wider);
      small(r, 0) = qd::cast<std::uint8_t>(i);
      small(r, 1) = qd::cast<std::uint8_t>(qd::abs(f));
      small(r, 2) = qd::cast<std::uint8_t>(i + 250);
      ints(r, 0) = qd::cast<std::int64_t>(qd::cast<std::uint32_t>(i));
      ints(r, 1) = qd::cast<std::int64_t>(qd::cast<std::uint8_t>(l));
      ints(r, 2) = qd::cast<std::int64_t>(qd::cast<bool>(d));
    });
  });
  const std::vector<double> values = {0.0,
                                      -0.0,
                                      0.5,
                                      -0.5,
                                      1.0,
                                      -1.5,
                                      2.5,
                                      255.9,
                                      256.0,
                                      -129.7,
                                      3e9,
                                      -3e9,
                                      4294967295.5,
                                      4294967296.0,
                                      1e19,
                                      -1e19,
                                      9.3e18,
                                      -9.3e18,
                                      1e300,
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity(),
                                      std::numeric_limits<double>::quiet_NaN(),
                                      123456789.987,
                                      -2147483648.0,
                                      2147483647.0,
                                      2147483648.0};
  std::vector<std::int32_t> is;
  std::vector<std::int64_t> ls;
  std::vector<float> fs;
  std::vector<double> ds;
  for (double v : values) {
    ds.push_back(v);
    fs.push_back(static_cast<float>(v));
    is.push_back(qd::float_to_int<std::int32_t>(v));
    ls.push_back(qd::float_to_int<std::int64_t>(v) ^ 0x5a5a5a5a5a5a5ll);
  }
  const auto n = static_cast<std::int64_t>(values.size());
  run_both(*vk, fn,
           {kernel_arg::array(is), kernel_arg::array(ls), kernel_arg::array(fs), kernel_arg::array(ds),
            kernel_arg::array(std::vector<double>(static_cast<std::size_t>(n * 23)), {n, 23}),
            kernel_arg::array(std::vector<std::uint8_t>(static_cast<std::size_t>(n * 3)), {n, 3}),
            kernel_arg::array(std::vector<std::int64_t>(static_cast<std::size_t>(n * 3)), {n, 3})});
}

TEST_CASE("emitted GLSL: serial and parallel control flow, loops of every rank, break and continue") {
  auto vk = qd_test::open_vulkan();
  if (!vk) return;
  auto fn = qd_test::trace_kernel_ir([](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 2> y,
                                        qd::types::ndarray<std::int32_t, 1> prefix,
                                        qd::types::ndarray<std::int32_t, 1> g, qd::i32 a, qd::i32 b,
                                        qd::types::ndarray<std::int32_t, 2> a2, qd::types::ndarray<std::int32_t, 3> a3,
                                        qd::types::ndarray<std::int32_t, 4> a4) {
    qd::range_for(x.shape(0), qd::loop_config{.block_dim = 64}, [&](qd::i32 i) {
      y(i, 0) = 0;
      qd::if_(i % 5 == 0, [&] { qd::continue_(); });
      qd::var<std::int32_t> c = 0, found = -1;
      qd::range_for(0, 100, [&](qd::i32 j) {
        qd::if_(j % 2 == 1, [&] { qd::continue_(); });
        c += 1;
        qd::if_((i + j) % 7 == 0, [&] {
          found = j;
          qd::break_();
        });
      });
      y(i, 0) = c;
      y(i, 1) = found;
      qd::var<std::int64_t> z = i + 1;  // Collatz steps
      qd::var<std::int32_t> steps = 0;
      qd::while_([&] { return z != 1; },
                 [&] {
                   qd::if_(z % 2 == 0, [&] { z = z / 2; }).else_([&] { z = z * 3 + 1; });
                   steps += 1;
                 });
      y(i, 2) = steps;
      qd::var<std::int32_t> where = -1;
      qd::range_for(qd::ndrange(4, 5), [&](qd::i32 p, qd::i32 q) {
        qd::if_(q == 4, [&] { qd::continue_(); });
        qd::if_(p * 5 + q == i % 20, [&] {
          where = p * 10 + q;
          qd::break_();
        });
      });
      y(i, 3) = where;
      qd::var<bool> negative = x[i] < 0;
      qd::if_(!negative && x[i] != 0, [&] { y(i, 4) = 100; }).else_([&] { y(i, 4) = -100; });
    });
    qd::var<std::int32_t> s = 0;
    qd::range_for(x.shape(0), qd::loop_config{.serialize = true}, [&](qd::i32 i) {
      qd::if_(x[i] < -40, [&] { qd::break_(); });
      s += x[i];
      prefix[i] = s;
    });
    qd::var<std::int32_t> p = a, q = b, rounds = 0;  // gcd, serially
    qd::while_([&] { return q != 0; },
               [&] {
                 qd::var<std::int32_t> t = q;
                 q = p % q;
                 p = t;
                 rounds += 1;
               });
    g[0] = p;
    g[1] = rounds;
    g[2] = s;
    qd::range_for(qd::ndrange(a2.shape(0), a2.shape(1)), [&](qd::i32 i, qd::i32 j) { a2(i, j) += i * 100 + j + 1; });
    qd::range_for(qd::ndrange(a3.shape(0), a3.shape(1), a3.shape(2)),
                  [&](qd::i32 i, qd::i32 j, qd::i32 l) { a3(i, j, l) += i * 10000 + j * 100 + l + 1; });
    qd::range_for(qd::ndrange(2, 3, 4, 5), [&](qd::i32 i, qd::i32 j, qd::i32 l, qd::i32 m) {
      a4(i, j, l, m) += i * 1000 + j * 100 + l * 10 + m + 1;
    });
  });
  std::vector<std::int32_t> x;
  for (int i = 0; i < 997; ++i) x.push_back((i * 37) % 101 - 50);
  const auto n = static_cast<std::int64_t>(x.size());
  auto r =
      run_both(*vk, fn,
               {kernel_arg::array(x), kernel_arg::array(std::vector<std::int32_t>(x.size() * 5), {n, 5}),
                kernel_arg::array(std::vector<std::int32_t>(x.size())), kernel_arg::array(std::vector<std::int32_t>(3)),
                kernel_arg::scalar<std::int32_t>(1071), kernel_arg::scalar<std::int32_t>(462),
                kernel_arg::array(std::vector<std::int32_t>(37 * 29), {37, 29}),
                kernel_arg::array(std::vector<std::int32_t>(7 * 5 * 3), {7, 5, 3}),
                kernel_arg::array(std::vector<std::int32_t>(120), {2, 3, 4, 5})});
  CHECK(r.vulkan[3].values<std::int32_t>()[0] == 21);                                        // gcd(1071, 462)
  CHECK(r.vulkan_result.source.find("layout(local_size_x = 64) in;") != std::string::npos);  // block_dim
}

TEST_CASE(
    "emitted GLSL: atomics of every type, reductions, and the fallbacks for devices without 8-bit storage "
    "or float atomics") {
  auto vk = qd_test::open_vulkan();
  if (!vk) return;
  auto check = [&]<class T>(T, const std::optional<qd::codegen::glsl_target>& target) {
    CAPTURE(qd::name(qd::dtype_of<T>));
    auto fn = qd_test::trace_kernel_ir([](qd::types::ndarray<std::int32_t, 1> keys, qd::types::ndarray<T, 1> up,
                                          qd::types::ndarray<T, 1> down, qd::types::ndarray<T, 0> all,
                                          qd::types::ndarray<T, 1> extremes, qd::types::ndarray<T, 1> olds) {
      qd::var<T> lowest = lim<T>::max(), highest = lim<T>::lowest(), total = T(0);
      qd::range_for(keys.shape(0), [&](qd::i32 i) {
        up[keys[i] % 16] += 1;
        down[keys[i] % 16] -= 2;
        all() += 1;
        qd::atomic_min(extremes[0], qd::cast<T>(keys[i] % 97));
        qd::atomic_max(extremes[1], qd::cast<T>(keys[i] % 97));
        qd::atomic_min(lowest, qd::cast<T>(keys[i] % 89));
        qd::atomic_max(highest, qd::cast<T>(keys[i] % 89));
        total += qd::cast<T>(keys[i] % 3);
      });
      extremes[2] = lowest;
      extremes[3] = highest;
      extremes[4] = total;
      olds[0] = qd::atomic_add(extremes[5], T(5));  // serial: the old values
      olds[1] = qd::atomic_sub(extremes[6], T(5));
      olds[2] = qd::atomic_min(extremes[7], T(9));
      olds[3] = qd::atomic_max(extremes[7], T(11));
    });
    const std::size_t n = std::is_same_v<T, std::uint8_t> ? 1600 : 5000;  // u8 bins must not wrap
    std::vector<std::int32_t> keys;
    for (std::size_t i = 0; i < n; ++i) keys.push_back(static_cast<std::int32_t>((i * 7) % 1601));
    std::vector<T> extremes = {lim<T>::max(), lim<T>::lowest(), T(0), T(0), T(0), T(20), T(30), T(10)};
    run_options o;
    o.target = target;
    for (bool split : {false, true}) {
      o.split = split;
      CAPTURE(split);
      run_both(*vk, fn,
               {kernel_arg::array(keys), kernel_arg::array(std::vector<T>(16, T(0))),
                kernel_arg::array(std::vector<T>(16, T(0))), kernel_arg::array(std::vector<T>(1, T(0)), {}),
                kernel_arg::array(extremes), kernel_arg::array(std::vector<T>(4, T(0)))},
               o);
    }
  };
  for (const auto& target : {std::optional<qd::codegen::glsl_target>(), [&] {
                               auto t = vk->glsl_target();  // u8 through 32-bit words, f32 add by compare-and-swap
                               t.int8_storage = false;
                               t.f32_atomic_add = false;
                               return std::optional(t);
                             }()}) {
    CAPTURE(target.has_value());
    check(std::int32_t{}, target);
    check(std::uint32_t{}, target);
    check(std::int64_t{}, target);
    check(std::uint8_t{}, target);
    check(std::int8_t{}, target);
    check(std::int16_t{}, target);
    check(std::uint16_t{}, target);
    check(std::uint64_t{}, target);
    check(float{}, target);
    check(double{}, target);
  }
}

// The device's target and one without 8- and 16-bit storage or float atomics (elements and
// atomics through 32-bit words, compare-and-swap loops).
std::vector<std::optional<qd::codegen::glsl_target>> targets_with_fallbacks(qd::backend::vulkan::vulkan_device& vk) {
  auto t = vk.glsl_target();
  t.int8_storage = t.int16_storage = t.f32_atomic_add = t.f64_atomic_add = false;
  return {std::nullopt, t};
}

TEST_CASE(
    "emitted GLSL: the third wave's float functions match the reference bit for bit where exact, within bounds "
    "elsewhere") {
  auto vk = qd_test::open_vulkan();
  if (!vk) return;
  auto check = [&]<class T>(T) {
    CAPTURE(qd::name(qd::dtype_of<T>));
    auto fn = qd_test::trace_kernel_ir([](qd::types::ndarray<T, 1> x, qd::types::ndarray<T, 1> y,
                                          qd::types::ndarray<T, 2> exact, qd::types::ndarray<T, 2> close,
                                          qd::types::ndarray<std::int32_t, 2> flags) {
      qd::range_for(x.shape(0), [&](qd::i32 i) {
        qd::expr<T> a = x[i];
        qd::expr<T> b = y[i];
        int c = 0, d = 0;
        auto put = [&](const qd::expr<T>& v) { exact(i, c++) = v; };
        auto near = [&](const qd::expr<T>& v) { close(i, d++) = v; };
        put(qd::round(a)), put(qd::trunc(a)), put(qd::fmod(a, b)), put(qd::floordiv(a, b)), put(qd::floormod(a, b));
        put(qd::rsqrt(qd::abs(a))), put(a * T(0)), put(a * T(-0.0)), put(a + T(0)), put(T(0) - a), put(qd::sign(a));
        near(qd::tan(a)), near(qd::asin(b / (qd::abs(b) + T(1)))), near(qd::acos(a / (qd::abs(a) + T(1))));
        near(qd::atan2(a, b)), near(qd::log2(qd::abs(a))), near(qd::exp2(b));
        flags(i, 0) = qd::cast<std::int32_t>(qd::isnan(a));
        flags(i, 1) = qd::cast<std::int32_t>(qd::isinf(a));
        flags(i, 2) = qd::cast<std::int32_t>(qd::isfinite(a));
      });
    });
    std::vector<T> values = float_edges<T>();
    for (T v : {T(0.5), lim<T>::denorm_min(), T(-0.49999997), T(2.5e-3), T(100.25), T(-1e6)}) values.push_back(v);
    std::vector<T> xs, ys;
    for (T a : values)
      for (T b : values) xs.push_back(a), ys.push_back(b);
    const auto n = static_cast<std::int64_t>(xs.size());
    auto r = run_both(*vk, fn,
                      {kernel_arg::array(xs), kernel_arg::array(ys),
                       kernel_arg::array(std::vector<T>(static_cast<std::size_t>(n * 11)), {n, 11}),
                       kernel_arg::array(std::vector<T>(static_cast<std::size_t>(n * 6)), {n, 6}),
                       kernel_arg::array(std::vector<std::int32_t>(static_cast<std::size_t>(n * 3)), {n, 3})},
                      {}, {3});
    const auto got = r.vulkan[3].template values<T>(), want = r.reference[3].template values<T>();
    for (std::size_t k = 0; k < got.size(); ++k) {
      const T a = xs[k / 6];
      // f64 tan past 2.1e8: its reduction is no longer exact (as sin and cos; docs/backends.md).
      if (k % 6 == 0 && std::is_same_v<T, double> && std::isfinite(a) && std::abs(a) > T(2.1e8)) continue;
      if (ulps(got[k], want[k]) > 2) {
        CAPTURE(k % 6);
        CAPTURE(a);
        CAPTURE(ys[k / 6]);
        CHECK(got[k] == want[k]);
      }
    }
  };
  check(float{});
  check(double{});
}

TEST_CASE(
    "emitted GLSL: i8, i16, u16, u64 and f16 elements, casts, bit functions and every atomic match the reference, "
    "with and without 8- and 16-bit storage") {
  auto vk = qd_test::open_vulkan();
  if (!vk) return;
  auto check = [&]<class T>(T, const std::optional<qd::codegen::glsl_target>& target) {
    CAPTURE(qd::name(qd::dtype_of<T>));
    auto fn = qd_test::trace_kernel_ir([](qd::types::ndarray<T, 1> x, qd::types::ndarray<T, 1> v,
                                          qd::types::ndarray<T, 1> olds, qd::types::ndarray<T, 1> shared,
                                          qd::types::ndarray<float, 2> wide, qd::types::ndarray<std::int32_t, 2> bits) {
      int k = 0;
      auto rec = [&](const qd::expr<T>& e) { olds[k++] = e; };
      rec(qd::atomic_mul(x[0], v[0]));
      if constexpr (std::is_integral_v<T>) {
        rec(qd::atomic_and(x[1], v[1]));
        rec(qd::atomic_or(x[2], v[2]));
        rec(qd::atomic_xor(x[3], v[3]));
      }
      rec(qd::atomic_exchange(x[4], v[4]));
      rec(qd::atomic_cas(x[5], x[5], v[5]));  // swaps
      rec(qd::atomic_cas(x[6], v[6], v[7]));  // x[6] does not hold v[6]: stays
      rec(qd::atomic_min(x[7], v[8]));
      qd::var<T> w = x[8];  // a variable: the same semantics, no atomics
      rec(qd::atomic_mul(w, v[9]));
      rec(qd::atomic_cas(w, w, v[10]));
      rec(qd::atomic_max(w, v[11]));
      x[8] = w;
      qd::range_for(x.shape(0), [&](qd::i32 i) {
        if constexpr (std::is_integral_v<T>) {  // contended: order-independent results
          qd::atomic_xor(shared[0], x[i]);
          qd::atomic_or(shared[1], qd::cast<T>(qd::cast<T>(1) << qd::cast<T>(i % (8 * static_cast<int>(sizeof(T))))));
          qd::atomic_and(shared[2], qd::cast<T>(~(qd::cast<T>(1) << qd::cast<T>(i % 5))));
          qd::atomic_add(shared[3], x[i]);
          bits(i, 0) = qd::popcnt(x[i]), bits(i, 1) = qd::clz(x[i]), bits(i, 2) = qd::ffs(x[i]);
          bits(i, 3) = qd::cast<std::int32_t>(qd::cast<T>(qd::floordiv(x[i], v[i % 12])));
          bits(i, 4) = qd::cast<std::int32_t>(qd::cast<T>(qd::floormod(x[i], v[i % 12])));
        } else {
          qd::atomic_add(shared[0], qd::cast<T>(0.5f));  // f16: exact sums
          qd::atomic_max(shared[1], x[i]);
          qd::atomic_min(shared[2], x[i]);
        }
        wide(i, 0) = qd::cast<float>(x[i]);
        wide(i, 1) = qd::cast<float>(qd::cast<T>(qd::cast<float>(x[i]) * 3.0f));
        wide(i, 2) = qd::cast<float>(qd::cast<T>(qd::cast<double>(v[i % 12]) * 1e-3));
      });
    });
    std::vector<T> x, v;
    for (int i = 0; i < 61; ++i) x.push_back(static_cast<T>(static_cast<float>((i * 37) % 101 - 50) * 0.75f));
    for (int i = 0; i < 12; ++i) v.push_back(static_cast<T>(static_cast<float>(i % 5) + 2.0f));
    if constexpr (std::is_integral_v<T>) x[9] = lim<T>::min(), x[10] = lim<T>::max(), v[3] = lim<T>::max();
    std::vector<T> shared = {T(0), T(0), static_cast<T>(-1.0f), T(0)};
    if constexpr (!std::is_integral_v<T>) shared = {T(0), lim<T>::lowest(), lim<T>::max(), T(0)};
    run_options o;
    o.target = target;
    run_both(*vk, fn,
             {kernel_arg::array(x), kernel_arg::array(v), kernel_arg::array(std::vector<T>(12)),
              kernel_arg::array(shared), kernel_arg::array(std::vector<float>(61 * 3), {61, 3}),
              kernel_arg::array(std::vector<std::int32_t>(61 * 5), {61, 5})},
             o);
  };
  for (const auto& target : targets_with_fallbacks(*vk)) {
    CAPTURE(target.has_value());
    check(std::int8_t{}, target);
    check(std::int16_t{}, target);
    check(std::uint16_t{}, target);
    check(std::uint64_t{}, target);
    check(std::int32_t{}, target);
    check(float{}, target);
    check(double{}, target);
    check(qd::half{}, target);
  }
}

TEST_CASE("emitted GLSL: random numbers match the reference's streams bit for bit, serial and parallel") {
  auto vk = qd_test::open_vulkan();
  if (!vk) return;
  auto fn = qd_test::trace_kernel_ir([](qd::types::ndarray<float, 1> f, qd::types::ndarray<double, 1> d,
                                        qd::types::ndarray<std::uint32_t, 1> u, qd::types::ndarray<std::int32_t, 1> s,
                                        qd::types::ndarray<std::int64_t, 1> l, qd::types::ndarray<float, 0> serial,
                                        qd::types::ndarray<float, 2> grid) {
    qd::range_for(qd::ndrange(grid.shape(0), grid.shape(1)),
                  [&](qd::i32 i, qd::i32 j) { grid(i, j) = qd::random<float>(); });
    qd::range_for(f.shape(0), [&](qd::i32 i) {
      f[i] = qd::random<float>();
      d[i] = qd::random<double>();
      u[i] = qd::random<std::uint32_t>();
      s[i] = qd::random<std::int32_t>();
      l[i] = qd::random<std::int64_t>();
    });
    serial() = qd::random();
  });
  const std::size_t n = 3000;
  for (std::uint64_t launch : {0u, 7u}) {
    run_options o;
    o.launch_no = launch;
    auto r =
        run_both(*vk, fn,
                 {kernel_arg::array(std::vector<float>(n)), kernel_arg::array(std::vector<double>(n)),
                  kernel_arg::array(std::vector<std::uint32_t>(n)), kernel_arg::array(std::vector<std::int32_t>(n)),
                  kernel_arg::array(std::vector<std::int64_t>(n)), kernel_arg::array(std::vector<float>(1), {}),
                  kernel_arg::array(std::vector<float>(40 * 30), {40, 30})},
                 o);
    const auto f = r.vulkan[0].values<float>();
    CHECK(std::all_of(f.begin(), f.end(), [](float v) { return v >= 0.0f && v < 1.0f; }));
    CHECK(std::adjacent_find(f.begin(), f.end()) == f.end());  // not a constant
  }
}

TEST_CASE(
    "emitted GLSL: bounds checks report the first out-of-range access as the reference does; clamped "
    "reads, volatile loads and gradients") {
  auto vk = qd_test::open_vulkan();
  if (!vk) return;
  auto oob = qd_test::trace_kernel_ir(
      [](qd::types::ndarray<float, 2> x, qd::i32 n) { qd::range_for(n, [&](qd::i32 i) { x(i % 3, i) = 1.0f; }); });
  run_options checked;
  checked.bounds_checks = true;
  auto r = run_both(
      *vk, oob, {kernel_arg::array(std::vector<float>(3 * 8), {3, 8}), kernel_arg::scalar<std::int32_t>(8)}, checked);
  CHECK(r.vulkan_result.error[0] == 0);
  r = run_both(*vk, oob, {kernel_arg::array(std::vector<float>(3 * 8), {3, 8}), kernel_arg::scalar<std::int32_t>(9)},
               checked, {0});
  CHECK(r.vulkan_result.error[0] == 1);  // param 0, dim 1, index 8, extent 8
  CHECK(r.vulkan_result.error[2] == 1);
  CHECK(r.vulkan_result.error[3] == 8);
  CHECK(r.vulkan_result.error[4] == 8);

  auto fn = qd_test::trace_kernel_ir([](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 2> m,
                                        qd::types::ndarray<float, 1> edges, qd::types::ndarray<std::int32_t, 1> medges,
                                        qd::types::ndarray<float, 1> blur, qd::types::ndarray<std::int32_t, 2> vol,
                                        qd::types::ndarray<float, 1, qd::needs_grad> g,
                                        qd::types::ndarray<float, 1> plain) {
    auto n = x.shape(0);
    edges[0] = x.at(-5, qd::boundary::clamp);
    edges[1] = x.at(n + 1000, qd::boundary::clamp);
    auto h = m.shape(0), w = m.shape(1);
    medges[0] = m.at(-1, -1, qd::boundary::clamp);
    medges[1] = m.at(h, w, qd::boundary::clamp);
    medges[2] = m.at(1, w + 10, qd::boundary::clamp);
    qd::range_for(n, [&](qd::i32 i) { blur[i] = x.at(i - 1, qd::boundary::clamp) + x.at(i + 1, qd::boundary::clamp); });
    qd::range_for(m.shape(0), [&](qd::i32 i) {
      auto before = m(i, 0);
      m(i, 0) = before * 2 + 1;
      vol(i, 0) = before;
      vol(i, 1) = qd::volatile_load(m(i, 0));
    });
    qd::range_for(g.shape(0), [&](qd::i32 i) {
      g.grad()[i] = g[i] * 2;
      plain[i] = g.grad()[i] + 1;
    });
  });
  std::vector<float> x(50), gx(20);
  std::iota(x.begin(), x.end(), 1.0f);
  std::iota(gx.begin(), gx.end(), -3.0f);
  std::vector<std::int32_t> m(6 * 7);
  std::iota(m.begin(), m.end(), 10);
  std::vector<kernel_arg> args = {kernel_arg::array(x),
                                  kernel_arg::array(m, {6, 7}),
                                  kernel_arg::array(std::vector<float>(2)),
                                  kernel_arg::array(std::vector<std::int32_t>(3)),
                                  kernel_arg::array(std::vector<float>(50)),
                                  kernel_arg::array(std::vector<std::int32_t>(12), {6, 2}),
                                  kernel_arg::array(gx),
                                  kernel_arg::array(std::vector<float>(20))};
  args[6].grad = args[6].bytes;
  for (bool checks : {false, true}) {
    run_options o;
    o.bounds_checks = checks;
    run_both(*vk, fn, args, o);
  }
}

TEST_CASE("emitted GLSL: qd::print writes what the reference prints; loop bounds wider than i32 are reported") {
  auto vk = qd_test::open_vulkan();
  if (!vk) return;
  auto fn = qd_test::trace_kernel_ir(
      [](qd::types::ndarray<float, 1> x, qd::i32 n, qd::i64 big, qd::u32 u, qd::u8 b, qd::boolean flag, qd::f64 d) {
        qd::print("x0 =", x[0], "n =", n, "100% done");
        qd::print(big, u, b, flag, d, 42, 2.5, "tab\there", "quote\"s");
        qd::range_for(n, [&](qd::i32 i) { qd::print("item", i, "squared", i * i); });
      });
  auto args = std::vector<kernel_arg>{kernel_arg::array(std::vector<float>{2.5f}),
                                      kernel_arg::scalar<std::int32_t>(5),
                                      kernel_arg::scalar<std::int64_t>(-9000000000LL),
                                      kernel_arg::scalar<std::uint32_t>(4000000000u),
                                      kernel_arg::scalar<std::uint8_t>(200),
                                      kernel_arg::scalar<bool>(true),
                                      kernel_arg::scalar<double>(0.125)};
  auto reference = qd::backend::reference::make_device();
  std::vector<kernel_arg> a1 = args, a2 = args;
  auto sorted_lines = [](const std::string& text) {
    auto lines = qd_test::lines_of(text);
    std::sort(lines.begin() + std::min<std::ptrdiff_t>(2, static_cast<std::ptrdiff_t>(lines.size())), lines.end());
    return lines;
  };
  const auto want = sorted_lines(qd_test::capture_stdout([&] { qd_test::run_kernel(*reference, fn, a1); }));
  const auto got = sorted_lines(qd_test::capture_stdout([&] { qd_test::run_kernel(*vk, fn, a2); }));
  REQUIRE(want.size() == 7);
  CHECK(want[1] == "-9000000000 4000000000 200 1 0.125 42 2.5 tab\there quote\"s");
  CHECK(got == want);

  auto wide = qd_test::trace_kernel_ir([](qd::types::ndarray<std::int32_t, 1> hits, qd::i64 lo, qd::i64 hi) {
    qd::range_for(lo, hi, [&](qd::i32) { hits[0] += 1; });
  });
  auto r = run_both(*vk, wide,
                    {kernel_arg::array(std::vector<std::int32_t>(1)), kernel_arg::scalar<std::int64_t>(-3),
                     kernel_arg::scalar<std::int64_t>(40)});
  CHECK(r.vulkan[0].values<std::int32_t>()[0] == 43);
  r = run_both(*vk, wide,
               {kernel_arg::array(std::vector<std::int32_t>(1)), kernel_arg::scalar<std::int64_t>(0),
                kernel_arg::scalar<std::int64_t>(5000000000LL)});
  CHECK(r.vulkan_result.error[0] == 2);
  CHECK(r.vulkan_result.error[3] == 5000000000LL);
}

TEST_CASE(
    "emitted GLSL: a kernel's whole and split variants match the reference (top-level values in "
    "temporaries, recomputed, or carried)") {
  auto vk = qd_test::open_vulkan();
  if (!vk) return;
  auto fn = qd_test::trace_kernel_ir([](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> out,
                                        qd::types::ndarray<float, 1> fx, qd::types::ndarray<float, 1> fout, qd::i32 s) {
    qd::var<std::int32_t> total = 0;
    qd::range_for(x.shape(0), [&](qd::i32 i) { total += x[i]; });
    qd::var<float> ftotal = 0.0f, top = -1e30f;
    qd::range_for(fx.shape(0), [&](qd::i32 i) {
      ftotal += fx[i];
      qd::atomic_max(top, fx[i]);
    });
    qd::i32 scaled = s * 3 + 1;
    qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = total + i * scaled; });
    qd::range_for(fout.shape(0), [&](qd::i32 i) { fout[i] = ftotal * 0.5f + top; });
  });
  std::vector<std::int32_t> x(4097);
  std::vector<float> fx(3001);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int32_t>(i % 17) - 8;
  for (std::size_t i = 0; i < fx.size(); ++i) fx[i] = static_cast<float>(i % 9);  // exact sums in any order
  for (bool split : {false, true}) {
    run_options o;
    o.split = split;
    auto r = run_both(*vk, fn,
                      {kernel_arg::array(x), kernel_arg::array(std::vector<std::int32_t>(100)), kernel_arg::array(fx),
                       kernel_arg::array(std::vector<float>(10)), kernel_arg::scalar<std::int32_t>(5)},
                      o);
    CHECK(r.vulkan_result.tasks >= (split ? 4u : 1u));
  }
}

TEST_CASE("emitted GLSL: what the device lacks is a qd::user_error naming the type and the feature") {
  auto vk = qd_test::open_vulkan();
  if (!vk) return;
  auto doubles = qd_test::trace_kernel_ir(
      [](qd::types::ndarray<double, 1> d) { qd::range_for(d.shape(0), [&](qd::i32 i) { d[i] = d[i] * 2.0; }); });
  auto wide_atomics = qd_test::trace_kernel_ir([](qd::types::ndarray<std::int64_t, 1> a) {
    qd::range_for(a.shape(0), [&](qd::i32 i) { qd::atomic_add(a[0], qd::cast<std::int64_t>(i)); });
  });
  auto big_block = qd_test::trace_kernel_ir([](qd::types::ndarray<float, 1> f) {
    qd::range_for(f.shape(0), qd::loop_config{.block_dim = 512}, [&](qd::i32 i) { f[i] = 1.0f; });
  });
  qd::codegen::glsl_target t = vk->glsl_target();
  t.f64 = false;
  t.i64_atomics = false;
  auto args = std::vector<kernel_arg>{kernel_arg::array(std::vector<double>(4))};
  run_options o;
  o.target = t;
  CHECK_THROWS_WITH_AS(qd_test::run_kernel(*vk, doubles, args, o),
                       doctest::Contains("kernel 'test': f64 values need the Vulkan device feature shaderFloat64"),
                       qd::user_error);
  args = {kernel_arg::array(std::vector<std::int64_t>(4))};
  CHECK_THROWS_WITH_AS(qd_test::run_kernel(*vk, wide_atomics, args, o),
                       doctest::Contains("i64 atomics need the Vulkan device feature shaderBufferInt64Atomics"),
                       qd::user_error);
  args = {kernel_arg::array(std::vector<float>(4))};
  t = vk->glsl_target();
  t.max_workgroup_size = 256;
  o.target = t;
  CHECK_THROWS_WITH_AS(qd_test::run_kernel(*vk, big_block, args, o),
                       doctest::Contains("block_dim = 512} is more than this Vulkan device's largest workgroup (256"),
                       qd::user_error);
}
