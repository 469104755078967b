// qd::solve(A, b) for a 2 x 2 to 4 x 4 system, per thread: Gaussian elimination with
// partial pivoting, unrolled into scalar IR while tracing (docs/dsl.md, "Linear algebra").
#pragma once

#include <cstddef>
#include <vector>

#include "quadrants/lang/jacobi.hpp"

namespace qd::inline v0 {

namespace detail {

template <class T, int N>
vec<T, N> solve_of(const mat<T, N, N>& in, const vec<T, N>& rhs) {
  work_matrix<T, N> a(in);
  std::vector<expr<T>> b;
  for (int i = 0; i < N; ++i) b.push_back(rhs[i]);
  for (int k = 0; k < N; ++k) {
    // The row with the largest |a(i, k)|, i >= k, moves to row k (compare-and-swap
    // down the column: a NaN never wins, so a NaN pivot stays where it is).
    for (int i = k + 1; i < N; ++i) {
      const expr<bool> swap = qd::abs(a(i, k)) > qd::abs(a(k, k));
      for (int j = k; j < N; ++j) {
        const expr<T> top = a(k, j), other = a(i, j);
        a(k, j) = qd::select(swap, other, top);
        a(i, j) = qd::select(swap, top, other);
      }
      const expr<T> top = b[static_cast<std::size_t>(k)], other = b[static_cast<std::size_t>(i)];
      b[static_cast<std::size_t>(k)] = qd::select(swap, other, top);
      b[static_cast<std::size_t>(i)] = qd::select(swap, top, other);
    }
    for (int i = k + 1; i < N; ++i) {
      const expr<T> f = a(i, k) / a(k, k);
      for (int j = k + 1; j < N; ++j) a(i, j) = a(i, j) - f * a(k, j);
      b[static_cast<std::size_t>(i)] = b[static_cast<std::size_t>(i)] - f * b[static_cast<std::size_t>(k)];
    }
  }
  std::vector<expr<T>> x(static_cast<std::size_t>(N), expr<T>(0));
  for (int i = N - 1; i >= 0; --i) {
    expr<T> sum = b[static_cast<std::size_t>(i)];
    for (int j = i + 1; j < N; ++j) sum = sum - a(i, j) * x[static_cast<std::size_t>(j)];
    x[static_cast<std::size_t>(i)] = sum / a(i, i);
  }
  return generate_vec<N>([&](int i) { return x[static_cast<std::size_t>(i)]; });
}

}  // namespace detail

// The x with A x = b. A singular A (a zero pivot) gives infinities or NaNs, as the division does.
template <matrix_like A, vector_like B>
auto solve(const A& a, const B& b) {
  static_assert(detail::matrix_rows<A> == detail::matrix_cols<A>, "qd::solve needs a square matrix");
  static_assert(detail::matrix_rows<A> >= 2 && detail::matrix_rows<A> <= 4,
                "qd::solve is unrolled for 2x2, 3x3 and 4x4 systems");
  static_assert(detail::vector_size<B> == detail::matrix_rows<A>,
                "qd::solve(A, b): b needs one component per row of A");
  static_assert(std::is_same_v<detail::matrix_scalar<A>, detail::vector_scalar<B>>,
                "qd::solve(A, b): A and b need the same scalar type (both float or both double)");
  using T = detail::matrix_scalar<A>;
  detail::check_decomposition_scalar<T>("qd::solve");
  constexpr int n = detail::matrix_rows<A>;
  return detail::solve_of<T, n>(mat<T, n, n>(detail::mat_value(a)), vec<T, n>(detail::vec_value(b)));
}

}  // namespace qd::inline v0
