// Per-thread linear algebra (qd::svd, qd::polar_decompose, qd::sym_eig, qd::make_spd,
// qd::solve) on the CPU and the reference backend, against Eigen on random, adversarial
// and edge-case inputs; their gradients against central finite differences and against
// the analytic derivative of the singular values.
#include <doctest/doctest.h>

#include <Eigen/Dense>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/runtime_test_support.hpp"

namespace {

struct on_cpu {
  static constexpr qd::arch arch = qd::arch::cpu;
};
struct on_reference {
  static constexpr qd::arch arch = qd::arch::reference;
};

template <class T, int N>
using matrix = Eigen::Matrix<double, N, N>;
// Eigen's references (JacobiSVD, SelfAdjointEigenSolver, PartialPivLU) run on dynamic-size
// copies: one instantiation each instead of one per size (a third of this file's compile).

// The matrix of array `a` at element i, as a traced qd::mat.
template <class T, int N, class A>
qd::mat<T, N, N> load(const A& a, const qd::i32& i) {
  return qd::detail::generate_mat<N, N>([&](int r, int c) { return qd::expr<T>(a(i, r, c)); });
}

// One kernel per element type runs every decomposition of the test (one compile each,
// not one per size and function): on the general matrices g<N> (n, N, N + 1: the matrix
// and a right-hand side in its last column) svd and polar_decompose (N = 2, 3) and solve;
// on the symmetric ones s<N> sym_eig and make_spd. Row i of go<N> / so<N> holds matrix
// i's results in the order of general_columns / symmetric_columns.
template <int N>
constexpr int general_columns = (N < 4 ? 4 * N * N + N : 0) + N;  // U, S, V, R, P; x
template <int N>
constexpr int symmetric_columns = 2 * N* N + N;  // w, Q, make_spd

// Writes x row by row at columns c, c + 1, ... of row i.
template <int N, class O, class M>
void put_mat(const O& out, const qd::i32& i, int& c, const M& x) {
  for (int r = 0; r < N; ++r)
    for (int q = 0; q < N; ++q) out(i, c++) = x(r, q);
}

template <class T, int N, class G, class O>
void general_rows(const G& g, const O& out) {
  qd::range_for(g.shape(0), [&](qd::i32 i) {
    const auto m = qd::detail::generate_mat<N, N>([&](int r, int c) { return qd::expr<T>(g(i, r, c)); });
    const auto rhs = qd::detail::generate_vec<N>([&](int k) { return qd::expr<T>(g(i, k, N)); });
    int c = 0;
    if constexpr (N < 4) {
      auto [U, S, V] = qd::svd(m);
      put_mat<N>(out, i, c, U);
      for (int k = 0; k < N; ++k) out(i, c++) = S(k, k);
      put_mat<N>(out, i, c, V);
      auto [R, P] = qd::polar_decompose(m);
      put_mat<N>(out, i, c, R);
      put_mat<N>(out, i, c, P);
    }
    const auto x = qd::solve(m, rhs);
    for (int k = 0; k < N; ++k) out(i, c++) = x[k];
  });
}

template <class T, int N, class A, class O>
void symmetric_rows(const A& a, const O& out) {
  qd::range_for(a.shape(0), [&](qd::i32 i) {
    const auto m = load<T, N>(a, i);
    auto [values, Q] = qd::sym_eig(m);
    int c = 0;
    for (int k = 0; k < N; ++k) out(i, c++) = values[k];
    put_mat<N>(out, i, c, Q);
    put_mat<N>(out, i, c, qd::make_spd(m));
  });
}

template <class T>
auto decompositions_kernel() {
  using A = qd::types::ndarray<T, 3>;
  using O = qd::types::ndarray<T, 2>;
  return qd::kernel("decompositions", [](A g2, A g3, A g4, A s2, A s3, A s4, O go2, O go3, O go4, O so2, O so3, O so4) {
    general_rows<T, 2>(g2, go2);
    general_rows<T, 3>(g3, go3);
    general_rows<T, 4>(g4, go4);
    symmetric_rows<T, 2>(s2, so2);
    symmetric_rows<T, 3>(s3, so3);
    symmetric_rows<T, 4>(s4, so4);
  });
}

// The orthonormal basis of x's columns (modified Gram-Schmidt; x is random, so of full rank).
// Written out rather than Eigen's HouseholderQR, whose instantiation for three sizes cost
// about a third of this file's compile time.
template <int N>
matrix<double, N> orthonormal_columns(matrix<double, N> x) {
  for (int j = 0; j < N; ++j) {
    for (int k = 0; k < j; ++k) x.col(j) -= x.col(k).dot(x.col(j)) * x.col(k);
    x.col(j) /= x.col(j).norm();
  }
  return x;
}

// Matrices with singular values `s`, between random rotations.
template <int N>
matrix<double, N> with_singular_values(std::mt19937_64& g, const Eigen::Matrix<double, N, 1>& s) {
  std::normal_distribution<double> nd;
  matrix<double, N> x, y;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) x(i, j) = nd(g), y(i, j) = nd(g);
  const matrix<double, N> U = orthonormal_columns<N>(x), V = orthonormal_columns<N>(y);
  return U * s.asDiagonal() * V.transpose();
}

