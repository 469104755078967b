// qd::svd and qd::polar_decompose of a 2 x 2 or 3 x 3 matrix, per thread: one-sided
// (Hestenes) Jacobi, unrolled into scalar IR while tracing (docs/dsl.md, "Linear algebra").
#pragma once

#include <type_traits>
#include <vector>

#include "quadrants/lang/jacobi.hpp"

namespace qd::inline v0 {

// A = U * S * transpose(V); S diagonal, descending (|S(2, 2)| last); det U = det V = +1,
// the sign of det A folded into the last singular value.
template <class T, int N>
struct svd_result {
  mat<T, N, N> U, S, V;
};

// A = R * P: R a rotation (det +1), P symmetric (indefinite where det A < 0).
template <class T, int N>
struct polar_result {
  mat<T, N, N> R, P;
};

namespace detail {

// Sweeps of the one-sided Jacobi SVD: enough for the accuracy of docs/dsl.md on random,
// near-singular and repeated-singular-value inputs, plus one, whose rotations are
// identities to rounding but make the derivative of V that of the exact SVD.
template <class T, int N>
constexpr int svd_sweeps() {
  if constexpr (N == 2)
    return 2;
  else
    return std::is_same_v<T, double> ? 5 : 4;
}

template <class T, int N>
svd_result<T, N> svd_of(const mat<T, N, N>& a) {
  work_matrix<T, N> b(a);
  const expr<T> scale = max_abs_entry(b, false);
  const expr<T> divisor = qd::select(scale > T(0), scale, expr<T>(1));
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) b(i, j) = b(i, j) / divisor;
  work_matrix<T, N> v = work_matrix<T, N>::identity();
  auto column_dot = [&](int p, int q) {
    expr<T> sum = b(0, p) * b(0, q);
    for (int i = 1; i < N; ++i) sum = sum + b(i, p) * b(i, q);
    return sum;
  };
  // B = A V with V a product of rotations: columns orthogonal at convergence.
  for (int sweep = 0; sweep < svd_sweeps<T, N>(); ++sweep)
    for (int p = 0; p < N; ++p)
      for (int q = p + 1; q < N; ++q) {
        const rotation<T> r = jacobi_rotation(column_dot(p, p), column_dot(p, q), column_dot(q, q));
        rotate_columns(b, p, q, r);
        rotate_columns(v, p, q, r);
      }
  // Columns by norm, descending (a sorting network of signed swaps).
  auto order = [&](int p, int q) {
    const expr<bool> swap = column_dot(q, q) > column_dot(p, p);
    swap_columns_if(b, p, q, swap);
    swap_columns_if(v, p, q, swap);
  };
  order(0, 1);
  if constexpr (N == 3) {
    order(1, 2);
    order(0, 1);
  }
  // U's columns from B's: u1 = b1 / |b1|, u2 the part of b2 orthogonal to u1, normalized
  // (or any unit vector orthogonal to u1 where b2 has none), u3 = u1 x u2; the singular
  // values are the components of the b's along them, so the last one carries det A's sign.
  std::vector<expr<T>> u;
  std::vector<expr<T>> sigma;
  const expr<T> s1 = guarded_sqrt(column_dot(0, 0));
  for (int i = 0; i < N; ++i) u.push_back(guarded_div(b(i, 0), s1, expr<T>(i == 0 ? 1 : 0)));
  sigma.push_back(s1);
  if constexpr (N == 2) {
    // u2 = u1 rotated by +90 degrees; U = [[u1x, -u1y], [u1y, u1x]] row-major.
    sigma.push_back(u[0] * b(1, 1) - u[1] * b(0, 1));
    std::vector<expr<T>> rows{u[0], -u[1], u[1], u[0]};
    u = rows;
  } else {
    const expr<T> along = u[0] * b(0, 1) + u[1] * b(1, 1) + u[2] * b(2, 1);
    const expr<T> w0 = b(0, 1) - along * u[0], w1 = b(1, 1) - along * u[1], w2 = b(2, 1) - along * u[2];
    const expr<T> s2 = guarded_sqrt(w0 * w0 + w1 * w1 + w2 * w2);
    // Where b2 vanishes: u1 x e_k, e_k the axis along which u1 is smallest.
    const expr<T> ax = qd::abs(u[0]), ay = qd::abs(u[1]), az = qd::abs(u[2]);
    const expr<bool> pick_x = ax <= ay && ax <= az;
    const expr<bool> pick_y = !pick_x && ay <= az;
    const expr<T> ex = qd::select(pick_x, expr<T>(1), expr<T>(0));
    const expr<T> ey = qd::select(pick_y, expr<T>(1), expr<T>(0));
    const expr<T> ez = T(1) - ex - ey;
    const expr<T> c0 = u[1] * ez - u[2] * ey, c1 = u[2] * ex - u[0] * ez, c2 = u[0] * ey - u[1] * ex;
    const expr<T> cn = guarded_sqrt(c0 * c0 + c1 * c1 + c2 * c2);
    const expr<T> u20 = guarded_div(w0, s2, guarded_div(c0, cn, expr<T>(0)));
    const expr<T> u21 = guarded_div(w1, s2, guarded_div(c1, cn, expr<T>(0)));
    const expr<T> u22 = guarded_div(w2, s2, guarded_div(c2, cn, expr<T>(0)));
    const expr<T> u30 = u[1] * u22 - u[2] * u21, u31 = u[2] * u20 - u[0] * u22, u32 = u[0] * u21 - u[1] * u20;
    sigma.push_back(s2);
    sigma.push_back(u30 * b(0, 2) + u31 * b(1, 2) + u32 * b(2, 2));
    std::vector<expr<T>> rows{u[0], u20, u30, u[1], u21, u31, u[2], u22, u32};
    u = rows;
  }
  // Descending exactly: values equal to rounding (repeated singular values) may come out an
  // ulp out of order, since each is computed its own way.
  for (std::size_t k = 1; k < sigma.size(); ++k) {
    const expr<T> bound = sigma[k - 1];
    const expr<bool> above = qd::abs(sigma[k]) > bound;
    sigma[k] = qd::select(above, qd::select(sigma[k] < T(0), -bound, bound), sigma[k]);
  }
  const auto U = generate_mat<N, N>([&](int i, int j) { return u[static_cast<std::size_t>(i * N + j)]; });
  const auto S = generate_mat<N, N>(
      [&](int i, int j) { return i == j ? sigma[static_cast<std::size_t>(i)] * scale : expr<T>(0); });
  return {U, S, v.value()};
}

template <class A>
constexpr void check_svd_shape() {
  static_assert(matrix_rows<A> == matrix_cols<A>, "qd::svd and qd::polar_decompose need a square matrix (2x2 or 3x3)");
  static_assert(matrix_rows<A> == 2 || matrix_rows<A> == 3,
                "qd::svd and qd::polar_decompose are unrolled for 2x2 and 3x3 matrices");
  check_decomposition_scalar<matrix_scalar<A>>("qd::svd");
}

}  // namespace detail

// The singular value decomposition: auto [U, S, V] = qd::svd(A).
template <matrix_like A>
auto svd(const A& a) {
  detail::check_svd_shape<A>();
  using T = detail::matrix_scalar<A>;
  constexpr int n = detail::matrix_rows<A>;
  return detail::svd_of<T, n>(mat<T, n, n>(detail::mat_value(a)));
}

// The polar decomposition from the SVD: R = U V^T, P = V S V^T.
template <matrix_like A>
auto polar_decompose(const A& a) {
  detail::check_svd_shape<A>();
  using T = detail::matrix_scalar<A>;
  constexpr int n = detail::matrix_rows<A>;
  const svd_result<T, n> d = detail::svd_of<T, n>(mat<T, n, n>(detail::mat_value(a)));
  const auto p = detail::generate_mat<n, n>([&](int r, int c) {  // exactly symmetric
    const int i = r < c ? r : c, j = r < c ? c : r;
    auto sum = d.V(i, 0) * d.S(0, 0) * d.V(j, 0);
    for (int k = 1; k < n; ++k) sum = sum + d.V(i, k) * d.S(k, k) * d.V(j, k);
    return sum;
  });
  return polar_result<T, n>{d.U * transpose(d.V), p};
}

}  // namespace qd::inline v0
