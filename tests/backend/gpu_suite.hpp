// The per-backend suite's shared part (gpu_suite_test.cpp, gpu_suite_values.cpp, gpu_suite_graphs.cpp,
// gpu_suite_math.cpp: one program, backend_gpu_suite_test, in four translation units that
// compile in parallel): the arches, starting a program on one, QD_SUITE_CASE, helpers.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <numeric>
#include <optional>
#include <utility>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <quadrants/backend/cuda/driver.hpp>

#include "backend/compile_only_support.hpp"
#include "backend/suite_kernels.hpp"
#include "backend/suite_kernels_vec.hpp"
#include "runtime/runtime_test_support.hpp"
#include "support/host_semantics.hpp"
#include "support/tet_mesh.hpp"

namespace {

namespace kernels = qd_test::kernels;
using namespace qd_test;  // host_semantics.hpp
template <class T>
using lim = std::numeric_limits<T>;

struct on_cpu {
  static constexpr qd::arch arch = qd::arch::cpu;
  static constexpr const char* name = "cpu";
};
struct on_cuda {
  static constexpr qd::arch arch = qd::arch::cuda;
  static constexpr const char* name = "cuda";
};
struct on_amdgpu {
  static constexpr qd::arch arch = qd::arch::amdgpu;
  static constexpr const char* name = "amdgpu";
};
struct on_vulkan {  // lavapipe in CI; a separate ctest entry (backend/gpu_suite_vulkan)
  static constexpr qd::arch arch = qd::arch::vulkan;
  static constexpr const char* name = "vulkan";
};
struct on_reference {  // the IR interpreter, for the tests that check what it reports too
  static constexpr qd::arch arch = qd::arch::reference;
  static constexpr const char* name = "reference";
};

template <class A>
bool on_gpu() {
  return A::arch == qd::arch::cuda || A::arch == qd::arch::amdgpu;
}

// Graph kernels are recorded as device graphs (CUDA and HIP graphs, Vulkan command
// buffers); only CUDA and AMD fork their branches on streams of their own.
template <class A>
bool records_graphs() {
  return on_gpu<A>() || A::arch == qd::arch::vulkan;
}

// Starts a program on the arch, with no fallback; on a machine without that GPU (or
// Vulkan device) the test reports itself skipped, saying why, and returns false.
template <class A>
bool start(qd::config c = {}) {
  c.arch = A::arch;
  c.enable_fallback = false;
  try {
    qd::init(c);
    return true;
  } catch (const qd::error& e) {
    if (!on_gpu<A>() && A::arch != qd::arch::vulkan) throw;
    const std::string why = std::string("skipped on ") + A::name + ": " + e.what();
    MESSAGE(why);
    return false;
  }
}

template <class T>
bool close_ulps(T got, T want, int ulps) {
  if (same_float(got, want)) return true;
  T scale = std::max(std::abs(want), lim<T>::min());
  return std::abs(got - want) <= scale * lim<T>::epsilon() * static_cast<T>(ulps);
}

// u8 operands promote to i32 like C++'s int; the other integer types keep their own.
template <class T>
using promoted = typename decltype(std::declval<qd::expr<T>>() + std::declval<qd::expr<T>>())::value_type;
static_assert(std::is_same_v<promoted<std::uint8_t>, std::int32_t> &&
              std::is_same_v<promoted<std::int32_t>, std::int32_t> &&
              std::is_same_v<promoted<std::int64_t>, std::int64_t> &&
              std::is_same_v<promoted<std::uint32_t>, std::uint32_t>);
// Literals adopt the traced operand's type: x_f32 * 2.0 stays f32.
static_assert(std::is_same_v<decltype(std::declval<qd::f32>() * 2.0), qd::f32>);
static_assert(std::is_same_v<decltype(std::declval<qd::f64>() + 1), qd::f64>);
static_assert(std::is_same_v<decltype(1.5f - std::declval<qd::f64>()), qd::f64>);

// Runs an operator-table kernel (one row per operand pair, one column per operator)
// over every pair of `values` and compares each row with `row(a, b)` computed on the
// host, in the result type R; `same` is the comparison. The first ten mismatches are
// reported in detail.
template <class T, class R, class Kernel, class Row, class Same>
void check_operator_table(Kernel&& k, const std::vector<T>& values, Row&& row, Same&& same) {
  std::vector<T> xs, ys;
  for (T a : values)
    for (T b : values) xs.push_back(a), ys.push_back(b);
  const auto n = static_cast<std::int64_t>(xs.size());
  const auto columns = static_cast<std::int64_t>(row(R(0), R(1)).size());
  qd::ndarray<T, 1> x(n), y(n);
  qd::ndarray<R, 2> out({n, columns});
  x.from_host(xs);
  y.from_host(ys);
  k(x, y, out);
  auto got = out.to_host();
  int mismatches = 0;
  for (std::size_t r = 0; r < xs.size(); ++r) {
    auto want = row(static_cast<R>(xs[r]), static_cast<R>(ys[r]));
    for (std::size_t col = 0; col < want.size(); ++col) {
      R g = got[r * static_cast<std::size_t>(columns) + col];
      if (!same(g, want[col]) && ++mismatches <= 10) {
        CAPTURE(+xs[r]);
        CAPTURE(+ys[r]);
        CAPTURE(col);
        CHECK(+g == +want[col]);
      }
    }
  }
  CHECK(mismatches == 0);
}

template <class T>
void check_integer_operators() {
  using R = promoted<T>;
  check_operator_table<T, R>(kernels::integer_operators<T>(), interesting_values<T>(), integer_row<R>,
                             [](R a, R b) { return a == b; });
}

template <class T>
void check_float_operators() {
  const std::vector<T> values = {T(0),          T(-0.0),
                                 T(1),          T(-1),
                                 T(0.1),        T(-2.5),
                                 T(3.75),       T(1e30),
                                 T(-7e-20),     lim<T>::infinity(),
                                 lim<T>::max(), lim<T>::denorm_min()};
  check_operator_table<T, T>(kernels::float_operators<T>(), values, float_row<T>, same_float<T>);
}

// Correctly rounded functions agree exactly; the others within `ulps` of <cmath>
// (the GPU libraries document up to 4 ulp for powf, 2 for the rest).
template <class T>
void check_math_functions(int ulps) {
  auto k = kernels::math_functions<T>();
  std::vector<T> xs = {T(0),      T(1),  T(-1),     T(0.5),  T(-2.5), T(2.5), T(3.999),
                       T(-3.001), T(10), T(-20.75), T(1e-3), T(7.25), T(88)};
  std::vector<T> ys, zs;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    ys.push_back(T(0.75) * static_cast<T>(static_cast<int>(i % 5) - 2));
    zs.push_back(T(0.125) * static_cast<T>(i));
  }
  const T eps = std::is_same_v<T, float> ? T(1.0 / 1048576) : T(1.0 / 33554432.0 / 33554432.0);
  xs.push_back(T(1) + eps), ys.push_back(T(1) + eps), zs.push_back(T(-1));  // fused and unfused differ
  REQUIRE(std::fma(xs.back(), ys.back(), zs.back()) != xs.back() * ys.back() + zs.back());
  const auto n = static_cast<std::int64_t>(xs.size());
  const std::int64_t columns = 13;
  qd::ndarray<T, 1> x(n), y(n), z(n);
  qd::ndarray<T, 2> out({n, columns});
  x.from_host(xs), y.from_host(ys), z.from_host(zs);
  k(x, y, z, out);
  auto got = out.to_host();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const T a = xs[i], b = ys[i], c = zs[i], positive = std::abs(a) + T(0.5);
    const std::vector<T> want = {std::sqrt(positive),  std::abs(a),    std::floor(a),     std::ceil(a),
                                 std::min(a, b),       std::max(a, b), std::fma(a, b, c), std::exp(a),
                                 std::log(positive),   std::sin(a),    std::cos(a),       std::tanh(a),
                                 std::pow(positive, b)};
    for (std::size_t col = 0; col < want.size(); ++col) {
      T g = got[i * static_cast<std::size_t>(columns) + col];
      CAPTURE(col);
      CAPTURE(a);
      CAPTURE(b);
      if (col < 7)
        CHECK(same_float(g, want[col]));
      else
        CHECK(close_ulps(g, want[col], ulps));
    }
  }
}

