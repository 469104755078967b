// qd::mat<T, R, C>: a small row-major matrix of traced scalars, unrolled at trace time
//. `*` of two matrices, or of a matrix and a vector, is the product.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "quadrants/lang/vec.hpp"

namespace qd::inline v0 {

template <element_type T, int R, int C>
class mat;

namespace detail {

// What a matrix-valued operand is: a qd::mat, a qd::var of one or an element of an
// array of matrices; its value() is the qd::mat it holds now.
template <class A>
struct matrix_traits {
  static constexpr bool value = false;
};
template <element_type T, int R, int C>
struct matrix_traits<mat<T, R, C>> {
  static constexpr bool value = true;
  using scalar = T;
  static constexpr int rows = R;
  static constexpr int cols = C;
};

}  // namespace detail

template <class A>
concept matrix_like = detail::matrix_traits<std::remove_cvref_t<A>>::value;

namespace detail {
template <matrix_like A>
inline constexpr int matrix_rows = matrix_traits<std::remove_cvref_t<A>>::rows;
template <matrix_like A>
inline constexpr int matrix_cols = matrix_traits<std::remove_cvref_t<A>>::cols;
template <matrix_like A>
using matrix_scalar = typename matrix_traits<std::remove_cvref_t<A>>::scalar;

// The qd::mat<S, R, C> whose entry (i, j) is f(i, j); S is the type f returns.
template <int R, int C, class F>
auto generate_mat(F&& f) {
  using S = typename decltype(f(0, 0))::value_type;
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return mat<S, R, C>::from_rows(
        std::array<vec<S, C>, R>{generate_vec<C>([&](int j) { return expr<S>(f(static_cast<int>(I), j)); })...});
  }
  (std::make_index_sequence<static_cast<std::size_t>(R)>{});
}

template <matrix_like A>
auto mat_value(const A& a) {
  return a.value();
}
}  // namespace detail

template <element_type T, int R, int C>
class mat {
  static_assert(R >= 1 && C >= 1, "qd::mat needs at least one row and one column");
  static_assert(!std::is_same_v<T, bool>, "qd::mat<bool, R, C> is not supported; use std::int32_t entries");

 public:
  using value_type = T;
  static constexpr int rows = R;
  static constexpr int cols = C;

  // R * C entries, row-major: qd::mat2f(a00, a01, a10, a11).
  template <class... A>
  requires(sizeof...(A) == R * C && R * C > 1 && (operand<A> && ...)) mat(const A&... entries)
      : mat(rows_of(std::array<expr<T>, static_cast<std::size_t>(R* C)>{checked(entries)...})) {}

  // R row vectors of C components each: qd::mat3f(row0, row1, row2).
  template <class... V>
  requires(sizeof...(V) == R && (vector_like<V> && ...)) mat(const V&... row_vectors) : r_{as_row(row_vectors)...} {}

  // Another matrix of the same shape whose type converts without loss.
  template <matrix_like M>
  requires(!std::is_same_v<std::remove_cvref_t<M>, mat> && detail::matrix_rows<M> == R && detail::matrix_cols<M> == C &&
           implicitly_convertible(dtype_of<detail::matrix_scalar<M>>, dtype_of<T>)) mat(const M& other)
      : mat(converted(detail::mat_value(other))) {}

  static mat zero() {
    return detail::generate_mat<R, C>([](int, int) { return expr<T>(0); });
  }
  static mat identity() requires(R == C) {
    return detail::generate_mat<R, C>([](int i, int j) { return expr<T>(i == j ? 1 : 0); });
  }
  static mat from_rows(const std::array<vec<T, C>, R>& r) { return mat(r); }

  // Entry (i, j), row i and column j (C++ integers).
  const expr<T>& operator()(int i, int j) const {
    return r_[detail::component(i, R, "qd::mat row")][static_cast<int>(detail::component(j, C, "qd::mat column"))];
  }
  const vec<T, C>& row(int i) const { return r_[detail::component(i, R, "qd::mat row")]; }
  vec<T, R> col(int j) const {
    detail::component(j, C, "qd::mat column");
    return detail::generate_vec<R>([&](int i) { return r_[static_cast<std::size_t>(i)][j]; });
  }