// Random, adversarial and edge-case inputs: the cases each decomposition's accuracy claim covers.
template <int N>
std::vector<matrix<double, N>> test_matrices(bool symmetric, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> nd;
  std::uniform_real_distribution<double> ud(-1, 1);
  using vec = Eigen::Matrix<double, N, 1>;
  std::vector<matrix<double, N>> out;
  auto add = [&](matrix<double, N> m) { out.push_back(symmetric ? matrix<double, N>((m + m.transpose()) / 2) : m); };
  auto add_spectrum = [&](vec s) {
    if (!symmetric) return add(with_singular_values<N>(g, s));
    matrix<double, N> x;
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) x(i, j) = nd(g);
    const matrix<double, N> Q = orthonormal_columns<N>(x);
    out.push_back(Q * s.asDiagonal() * Q.transpose());
  };
  for (int k = 0; k < 300; ++k) {
    matrix<double, N> m;
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) m(i, j) = ud(g);
    add(m);
  }
  for (int k = 0; k < 40; ++k) {
    vec s;
    for (int i = 0; i < N; ++i) s[i] = 1;
    add_spectrum(s);  // repeated
    s[N - 1] = 1 + 1e-9;
    add_spectrum(s);  // nearly repeated
    for (int i = 1; i < N; ++i) s[i] = std::pow(1e-7, i);
    add_spectrum(s);  // near-singular, graded
    for (int i = 1; i < N; ++i) s[i] = 0;
    add_spectrum(s);  // rank one
    for (int i = 0; i < N; ++i) s[i] = (i % 2 ? -1.0 : 1.0) * std::exp(3 * nd(g));
    add_spectrum(s);  // indefinite (symmetric) / spread
    s[N - 1] = 1e-300;
    add_spectrum(s);  // one vanishing
  }
  add(matrix<double, N>::Zero());
  add(matrix<double, N>::Identity());
  add(-matrix<double, N>::Identity());
  matrix<double, N> d = matrix<double, N>::Zero();
  for (int i = 0; i < N; ++i) d(i, i) = N - i - 0.5;
  add(d);          // diagonal, already decomposed
  add(d * 1e30);   // huge
  add(d * 1e-30);  // tiny
  matrix<double, N> perm = matrix<double, N>::Zero();
  for (int i = 0; i < N; ++i) perm(i, (i + 1) % N) = 1;
  add(perm);  // a permutation (det may be -1)
  return out;
}