template <class T>
void check_histogram() {
  auto k = kernels::histogram<T>();
  const std::int64_t n = sizeof(T) <= 2 ? 4000 : 200000;  // narrow bins must not wrap
  std::vector<std::int32_t> keys;
  for (std::int64_t i = 0; i < n; ++i) keys.push_back(static_cast<std::int32_t>((i * 7) % 1601));
  std::vector<T> up(16, T(0)), down(16, T(0));
  T all = 0, lo97 = lim<T>::max(), hi97 = lim<T>::lowest(), lo89 = lim<T>::max(), hi89 = lim<T>::lowest();
  for (std::int32_t key : keys) {
    up[static_cast<std::size_t>(key % 16)] = static_cast<T>(up[static_cast<std::size_t>(key % 16)] + 1);
    down[static_cast<std::size_t>(key % 16)] = static_cast<T>(down[static_cast<std::size_t>(key % 16)] - 2);
    all = static_cast<T>(all + 1);
    lo97 = std::min(lo97, static_cast<T>(key % 97)), hi97 = std::max(hi97, static_cast<T>(key % 97));
    lo89 = std::min(lo89, static_cast<T>(key % 89)), hi89 = std::max(hi89, static_cast<T>(key % 89));
  }
  qd::ndarray<std::int32_t, 1> dkeys(n);
  qd::ndarray<T, 1> dup(16), ddown(16), extremes(4);
  qd::ndarray<T, 0> dall;
  dkeys.from_host(keys);
  extremes.from_host(std::vector<T>{lim<T>::max(), lim<T>::lowest(), T(0), T(0)});
  k(dkeys, dup, ddown, dall, extremes);
  CHECK(dup.to_host() == up);
  CHECK(ddown.to_host() == down);
  CHECK(dall.to_host()[0] == all);
  CHECK(extremes.to_host() == std::vector<T>{lo97, hi97, lo89, hi89});
}

