// qd::vec and qd::mat (SPEC §11.1) on the CPU and the reference backend: arithmetic,
// products and functions against plain C++, variables, arrays of vectors and
// matrices, and their host side.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/suite_kernels_vec.hpp"
#include "runtime/runtime_test_support.hpp"

namespace {

using doctest::Contains;

struct on_cpu {
  static constexpr qd::arch arch = qd::arch::cpu;
};
struct on_reference {
  static constexpr qd::arch arch = qd::arch::reference;
};
#define QD_VEC_ARCHES on_cpu, on_reference

template <class A>
void start() {
  qd::init({.arch = A::arch});
}

// Types follow the scalar rules component by component.
static_assert(std::is_same_v<decltype(std::declval<qd::vec3f>() + std::declval<qd::vec3f>()), qd::vec3f>);
static_assert(std::is_same_v<decltype(std::declval<qd::vec3i>() * 2.0f), qd::vec3f>);
static_assert(std::is_same_v<decltype(std::declval<qd::vec3f>() * std::declval<qd::vec3d>()), qd::vec3d>);
static_assert(std::is_same_v<decltype(qd::dot(std::declval<qd::vec3f>(), std::declval<qd::vec3f>())), qd::f32>);
static_assert(std::is_same_v<decltype(qd::norm(std::declval<qd::vec2i>())), qd::f32>);
static_assert(std::is_same_v<decltype(std::declval<qd::mat3f>() * std::declval<qd::vec3f>()), qd::vec3f>);
static_assert(std::is_same_v<decltype(std::declval<qd::mat<float, 2, 3>>() * std::declval<qd::mat<float, 3, 4>>()),
                             qd::mat<float, 2, 4>>);
static_assert(std::is_same_v<decltype(qd::outer(std::declval<qd::vec2f>(), std::declval<qd::vec3f>())),
                             qd::mat<float, 2, 3>>);
static_assert(std::is_same_v<decltype(qd::transpose(std::declval<qd::mat<float, 2, 3>>())), qd::mat<float, 3, 2>>);
static_assert(std::is_same_v<decltype(qd::inverse(std::declval<qd::mat2i>())), qd::mat2f>);
static_assert(std::is_same_v<decltype(qd::determinant(std::declval<qd::mat4d>())), qd::f64>);
static_assert(std::is_same_v<decltype(qd::cross(std::declval<qd::var<qd::vec3f>>(), std::declval<qd::vec3f>())), qd::vec3f>);

}  // namespace

TEST_CASE_TEMPLATE("vector arithmetic and functions agree with plain C++", A, QD_VEC_ARCHES) {
  start<A>();
  qd_test::vec_checks::check_vec_ops();
}

TEST_CASE_TEMPLATE("matrix products, transpose, determinant, inverse and trace agree with plain C++", A, QD_VEC_ARCHES) {
  start<A>();
  qd_test::vec_checks::check_mat_ops();
}

TEST_CASE_TEMPLATE("vector and matrix variables: per-iteration locals, components, top-level reductions", A, QD_VEC_ARCHES) {
  start<A>();
  qd_test::vec_checks::check_vec_vars();
}

TEST_CASE_TEMPLATE("elements of vector and matrix arrays: assignment, component updates and atomics", A, QD_VEC_ARCHES) {
  start<A>();
  qd_test::vec_checks::check_vec_elements();
}

TEST_CASE("host arrays of vectors: shapes, round trips, and a span of the wrong length") {
  qd_test::init_cpu();
  qd::ndarray<qd::vec2d, 2> a({3, 4});
  CHECK(a.shape(0) == 3);
  CHECK(a.shape(1) == 4);
  CHECK(a.size() == 12);
  CHECK(a.storage_shape() == std::array<std::int64_t, 3>{3, 4, 2});
  std::vector<std::array<double, 2>> h(12);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = {static_cast<double>(i), -static_cast<double>(i)};
  a.from_host(std::span<const std::array<double, 2>>(h));
  CHECK(a.to_host() == h);
  std::vector<std::array<double, 2>> short_span(5);
  CHECK_THROWS_AS(a.from_host(short_span), qd::user_error);
  CHECK_THROWS_WITH(a.from_host(short_span), Contains("from_host"));
  qd::ndarray<qd::mat2f, 1> m(2);
  m.fill({{{1, 2}, {3, 4}}});
  CHECK(m.to_host()[1] == std::array<std::array<float, 2>, 2>{{{1, 2}, {3, 4}}});
}