// A (n, N, N + extra) array of the matrices (and, with extra = 1, right-hand sides in the last column).
template <class T, int N>
qd::ndarray<T, 3> upload(const std::vector<matrix<double, N>>& ms, const std::vector<double>* rhs = nullptr) {
  const int columns = N + (rhs ? 1 : 0);
  qd::ndarray<T, 3> a({static_cast<std::int64_t>(ms.size()), N, columns});
  std::vector<T> flat;
  for (std::size_t k = 0; k < ms.size(); ++k)
    for (int i = 0; i < N; ++i) {
      for (int j = 0; j < N; ++j) flat.push_back(static_cast<T>(ms[k](i, j)));
      if (rhs) flat.push_back(static_cast<T>((*rhs)[k * N + static_cast<std::size_t>(i)]));
    }
  if (!flat.empty()) a.from_host(flat);
  return a;
}

// The N x N matrix at column `offset` of row k of a (rows, stride) result.
template <int N, class T>
matrix<double, N> at(const std::vector<T>& flat, std::size_t k, std::size_t stride = N * N, std::size_t offset = 0) {
  matrix<double, N> m;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j)
      m(i, j) = static_cast<double>(flat[k * stride + offset + static_cast<std::size_t>(i * N + j)]);
  return m;
}

// The matrices as the kernel saw them (rounded to T).
template <class T, int N>
matrix<double, N> rounded(const matrix<double, N>& m) {
  return m.unaryExpr([](double x) { return static_cast<double>(static_cast<T>(x)); });
}

template <class T>
constexpr double tolerance() {
  return std::is_same_v<T, double> ? 1e-12 : 1e-5;
}

// The inputs of one launch of decompositions_kernel: general matrices with right-hand
// sides and symmetric matrices, for N = 2, 3, 4 (index N - 2).
struct cases {
  std::tuple<std::vector<matrix<double, 2>>, std::vector<matrix<double, 3>>, std::vector<matrix<double, 4>>> general,
      symmetric;
  std::array<std::vector<double>, 3> rhs;
};

// Random, adversarial and edge-case matrices of every size; with keep, only the first and
// last keep / 2 of each set (the interpreter is slow).
cases make_cases(std::size_t keep) {
  cases c;
  auto take = [&](auto v) {
    if (v.size() > keep)
      v.erase(v.begin() + static_cast<std::ptrdiff_t>(keep / 2), v.end() - static_cast<std::ptrdiff_t>(keep / 2));
    return v;
  };
  std::get<0>(c.general) = take(test_matrices<2>(false, 1));
  std::get<1>(c.general) = take(test_matrices<3>(false, 2));
  std::get<2>(c.general) = take(test_matrices<4>(false, 3));
  std::get<0>(c.symmetric) = take(test_matrices<2>(true, 5));
  std::get<1>(c.symmetric) = take(test_matrices<3>(true, 6));
  std::get<2>(c.symmetric) = take(test_matrices<4>(true, 7));
  std::mt19937_64 g(7);
  std::uniform_real_distribution<double> ud(-1, 1);
  auto fill = [&](std::vector<double>& b, std::size_t count) {
    for (std::size_t k = 0; k < count; ++k) b.push_back(ud(g));
  };
  fill(c.rhs[0], 2 * std::get<0>(c.general).size());
  fill(c.rhs[1], 3 * std::get<1>(c.general).size());
  fill(c.rhs[2], 4 * std::get<2>(c.general).size());
  return c;
}

// Runs decompositions_kernel<T> on the cases: the rows of go2, go3, go4, so2, so3, so4.
template <class T>
std::array<std::vector<T>, 6> run_decompositions(const cases& c) {
  auto rows = [](std::size_t n, int columns) { return qd::ndarray<T, 2>({static_cast<std::int64_t>(n), columns}); };
  const auto& [g2, g3, g4] = c.general;
  const auto& [s2, s3, s4] = c.symmetric;
  auto go2 = rows(g2.size(), general_columns<2>), go3 = rows(g3.size(), general_columns<3>),
       go4 = rows(g4.size(), general_columns<4>);
  auto so2 = rows(s2.size(), symmetric_columns<2>), so3 = rows(s3.size(), symmetric_columns<3>),
       so4 = rows(s4.size(), symmetric_columns<4>);
  decompositions_kernel<T>()(upload<T, 2>(g2, &c.rhs[0]), upload<T, 3>(g3, &c.rhs[1]), upload<T, 4>(g4, &c.rhs[2]),
                             upload<T, 2>(s2), upload<T, 3>(s3), upload<T, 4>(s4), go2, go3, go4, so2, so3, so4);
  return {go2.to_host(), go3.to_host(), go4.to_host(), so2.to_host(), so3.to_host(), so4.to_host()};
}

