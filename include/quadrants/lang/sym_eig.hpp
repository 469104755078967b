// qd::sym_eig and qd::make_spd of a symmetric 2 x 2 to 4 x 4 matrix, per thread: cyclic
// Jacobi, unrolled into scalar IR while tracing (docs/dsl.md, "Linear algebra").
#pragma once

#include <type_traits>
#include <vector>

#include "quadrants/lang/jacobi.hpp"

namespace qd::inline v0 {

// A = Q * diag(w) * transpose(Q): w ascending, Q's columns the eigenvectors (det Q = +1).
template <class T, int N>
struct sym_eig_result {
  vec<T, N> w;
  mat<T, N, N> Q;
};

namespace detail {

// Cyclic sweeps: enough for docs/dsl.md's accuracy on random, clustered and indefinite
// inputs, plus one that fixes the derivative of Q (see svd_sweeps).
template <class T, int N>
constexpr int sym_eig_sweeps() {
  if constexpr (N == 2)
    return 2;
  else if constexpr (N == 3)
    return std::is_same_v<T, double> ? 5 : 4;
  else
    return 6;
}

// Only the upper triangle of `a` is read: a(i, j) for i <= j stands for both.
template <class T, int N>
sym_eig_result<T, N> sym_eig_of(const mat<T, N, N>& in) {
  work_matrix<T, N> a(generate_mat<N, N>([&](int i, int j) { return in(i < j ? i : j, i < j ? j : i); }));
  const expr<T> scale = max_abs_entry(a, true);
  const expr<T> divisor = qd::select(scale > T(0), scale, expr<T>(1));
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) a(i, j) = a(i, j) / divisor;
  work_matrix<T, N> q = work_matrix<T, N>::identity();
  for (int sweep = 0; sweep < sym_eig_sweeps<T, N>(); ++sweep)
    for (int p = 0; p < N; ++p)
      for (int r = p + 1; r < N; ++r) {
        const rotation<T> rot = jacobi_rotation(a(p, p), a(p, r), a(r, r));
        rotate_columns(a, p, r, rot);  // A <- J^T A J
        rotate_rows(a, p, r, rot);
        a(p, r) = expr<T>(0);  // what the rotation makes it, to rounding
        a(r, p) = expr<T>(0);
        rotate_columns(q, p, r, rot);
      }
  // Ascending: an odd-even transposition network of signed swaps.
  std::vector<expr<T>> w;
  for (int i = 0; i < N; ++i) w.push_back(a(i, i));
  for (int pass = 0; pass < N; ++pass)
    for (int p = pass % 2; p + 1 < N; p += 2) {
      const expr<bool> swap = w[static_cast<std::size_t>(p + 1)] < w[static_cast<std::size_t>(p)];
      const expr<T> lo = w[static_cast<std::size_t>(p)], hi = w[static_cast<std::size_t>(p + 1)];
      w[static_cast<std::size_t>(p)] = qd::select(swap, hi, lo);
      w[static_cast<std::size_t>(p + 1)] = qd::select(swap, lo, hi);
      swap_columns_if(q, p, p + 1, swap);
    }
  const auto values = generate_vec<N>([&](int i) { return w[static_cast<std::size_t>(i)] * scale; });
  return {values, q.value()};
}

template <class A>
constexpr void check_sym_eig_shape() {
  static_assert(matrix_rows<A> == matrix_cols<A>, "qd::sym_eig and qd::make_spd need a square (symmetric) matrix");
  static_assert(matrix_rows<A> >= 2 && matrix_rows<A> <= 4,
                "qd::sym_eig and qd::make_spd are unrolled for 2x2, 3x3 and 4x4 matrices");
  check_decomposition_scalar<matrix_scalar<A>>("qd::sym_eig");
}

}  // namespace detail

// The eigen-decomposition of a symmetric matrix: auto [w, Q] = qd::sym_eig(A). Only the
// upper triangle is read (a non-symmetric A is taken as its upper triangle mirrored).
template <matrix_like A>
auto sym_eig(const A& a) {
  detail::check_sym_eig_shape<A>();
  using T = detail::matrix_scalar<A>;
  constexpr int n = detail::matrix_rows<A>;
  return detail::sym_eig_of<T, n>(mat<T, n, n>(detail::mat_value(a)));
}

// The nearest symmetric positive semi-definite matrix (in the Frobenius norm): the
// eigen-decomposition with negative eigenvalues clamped to 0. Upper triangle only, as sym_eig.
template <matrix_like A>
auto make_spd(const A& a) {
  detail::check_sym_eig_shape<A>();
  using T = detail::matrix_scalar<A>;
  constexpr int n = detail::matrix_rows<A>;
  const sym_eig_result<T, n> d = detail::sym_eig_of<T, n>(mat<T, n, n>(detail::mat_value(a)));
  std::vector<expr<T>> clamped;
  for (int k = 0; k < n; ++k) clamped.push_back(qd::max(d.w[k], T(0)));
  return detail::generate_mat<n, n>([&](int r, int c) {  // exactly symmetric
    const int i = r < c ? r : c, j = r < c ? c : r;
    auto sum = d.Q(i, 0) * clamped[0] * d.Q(j, 0);
    for (int k = 1; k < n; ++k) sum = sum + d.Q(i, k) * clamped[static_cast<std::size_t>(k)] * d.Q(j, k);
    return sum;
  });
}

}  // namespace qd::inline v0