  mat value() const { return *this; }

 private:
  explicit mat(const std::array<vec<T, C>, R>& r) : r_(r) {}

  template <class A>
  static expr<T> checked(const A& a) {
    static_assert(detail::assignable_to<A>(dtype_of<T>),
                  "a qd::mat entry does not convert to the matrix's type without loss; use qd::cast<T>(value)");
    return expr<T>::from_id(detail::value_id(a, dtype_of<T>));
  }
  template <class V>
  static vec<T, C> as_row(const V& v) {
    static_assert(detail::vector_size<V> == C, "qd::mat from rows: each row vector needs one component per column");
    return vec<T, C>(v);
  }
  static std::array<vec<T, C>, R> rows_of(const std::array<expr<T>, static_cast<std::size_t>(R* C)>& e) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::array<vec<T, C>, R>{detail::generate_vec<C>(
          [&](int j) { return e[I * static_cast<std::size_t>(C) + static_cast<std::size_t>(j)]; })...};
    }
    (std::make_index_sequence<static_cast<std::size_t>(R)>{});
  }
  template <class U>
  static std::array<vec<T, C>, R> converted(const mat<U, R, C>& m) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::array<vec<T, C>, R>{vec<T, C>(m.row(static_cast<int>(I)))...};
    }
    (std::make_index_sequence<static_cast<std::size_t>(R)>{});
  }

  std::array<vec<T, C>, R> r_;
};

using mat2f = mat<float, 2, 2>;
using mat3f = mat<float, 3, 3>;
using mat4f = mat<float, 4, 4>;
using mat2d = mat<double, 2, 2>;
using mat3d = mat<double, 3, 3>;
using mat4d = mat<double, 4, 4>;
using mat2i = mat<std::int32_t, 2, 2>;
using mat3i = mat<std::int32_t, 3, 3>;
using mat4i = mat<std::int32_t, 4, 4>;

namespace detail {

template <class A, class B>
constexpr void check_same_shape() {
  static_assert(matrix_rows<A> == matrix_rows<B> && matrix_cols<A> == matrix_cols<B>,
                "an elementwise operation on matrices of different shapes");
}

template <class A, class F>
auto map_entries(const A& a, F&& f) {
  auto m = mat_value(a);
  return generate_mat<matrix_rows<A>, matrix_cols<A>>([&](int i, int j) { return f(m(i, j)); });
}

template <class M>
constexpr void check_square(const char*) {
  static_assert(matrix_rows<M> == matrix_cols<M>, "this matrix function needs a square matrix");
  static_assert(matrix_rows<M> <= 4, "determinant and inverse are unrolled for matrices up to 4x4");
}

// The (R-1)x(C-1) matrix without row r and column c.
template <class T, int N>
mat<T, N - 1, N - 1> minor_of(const mat<T, N, N>& m, int r, int c) {
  return generate_mat<N - 1, N - 1>([&](int i, int j) { return m(i < r ? i : i + 1, j < c ? j : j + 1); });
}

template <class T, int N>
auto determinant_of(const mat<T, N, N>& m) {
  if constexpr (N == 1) {
    return m(0, 0);
  } else if constexpr (N == 2) {
    return m(0, 0) * m(1, 1) - m(0, 1) * m(1, 0);
  } else {
    auto det = m(0, 0) * determinant_of(minor_of(m, 0, 0));
    for (int j = 1; j < N; ++j) {
      auto term = m(0, j) * determinant_of(minor_of(m, 0, j));
      det = j % 2 ? det - term : det + term;
    }
    return det;
  }
}

}  // namespace detail