template <class T, int N>
void check_svd(const std::vector<matrix<double, N>>& inputs, const std::vector<T>& out) {
  constexpr std::size_t stride = general_columns<N>, nn = N * N;
  const double tol = tolerance<T>();
  int failures = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const matrix<double, N> A = rounded<T, N>(inputs[k]);
    const matrix<double, N> U = at<N>(out, k, stride, 0), V = at<N>(out, k, stride, nn + N),
                            R = at<N>(out, k, stride, 2 * nn + N), P = at<N>(out, k, stride, 3 * nn + N);
    Eigen::Matrix<double, N, 1> S;
    for (int i = 0; i < N; ++i) S[i] = static_cast<double>(out[k * stride + nn + static_cast<std::size_t>(i)]);
    const double norm = std::max(A.norm(), 1e-300);
    const matrix<double, N> I = matrix<double, N>::Identity();
    Eigen::JacobiSVD<Eigen::MatrixXd> ref(A);
    const Eigen::VectorXd want = ref.singularValues();
    const bool reconstructs = (U * S.asDiagonal() * V.transpose() - A).norm() <= tol * norm &&
                              (R * P - A).norm() <= 4 * tol * norm && (P - P.transpose()).norm() == 0;
    const bool rotations = (U.transpose() * U - I).norm() <= 8 * tol && (V.transpose() * V - I).norm() <= 8 * tol &&
                           (R.transpose() * R - I).norm() <= 8 * tol && std::abs(U.determinant() - 1) <= 8 * tol &&
                           std::abs(V.determinant() - 1) <= 8 * tol && std::abs(R.determinant() - 1) <= 8 * tol;
    bool values = true;
    for (int i = 0; i < N; ++i) {
      values = values && std::abs(std::abs(S[i]) - want[i]) <= tol * norm;        // Eigen's values
      if (i + 1 < N) values = values && S[i] >= std::abs(S[i + 1]) && S[i] >= 0;  // descending
    }
    // det A's sign in S(N-1), where the determinant is clearly not 0.
    const double det = A.determinant();
    if (std::abs(det) > 16 * tol * std::pow(norm, N)) values = values && (S[N - 1] < 0) == (det < 0);
    const bool ok = reconstructs && rotations && values;
    if (!ok && ++failures <= 5) {
      CAPTURE(k);
      CAPTURE(A);
      CAPTURE(S.transpose());
      CAPTURE(want.transpose());
      CAPTURE((U * S.asDiagonal() * V.transpose() - A).norm() / norm);
      CAPTURE((U.transpose() * U - I).norm());
      CAPTURE((V.transpose() * V - I).norm());
      CAPTURE(reconstructs);
      CAPTURE(rotations);
      CHECK(ok);
    }
  }
  CHECK(failures == 0);
}

