// The building blocks of the per-thread decompositions (lang/svd.hpp, lang/sym_eig.hpp):
// a square register matrix that is rebound while tracing, guarded math and Jacobi rotations.
#pragma once

#include <cstddef>
#include <type_traits>
#include <vector>

#include "quadrants/lang/mat.hpp"

namespace qd::inline v0::detail {

// The scalar type of a decomposition's input: float or double only.
template <class S>
constexpr void check_decomposition_scalar(const char* what) {
  (void)what;
  static_assert(std::is_same_v<S, float> || std::is_same_v<S, double>,
                "the per-thread decompositions (qd::svd, qd::polar_decompose, qd::sym_eig, qd::make_spd, qd::solve) "
                "take float or double matrices; convert an integer matrix first, e.g. qd::mat3f(m)");
}

// An N x N matrix of traced values whose entries the algorithms rebind as they go
// (trace-time state: every update records new scalar IR).
template <class T, int N>
class work_matrix {
 public:
  template <class M>
  explicit work_matrix(const M& m) {
    e_.reserve(static_cast<std::size_t>(N * N));
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) e_.push_back(expr<T>(m(i, j)));
  }
  static work_matrix identity() {
    return work_matrix(generate_mat<N, N>([](int i, int j) { return expr<T>(i == j ? 1 : 0); }));
  }
  expr<T>& operator()(int i, int j) { return e_[static_cast<std::size_t>(i * N + j)]; }
  const expr<T>& operator()(int i, int j) const { return e_[static_cast<std::size_t>(i * N + j)]; }
  mat<T, N, N> value() const {
    return generate_mat<N, N>([&](int i, int j) { return (*this)(i, j); });
  }

 private:
  std::vector<expr<T>> e_;
};

// sqrt(x) for x >= 0 whose adjoint is finite at 0 (taken as 0 there): sqrt's own adjoint
// divides by the result, and an unused 0/0 would still turn a gradient into NaN.
template <class T>
expr<T> guarded_sqrt(const expr<T>& x) {
  const expr<bool> positive = x > T(0);
  return qd::select(positive, qd::sqrt(qd::select(positive, x, expr<T>(1))), expr<T>(0));
}

// a / b, or `otherwise` where b == 0, with finite adjoints either way.
template <class T>
expr<T> guarded_div(const expr<T>& a, const expr<T>& b, const expr<T>& otherwise) {
  const expr<bool> nonzero = b != T(0);
  return qd::select(nonzero, a / qd::select(nonzero, b, expr<T>(1)), otherwise);
}

// The rotation [[c, s], [-s, c]] that diagonalizes the symmetric 2 x 2 matrix
// [[app, apq], [apq, aqq]] (Golub and Van Loan's sym.schur2, the smaller angle),
// written as t = 2 apq sign(h) / (|h| + sqrt(h^2 + 4 apq^2)), h = aqq - app: smooth in
// apq through 0, so that its derivative at a diagonal matrix is the true one. The
// inputs are scaled to at most a few units by the callers, so h^2 cannot overflow.
template <class T>
struct rotation {
  expr<T> c, s;
};
template <class T>
rotation<T> jacobi_rotation(const expr<T>& app, const expr<T>& apq, const expr<T>& aqq) {
  const expr<T> h = aqq - app;
  const expr<T> sign = qd::select(h >= T(0), expr<T>(1), expr<T>(-1));
  const expr<T> den = qd::abs(h) + guarded_sqrt(h * h + T(4) * apq * apq);
  const expr<T> t = guarded_div(T(2) * apq * sign, den, expr<T>(0));
  const expr<T> c = T(1) / qd::sqrt(T(1) + t * t);
  return {c, t * c};
}

// Columns p and q of m become c m_p - s m_q and s m_p + c m_q (m J).
template <class T, int N>
void rotate_columns(work_matrix<T, N>& m, int p, int q, const rotation<T>& r) {
  for (int k = 0; k < N; ++k) {
    const expr<T> mp = m(k, p), mq = m(k, q);
    m(k, p) = r.c * mp - r.s * mq;
    m(k, q) = r.s * mp + r.c * mq;
  }
}

// Rows p and q likewise (J^T m).
template <class T, int N>
void rotate_rows(work_matrix<T, N>& m, int p, int q, const rotation<T>& r) {
  for (int k = 0; k < N; ++k) {
    const expr<T> mp = m(p, k), mq = m(q, k);
    m(p, k) = r.c * mp - r.s * mq;
    m(q, k) = r.s * mp + r.c * mq;
  }
}

// Where `swap` holds, columns p and q trade places and the new column q changes sign
// (a rotation by 90 degrees: a determinant stays +1).
template <class T, int N>
void swap_columns_if(work_matrix<T, N>& m, int p, int q, const expr<bool>& swap) {
  for (int k = 0; k < N; ++k) {
    const expr<T> mp = m(k, p), mq = m(k, q);
    m(k, p) = qd::select(swap, mq, mp);
    m(k, q) = qd::select(swap, -mp, mq);
  }
}

// The largest |entry| of m (the upper triangle only when `upper`), and a divisor that is
// never 0: the decompositions run on m / scale, where squares cannot overflow or underflow.
template <class T, int N>
expr<T> max_abs_entry(const work_matrix<T, N>& m, bool upper) {
  expr<T> big = qd::abs(m(0, 0));
  for (int i = 0; i < N; ++i)
    for (int j = upper ? i : 0; j < N; ++j)
      if (i + j > 0) big = qd::max(big, qd::abs(m(i, j)));
  return big;
}

}  // namespace qd::inline v0::detail