// Elementwise matrix + and -; matrix (* or /) scalar in either order (/ only after).
template <matrix_like A, matrix_like B>
auto operator+(const A& a, const B& b) {
  detail::check_same_shape<A, B>();
  auto ma = detail::mat_value(a);
  auto mb = detail::mat_value(b);
  return detail::generate_mat<detail::matrix_rows<A>, detail::matrix_cols<A>>(
      [&](int i, int j) { return ma(i, j) + mb(i, j); });
}
template <matrix_like A, matrix_like B>
auto operator-(const A& a, const B& b) {
  detail::check_same_shape<A, B>();
  auto ma = detail::mat_value(a);
  auto mb = detail::mat_value(b);
  return detail::generate_mat<detail::matrix_rows<A>, detail::matrix_cols<A>>(
      [&](int i, int j) { return ma(i, j) - mb(i, j); });
}
template <matrix_like A>
auto operator-(const A& a) {
  return detail::map_entries(a, [](const auto& x) { return -x; });
}
template <matrix_like A, operand S>
auto operator*(const A& a, const S& s) {
  return detail::map_entries(a, [&](const auto& x) { return x * s; });
}
template <operand S, matrix_like A>
auto operator*(const S& s, const A& a) {
  return detail::map_entries(a, [&](const auto& x) { return s * x; });
}
template <matrix_like A, operand S>
auto operator/(const A& a, const S& s) {
  return detail::map_entries(a, [&](const auto& x) { return x / s; });
}

// The matrix-vector product.
template <matrix_like A, vector_like V>
auto operator*(const A& a, const V& v) {
  static_assert(detail::matrix_cols<A> == detail::vector_size<V>,
                "matrix * vector: the vector needs one component per column of the matrix");
  auto m = detail::mat_value(a);
  return detail::generate_vec<detail::matrix_rows<A>>([&](int i) { return dot(m.row(i), v); });
}

// The matrix product.
template <matrix_like A, matrix_like B>
auto operator*(const A& a, const B& b) {
  static_assert(detail::matrix_cols<A> == detail::matrix_rows<B>,
                "matrix * matrix: the left matrix needs as many columns as the right one has rows");
  auto ma = detail::mat_value(a);
  auto mb = detail::mat_value(b);
  return detail::generate_mat<detail::matrix_rows<A>, detail::matrix_cols<B>>(
      [&](int i, int j) { return dot(ma.row(i), mb.col(j)); });
}

// The matrix a b^T.
template <vector_like A, vector_like B>
auto outer(const A& a, const B& b) {
  auto va = detail::vec_value(a);
  auto vb = detail::vec_value(b);
  return detail::generate_mat<detail::vector_size<A>, detail::vector_size<B>>(
      [&](int i, int j) { return va[i] * vb[j]; });
}

template <matrix_like A>
auto transpose(const A& a) {
  auto m = detail::mat_value(a);
  return detail::generate_mat<detail::matrix_cols<A>, detail::matrix_rows<A>>([&](int i, int j) { return m(j, i); });
}

template <matrix_like A>
auto trace(const A& a) {
  static_assert(detail::matrix_rows<A> == detail::matrix_cols<A>, "qd::trace needs a square matrix");
  auto m = detail::mat_value(a);
  auto sum = +m(0, 0);
  for (int i = 1; i < detail::matrix_rows<A>; ++i) sum = sum + m(i, i);
  return sum;
}

template <matrix_like A>
auto determinant(const A& a) {
  detail::check_square<A>("qd::determinant");
  return detail::determinant_of(detail::mat_value(a));
}

// The inverse by cofactors over the determinant; integer matrices give f32 entries.
// A singular matrix gives infinities or NaNs, as the division does.
template <matrix_like A>
auto inverse(const A& a) {
  detail::check_square<A>("qd::inverse");
  constexpr int n = detail::matrix_rows<A>;
  using T = detail::matrix_scalar<A>;
  using F = std::conditional_t<std::is_same_v<T, double>, double, float>;
  mat<F, n, n> m(detail::mat_value(a).value());
  auto det = detail::determinant_of(m);
  if constexpr (n == 1) {
    return detail::generate_mat<1, 1>([&](int, int) { return 1 / det; });
  } else {
    return detail::generate_mat<n, n>([&](int i, int j) {
      auto cofactor = detail::determinant_of(detail::minor_of(m, j, i));
      return ((i + j) % 2 ? -cofactor : cofactor) / det;
    });
  }
}

}  // namespace qd::inline v0