template <class T, int N>
void check_sym_eig(const std::vector<matrix<double, N>>& inputs, const std::vector<T>& out) {
  constexpr std::size_t stride = symmetric_columns<N>;
  const double tol = tolerance<T>();
  int failures = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const matrix<double, N> A = rounded<T, N>(inputs[k]);
    const matrix<double, N> Q = at<N>(out, k, stride, N), Spd = at<N>(out, k, stride, N + N * N);
    Eigen::Matrix<double, N, 1> W;
    for (int i = 0; i < N; ++i) W[i] = static_cast<double>(out[k * stride + static_cast<std::size_t>(i)]);
    const double norm = std::max(A.norm(), 1e-300);
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> ref(A);
    const Eigen::VectorXd want = ref.eigenvalues();  // ascending
    const Eigen::VectorXd clamped = want.cwiseMax(0.0);
    const matrix<double, N> spd_want = ref.eigenvectors() * clamped.asDiagonal() * ref.eigenvectors().transpose();
    bool ok = (Q * W.asDiagonal() * Q.transpose() - A).norm() <= tol * norm &&
              (Q.transpose() * Q - matrix<double, N>::Identity()).norm() <= 8 * tol &&
              (Spd - spd_want).norm() <= 4 * tol * norm && (Spd - Spd.transpose()).norm() == 0;
    for (int i = 0; i < N; ++i) {
      ok = ok && std::abs(W[i] - want[i]) <= tol * norm;
      if (i + 1 < N) ok = ok && W[i] <= W[i + 1];
    }
    if (!ok && ++failures <= 5) {
      CAPTURE(k);
      CAPTURE(A);
      CAPTURE(W.transpose());
      CAPTURE(want.transpose());
      CHECK(ok);
    }
  }
  CHECK(failures == 0);
}

template <class T, int N>
void check_solve(const std::vector<matrix<double, N>>& inputs, const std::vector<double>& rhs,
                 const std::vector<T>& out) {
  constexpr std::size_t stride = general_columns<N>, offset = stride - N;
  int failures = 0;
  std::size_t solved = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const matrix<double, N> A = rounded<T, N>(inputs[k]);
    Eigen::JacobiSVD<Eigen::MatrixXd> sv(A);
    const double cond = sv.singularValues()[0] / sv.singularValues()[N - 1];
    if (!(cond < 1e6)) continue;  // ill-conditioned: the solution itself is not accurate to compare
    Eigen::Matrix<double, N, 1> B, X;
    for (int i = 0; i < N; ++i) {
      B[i] = static_cast<double>(static_cast<T>(rhs[k * N + static_cast<std::size_t>(i)]));
      X[i] = static_cast<double>(out[k * stride + offset + static_cast<std::size_t>(i)]);
    }
    const Eigen::Matrix<double, N, 1> want = Eigen::MatrixXd(A).partialPivLu().solve(Eigen::VectorXd(B));
    ++solved;
    // Backward stable: a small residual; forward error within the condition number.
    bool ok = (A * X - B).norm() <= 16 * tolerance<T>() * (A.norm() * X.norm() + B.norm()) &&
              (X - want).norm() <= 16 * tolerance<T>() * cond * want.norm();
    if (!ok && ++failures <= 5) {
      CAPTURE(k);
      CAPTURE(A);
      CAPTURE(X.transpose());
      CAPTURE(want.transpose());
      CHECK(ok);
    }
  }
  CHECK(solved * 2 > inputs.size());  // most of the cases are well conditioned
  CHECK(failures == 0);
}

template <class T>
void check_decompositions(const cases& c) {
  const auto out = run_decompositions<T>(c);
  check_svd<T, 2>(std::get<0>(c.general), out[0]);
  check_svd<T, 3>(std::get<1>(c.general), out[1]);
  check_solve<T, 2>(std::get<0>(c.general), c.rhs[0], out[0]);
  check_solve<T, 3>(std::get<1>(c.general), c.rhs[1], out[1]);
  check_solve<T, 4>(std::get<2>(c.general), c.rhs[2], out[2]);
  check_sym_eig<T, 2>(std::get<0>(c.symmetric), out[3]);
  check_sym_eig<T, 3>(std::get<1>(c.symmetric), out[4]);
  check_sym_eig<T, 4>(std::get<2>(c.symmetric), out[5]);
}

}  // namespace

// svd and polar_decompose within 1e-12 (f64) and 1e-5 (f32) of |A|; sym_eig and make_spd
// likewise; solve backward stable and within the condition number of Eigen's LU.
TEST_CASE_TEMPLATE("qd::svd, polar_decompose, sym_eig, make_spd and solve agree with Eigen, 2x2 to 4x4, f32 and f64", A,
                   on_cpu, on_reference) {
  qd::init({.arch = A::arch});
  const cases c = make_cases(A::arch == qd::arch::reference ? 40 : 100000);
  SUBCASE("f64") { check_decompositions<double>(c); }
  SUBCASE("f32") { check_decompositions<float>(c); }
}