inline std::vector<std::int32_t> iota_values(std::int64_t n, std::int32_t scale, std::int32_t offset) {
  std::vector<std::int32_t> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(static_cast<std::int32_t>(i) * scale + offset);
  return v;
}

inline std::vector<float> iota_floats(int n, float scale) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i) * scale + 1.0f;
  return v;
}

// in * 2 + 1 over every element of an N-dimensional array of T, and the extents seen in the kernel.
template <class T, int N>
void check_copy_scale() {
  auto k = qd::kernel(
      "copy_scale", {"in", "out", "extents"},
      [](qd::types::ndarray<T, N> in, qd::types::ndarray<T, N> out, qd::types::ndarray<std::int32_t, 1> extents) {
        if constexpr (N == 0) {
          out() = qd::cast<T>(in() * 2 + 1);
        } else {
          [&]<std::size_t... D>(std::index_sequence<D...>) {
            qd::range_for(qd::ndrange(in.shape(static_cast<int>(D))...),
                          [&](auto... index) { out(index...) = qd::cast<T>(in(index...) * 2 + 1); });
          }
          (std::make_index_sequence<N>{});
        }
        for (int d = 0; d < N; ++d) extents[d] = in.shape(d);  // a trace-time C++ loop
      });
  std::array<std::int64_t, N> shape{};
  const std::array<std::int64_t, 4> dims = {5, 3, 4, 2};
  for (int d = 0; d < N; ++d) shape[static_cast<std::size_t>(d)] = dims[static_cast<std::size_t>(d)];
  auto make = [&] {
    if constexpr (N == 0)
      return qd::ndarray<T, 0>();
    else
      return qd::ndarray<T, N>(shape);
  };
  qd::ndarray<T, N> in = make(), out = make();
  qd::ndarray<std::int32_t, 1> extents(4);
  std::vector<T> values, want;
  for (std::int64_t i = 0; i < in.size(); ++i) {
    T v = std::is_floating_point_v<T> ? static_cast<T>(static_cast<double>(i) * 0.5 - 3.25)
          : std::is_signed_v<T>       ? static_cast<T>(i % 23 - 5)
                                      : static_cast<T>(i % 23);
    values.push_back(v);
    want.push_back(static_cast<T>(v * 2 + 1));
  }
  in.from_host(values);
  k(in, out, extents);
  CHECK(out.to_host() == want);
  auto e = extents.to_host();
  for (int d = 0; d < N; ++d) CHECK(e[static_cast<std::size_t>(d)] == shape[static_cast<std::size_t>(d)]);
}

template <class T>
void check_copy_scale_all_ranks() {
  const std::string element_type(qd::name(qd::dtype_of<T>));
  CAPTURE(element_type);
  check_copy_scale<T, 0>();
  check_copy_scale<T, 1>();
  check_copy_scale<T, 2>();
  check_copy_scale<T, 3>();
  check_copy_scale<T, 4>();
}

}  // namespace

TYPE_TO_STRING(on_cpu);
TYPE_TO_STRING(on_cuda);
TYPE_TO_STRING(on_amdgpu);
TYPE_TO_STRING(on_reference);
#define QD_SUITE_ARCHES on_cpu, on_cuda, on_amdgpu, on_vulkan

// QD_SUITE_CASE(title, A, arches...): a TEST_CASE_TEMPLATE whose body is compiled once
// for all arches. Each instance ("title<on_cuda>") sets suite_arch and calls the body
// with A = suite_arch, whose arch and name are read at run time; the kernels written in
// a body are then traced from one instantiation, not one per arch (a third of the time
// this file took to compile).
namespace {
struct suite_arch {
  static inline qd::arch arch = qd::arch::cpu;
  static inline const char* name = "cpu";
};
template <class Arch>
void run_suite_case(void (*body)()) {
  suite_arch::arch = Arch::arch;
  suite_arch::name = Arch::name;
  body();
}
}  // namespace
#define QD_SUITE_CASE_IMPL(body, title, A, ...)                                                           \
  template <class A>                                                                                      \
  static void body();                                                                                     \
  TEST_CASE_TEMPLATE(title, QdSuiteArch, __VA_ARGS__) { run_suite_case<QdSuiteArch>(&body<suite_arch>); } \
  template <class A>                                                                                      \
  static void body()
#define QD_SUITE_CASE(title, A, ...) QD_SUITE_CASE_IMPL(DOCTEST_ANONYMOUS(qd_suite_case_), title, A, __VA_ARGS__)