TEST_CASE("qd::sym_eig reads the upper triangle only; qd::solve of a singular system gives infinities or NaNs") {
  qd_test::init_cpu();
  cases c;
  matrix<double, 3> m;
  m << 2, 1, 0.5, -7, 3, 0.25, 9, 4, 1;  // lower triangle garbage
  std::get<1>(c.symmetric).push_back(m);
  std::get<0>(c.general).push_back(matrix<double, 2>::Zero());
  c.rhs[0] = {1.0, 1.0};
  const auto out = run_decompositions<double>(c);
  matrix<double, 3> upper = m.triangularView<Eigen::Upper>();
  matrix<double, 3> sym = upper + upper.transpose();
  sym.diagonal() /= 2;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> ref(sym);
  for (int i = 0; i < 3; ++i)
    CHECK(std::abs(out[4][static_cast<std::size_t>(i)] - ref.eigenvalues()[i]) < 1e-13 * sym.norm());
  for (std::size_t i = 0; i < 2; ++i) CHECK(!std::isfinite(out[0][general_columns<2> - 2 + i]));
}

// ---- gradients ---------------------------------------------------------------

namespace {

// out = (U, S, V, R, P) flattened per matrix: 5 N^2 values, every one differentiated.
template <int N>
auto svd_outputs_kernel() {
  return qd::kernel("svd_outputs", [](qd::types::ndarray<double, 3, qd::needs_grad> a,
                                      qd::types::ndarray<double, 2, qd::needs_grad> out) {
    qd::range_for(a.shape(0), [&](qd::i32 i) {
      const auto m = load<double, N>(a, i);
      auto [U, S, V] = qd::svd(m);
      auto [R, P] = qd::polar_decompose(m);
      int c = 0;
      for (const auto* x : {&U, &S, &V, &R, &P})
        for (int r = 0; r < N; ++r)
          for (int q = 0; q < N; ++q) out(i, c++) = (*x)(r, q);
    });
  });
}

// out = (w, Q, make_spd(A), solve(A, e)) per matrix. make_spd's adjoint is the
// eigen-decomposition's with the clamp's: at 4x4 (2.5 MB of C++ with it, half without)
// the sym_eig and solve adjoints are checked, make_spd's at 2x2 and 3x3.
template <int N>
constexpr int eig_outputs = N + N* N + (N < 4 ? N * N : 0) + N;

template <int N>
auto eig_outputs_kernel() {
  return qd::kernel("eig_outputs", [](qd::types::ndarray<double, 3, qd::needs_grad> a,
                                      qd::types::ndarray<double, 2, qd::needs_grad> out) {
    qd::range_for(a.shape(0), [&](qd::i32 i) {
      const auto m = load<double, N>(a, i);
      auto [w, Q] = qd::sym_eig(m);
      int c = 0;
      for (int r = 0; r < N; ++r) out(i, c++) = w[r];
      put_mat<N>(out, i, c, Q);
      if constexpr (N < 4) put_mat<N>(out, i, c, qd::make_spd(m));
      const auto x = qd::solve(m, qd::detail::generate_vec<N>([](int k) { return qd::expr<double>(1.0 + k); }));
      for (int r = 0; r < N; ++r) out(i, c++) = x[r];
    });
  });
}

// The adjoint of sum(seed * out) with respect to every entry, against central
// differences; entries of symmetric inputs are perturbed in the upper triangle only
// (the decompositions read nothing else). The step h: central differences err by about
// h^2 / gap^2 relative near a gap between singular values (or eigenvalues), so a smaller
// gap takes a smaller step.
template <int N, class K>
void check_gradient(K&& kernel, const std::vector<matrix<double, N>>& inputs, int outputs, bool upper_only, double rtol,
                    double h = 1e-6) {
  const auto n = static_cast<std::int64_t>(inputs.size());
  std::vector<double> flat;
  for (const auto& m : inputs)
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) flat.push_back(m(i, j));
  std::mt19937_64 g(3);
  std::uniform_real_distribution<double> ud(-1, 1);
  std::vector<double> seed(static_cast<std::size_t>(n * outputs));
  for (double& s : seed) s = ud(g);
  qd::ndarray<double, 3> a({n, N, N}, qd::needs_grad);
  qd::ndarray<double, 2> out({n, outputs}, qd::needs_grad);
  a.from_host(flat);
  kernel(a, out);
  out.grad().from_host(seed);
  a.grad().fill(0.0);
  kernel.grad(a, out);
  const auto adjoint = a.grad().to_host();
  auto loss = [&](const std::vector<double>& x) {
    a.from_host(x);
    kernel(a, out);
    const auto y = out.to_host();
    std::vector<double> l(static_cast<std::size_t>(n), 0.0);
    for (std::int64_t k = 0; k < n; ++k)
      for (int c = 0; c < outputs; ++c)
        l[static_cast<std::size_t>(k)] +=
            seed[static_cast<std::size_t>(k * outputs + c)] * y[static_cast<std::size_t>(k * outputs + c)];
    return l;
  };
  int failures = 0;
  double worst = 0;
  for (int e = 0; e < N * N; ++e) {
    if (upper_only && e / N > e % N) continue;
    std::vector<double> plus = flat, minus = flat;
    for (std::int64_t k = 0; k < n; ++k) {
      plus[static_cast<std::size_t>(k * N * N + e)] += h;
      minus[static_cast<std::size_t>(k * N * N + e)] -= h;
    }
    const auto lp = loss(plus), lm = loss(minus);
    for (std::int64_t k = 0; k < n; ++k) {
      const double fd = (lp[static_cast<std::size_t>(k)] - lm[static_cast<std::size_t>(k)]) / (2 * h);
      const double ad = adjoint[static_cast<std::size_t>(k * N * N + e)];
      const double err = std::abs(fd - ad) / std::max(1.0, std::abs(fd));
      worst = std::max(worst, err);
      if (!(err <= rtol) && ++failures <= 5) {
        CAPTURE(k);
        CAPTURE(e);
        CAPTURE(inputs[static_cast<std::size_t>(k)]);
        CAPTURE(fd);
        CAPTURE(ad);
        CHECK(err <= rtol);
      }
    }
  }
  MESSAGE("worst relative gradient error " << worst);
  CHECK(failures == 0);
}

// Matrices whose decomposition is differentiable: distinct singular values (or
// eigenvalues), some close together, some small, some of negative determinant.
template <int N>
std::vector<matrix<double, N>> differentiable_matrices(bool symmetric, double gap) {
  std::mt19937_64 g(21);
  std::uniform_real_distribution<double> ud(-1, 1);
  std::vector<matrix<double, N>> out;
  for (int k = 0; k < 24; ++k) {
    Eigen::Matrix<double, N, 1> s;
    for (int i = 0; i < N; ++i) s[i] = 2.0 - i * 0.6 + 0.1 * ud(g);
    if (k % 4 == 1) s[1] = s[0] - gap;     // nearly repeated
    if (k % 4 == 2) s[N - 1] = gap;        // near-singular
    if (k % 4 == 3) s[N - 1] = -s[N - 1];  // negative determinant / indefinite
    if (symmetric) {
      matrix<double, N> x;
      for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) x(i, j) = ud(g);
      const matrix<double, N> Q = orthonormal_columns<N>(x);
      out.push_back(Q * s.asDiagonal() * Q.transpose());
    } else {
      out.push_back(with_singular_values<N>(g, s.cwiseAbs()));
      if (k % 4 == 3) out.back().col(0) = -out.back().col(0);
    }
  }
  matrix<double, N> d = matrix<double, N>::Zero();  // diagonal input: the rotations start at the identity
  for (int i = 0; i < N; ++i) d(i, i) = 1.5 - 0.4 * i;
  out.push_back(d);
  return out;
}

// The adjoint kernels are large (the 4x4 eigen-decomposition's is 2.5 MB of C++): the
// host compiler builds them at -O0, 6x faster than at -O2. What is checked is the
// adjoint's arithmetic, which the optimizer may not change (-ffp-contract=off, no fast
// math); the decompositions' code at -O2 is checked above and in the per-backend suite.
void init_for_gradients() { qd_test::init_cpu({.opt_level = 0}); }

}  // namespace

TEST_CASE("gradients of qd::svd and qd::polar_decompose match central differences, near-degenerate too") {
  init_for_gradients();
  check_gradient<3>(svd_outputs_kernel<3>(), differentiable_matrices<3>(false, 1e-2), 45, false, 1e-6);
  check_gradient<3>(svd_outputs_kernel<3>(), differentiable_matrices<3>(false, 1e-4), 45, false, 1e-4, 1e-8);
  check_gradient<2>(svd_outputs_kernel<2>(), differentiable_matrices<2>(false, 1e-3), 20, false, 1e-6, 1e-7);
}

TEST_CASE("gradients of qd::sym_eig, qd::make_spd and qd::solve match central differences") {
  init_for_gradients();
  check_gradient<2>(eig_outputs_kernel<2>(), differentiable_matrices<2>(true, 1e-2), eig_outputs<2>, true, 1e-6);
  check_gradient<3>(eig_outputs_kernel<3>(), differentiable_matrices<3>(true, 1e-2), eig_outputs<3>, true, 1e-6);
  check_gradient<3>(eig_outputs_kernel<3>(), differentiable_matrices<3>(true, 1e-4), eig_outputs<3>, true, 1e-4, 1e-8);
  check_gradient<4>(eig_outputs_kernel<4>(), differentiable_matrices<4>(true, 1e-2), eig_outputs<4>, true, 1e-6);
}

TEST_CASE("the singular values' adjoint is u_k v_k^T exactly, at a diagonal input and a random one") {
  init_for_gradients();
  auto k = qd::kernel("singular_values", [](qd::types::ndarray<double, 3, qd::needs_grad> a,
                                            qd::types::ndarray<double, 2, qd::needs_grad> s) {
    qd::range_for(a.shape(0), [&](qd::i32 i) {
      auto [U, S, V] = qd::svd(load<double, 3>(a, i));
      for (int c = 0; c < 3; ++c) s(i, c) = S(c, c);
    });
  });
  std::mt19937_64 g(5);
  std::vector<matrix<double, 3>> ms{matrix<double, 3>(Eigen::Vector3d(3, 2, 1).asDiagonal()),
                                    with_singular_values<3>(g, Eigen::Vector3d(2, 1.5, 0.25))};
  for (int which = 0; which < 3; ++which) {
    auto a = upload<double, 3>(ms);
    qd::ndarray<double, 3> ag({2, 3, 3}, qd::needs_grad);
    std::vector<double> flat = a.to_host();
    ag.from_host(flat);
    qd::ndarray<double, 2> s({2, 3}, qd::needs_grad);
    k(ag, s);
    std::vector<double> seed(6, 0.0);
    seed[static_cast<std::size_t>(which)] = seed[static_cast<std::size_t>(3 + which)] = 1.0;
    s.grad().from_host(seed);
    ag.grad().fill(0.0);
    k.grad(ag, s);
    const auto grad = ag.grad().to_host();
    for (std::size_t m = 0; m < ms.size(); ++m) {
      Eigen::JacobiSVD<Eigen::MatrixXd> ref(ms[m], Eigen::ComputeFullU | Eigen::ComputeFullV);
      const matrix<double, 3> want = ref.matrixU().col(which) * ref.matrixV().col(which).transpose();
      CAPTURE(m);
      CAPTURE(which);
      CHECK((at<3>(grad, m) - want).norm() < 1e-12);
    }
  }
}
