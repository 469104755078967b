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

// The matrix of array `a` at element i, as a traced qd::mat.
template <class T, int N, class A>
qd::mat<T, N, N> load(const A& a, const qd::i32& i) {
  return qd::detail::generate_mat<N, N>([&](int r, int c) { return qd::expr<T>(a(i, r, c)); });
}
template <int N, class A, class M>
void store(const A& a, const qd::i32& i, const M& m) {
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < N; ++c) a(i, r, c) = m(r, c);
}

template <class T, int N>
auto svd_kernel() {
  return qd::kernel("svd", [](qd::types::ndarray<T, 3> a, qd::types::ndarray<T, 3> u, qd::types::ndarray<T, 2> s,
                              qd::types::ndarray<T, 3> v, qd::types::ndarray<T, 3> r, qd::types::ndarray<T, 3> p) {
    qd::range_for(a.shape(0), [&](qd::i32 i) {
      const auto m = load<T, N>(a, i);
      auto [U, S, V] = qd::svd(m);
      store<N>(u, i, U);
      store<N>(v, i, V);
      for (int k = 0; k < N; ++k) s(i, k) = S(k, k);
      auto [R, P] = qd::polar_decompose(m);
      store<N>(r, i, R);
      store<N>(p, i, P);
    });
  });
}

template <class T, int N>
auto sym_eig_kernel() {
  return qd::kernel("sym_eig", [](qd::types::ndarray<T, 3> a, qd::types::ndarray<T, 2> w, qd::types::ndarray<T, 3> q,
                                  qd::types::ndarray<T, 3> spd) {
    qd::range_for(a.shape(0), [&](qd::i32 i) {
      const auto m = load<T, N>(a, i);
      auto [values, Q] = qd::sym_eig(m);
      for (int k = 0; k < N; ++k) w(i, k) = values[k];
      store<N>(q, i, Q);
      store<N>(spd, i, qd::make_spd(m));
    });
  });
}

template <class T, int N>
auto solve_kernel() {
  return qd::kernel("solve", [](qd::types::ndarray<T, 3> a, qd::types::ndarray<T, 2> b, qd::types::ndarray<T, 2> x) {
    qd::range_for(a.shape(0), [&](qd::i32 i) {
      const auto rhs = qd::detail::generate_vec<N>([&](int k) { return qd::expr<T>(b(i, k)); });
      const auto sol = qd::solve(load<T, N>(a, i), rhs);
      for (int k = 0; k < N; ++k) x(i, k) = sol[k];
    });
  });
}

// Matrices with singular values `s`, between random rotations.
template <int N>
matrix<double, N> with_singular_values(std::mt19937_64& g, const Eigen::Matrix<double, N, 1>& s) {
  std::normal_distribution<double> nd;
  matrix<double, N> x, y;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) x(i, j) = nd(g), y(i, j) = nd(g);
  Eigen::HouseholderQR<matrix<double, N>> qx(x), qy(y);
  matrix<double, N> U = qx.householderQ(), V = qy.householderQ();
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
    Eigen::HouseholderQR<matrix<double, N>> q(x);
    matrix<double, N> Q = q.householderQ();
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
    add_spectrum(s);                                   // repeated
    s[N - 1] = 1 + 1e-9;
    add_spectrum(s);                                   // nearly repeated
    for (int i = 1; i < N; ++i) s[i] = std::pow(1e-7, i);
    add_spectrum(s);                                   // near-singular, graded
    for (int i = 1; i < N; ++i) s[i] = 0;
    add_spectrum(s);                                   // rank one
    for (int i = 0; i < N; ++i) s[i] = (i % 2 ? -1.0 : 1.0) * std::exp(3 * nd(g));
    add_spectrum(s);                                   // indefinite (symmetric) / spread
    s[N - 1] = 1e-300;
    add_spectrum(s);                                   // one vanishing
  }
  add(matrix<double, N>::Zero());
  add(matrix<double, N>::Identity());
  add(-matrix<double, N>::Identity());
  matrix<double, N> d = matrix<double, N>::Zero();
  for (int i = 0; i < N; ++i) d(i, i) = N - i - 0.5;
  add(d);                                              // diagonal, already decomposed
  add(d * 1e30);                                       // huge
  add(d * 1e-30);                                      // tiny
  matrix<double, N> perm = matrix<double, N>::Zero();
  for (int i = 0; i < N; ++i) perm(i, (i + 1) % N) = 1;
  add(perm);                                           // a permutation (det may be -1)
  return out;
}

template <class T, int N>
qd::ndarray<T, 3> upload(const std::vector<matrix<double, N>>& ms) {
  qd::ndarray<T, 3> a({static_cast<std::int64_t>(ms.size()), N, N});
  std::vector<T> flat;
  for (const auto& m : ms)
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) flat.push_back(static_cast<T>(m(i, j)));
  a.from_host(flat);
  return a;
}

template <int N, class T>
matrix<double, N> at(const std::vector<T>& flat, std::size_t k) {
  matrix<double, N> m;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) m(i, j) = static_cast<double>(flat[k * N * N + static_cast<std::size_t>(i * N + j)]);
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

template <class T, int N>
void check_svd(const std::vector<matrix<double, N>>& inputs) {
  const auto n = static_cast<std::int64_t>(inputs.size());
  auto a = upload<T, N>(inputs);
  qd::ndarray<T, 3> u({n, N, N}), v({n, N, N}), r({n, N, N}), p({n, N, N});
  qd::ndarray<T, 2> s({n, N});
  svd_kernel<T, N>()(a, u, s, v, r, p);
  const auto hu = u.to_host(), hv = v.to_host(), hr = r.to_host(), hp = p.to_host();
  const auto hs = s.to_host();
  const double tol = tolerance<T>();
  int failures = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const matrix<double, N> A = rounded<T, N>(inputs[k]);
    const matrix<double, N> U = at<N>(hu, k), V = at<N>(hv, k), R = at<N>(hr, k), P = at<N>(hp, k);
    Eigen::Matrix<double, N, 1> S;
    for (int i = 0; i < N; ++i) S[i] = static_cast<double>(hs[k * N + static_cast<std::size_t>(i)]);
    const double norm = std::max(A.norm(), 1e-300);
    const matrix<double, N> I = matrix<double, N>::Identity();
    Eigen::JacobiSVD<matrix<double, N>> ref(A);
    const auto want = ref.singularValues();
    const bool reconstructs = (U * S.asDiagonal() * V.transpose() - A).norm() <= tol * norm &&
                              (R * P - A).norm() <= 4 * tol * norm && (P - P.transpose()).norm() == 0;
    const bool rotations = (U.transpose() * U - I).norm() <= 8 * tol && (V.transpose() * V - I).norm() <= 8 * tol &&
                           (R.transpose() * R - I).norm() <= 8 * tol && std::abs(U.determinant() - 1) <= 8 * tol &&
                           std::abs(V.determinant() - 1) <= 8 * tol && std::abs(R.determinant() - 1) <= 8 * tol;
    bool values = true;
    for (int i = 0; i < N; ++i) {
      values = values && std::abs(std::abs(S[i]) - want[i]) <= tol * norm;             // Eigen's values
      if (i + 1 < N) values = values && S[i] >= std::abs(S[i + 1]) && S[i] >= 0;      // descending
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
void check_sym_eig(const std::vector<matrix<double, N>>& inputs) {
  const auto n = static_cast<std::int64_t>(inputs.size());
  auto a = upload<T, N>(inputs);
  qd::ndarray<T, 2> w({n, N});
  qd::ndarray<T, 3> q({n, N, N}), spd({n, N, N});
  sym_eig_kernel<T, N>()(a, w, q, spd);
  const auto hw = w.to_host();
  const auto hq = q.to_host(), hspd = spd.to_host();
  const double tol = tolerance<T>();
  int failures = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const matrix<double, N> A = rounded<T, N>(inputs[k]);
    const matrix<double, N> Q = at<N>(hq, k), Spd = at<N>(hspd, k);
    Eigen::Matrix<double, N, 1> W;
    for (int i = 0; i < N; ++i) W[i] = static_cast<double>(hw[k * N + static_cast<std::size_t>(i)]);
    const double norm = std::max(A.norm(), 1e-300);
    Eigen::SelfAdjointEigenSolver<matrix<double, N>> ref(A);
    const auto want = ref.eigenvalues();  // ascending
    Eigen::Matrix<double, N, 1> clamped = want.cwiseMax(0.0);
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
void check_solve(const std::vector<matrix<double, N>>& inputs) {
  const auto n = static_cast<std::int64_t>(inputs.size());
  auto a = upload<T, N>(inputs);
  std::mt19937_64 g(7);
  std::uniform_real_distribution<double> ud(-1, 1);
  std::vector<T> hb;
  for (std::int64_t k = 0; k < n * N; ++k) hb.push_back(static_cast<T>(ud(g)));
  qd::ndarray<T, 2> b({n, N}), x({n, N});
  b.from_host(hb);
  solve_kernel<T, N>()(a, b, x);
  const auto hx = x.to_host();
  int failures = 0, solved = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const matrix<double, N> A = rounded<T, N>(inputs[k]);
    Eigen::JacobiSVD<matrix<double, N>> sv(A);
    const double cond = sv.singularValues()[0] / sv.singularValues()[N - 1];
    if (!(cond < 1e6)) continue;  // ill-conditioned: the solution itself is not accurate to compare
    Eigen::Matrix<double, N, 1> B, X;
    for (int i = 0; i < N; ++i) {
      B[i] = static_cast<double>(hb[k * N + static_cast<std::size_t>(i)]);
      X[i] = static_cast<double>(hx[k * N + static_cast<std::size_t>(i)]);
    }
    const Eigen::Matrix<double, N, 1> want = A.partialPivLu().solve(B);
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
  CHECK(solved > 300);
  CHECK(failures == 0);
}

}  // namespace

TEST_CASE_TEMPLATE("qd::svd and qd::polar_decompose agree with Eigen within 1e-12 (f64) and 1e-5 (f32) of |A|", A,
                   on_cpu, on_reference) {
  qd::init({.arch = A::arch});
  const std::size_t keep = A::arch == qd::arch::reference ? 60 : 100000;  // the interpreter is slow
  auto take = [&](auto v) {
    if (v.size() > keep) v.erase(v.begin() + static_cast<std::ptrdiff_t>(keep / 2), v.end() - static_cast<std::ptrdiff_t>(keep / 2));
    return v;
  };
  check_svd<double, 3>(take(test_matrices<3>(false, 1)));
  check_svd<float, 3>(take(test_matrices<3>(false, 2)));
  check_svd<double, 2>(take(test_matrices<2>(false, 3)));
  check_svd<float, 2>(take(test_matrices<2>(false, 4)));
}

TEST_CASE_TEMPLATE("qd::sym_eig and qd::make_spd agree with Eigen for 2x2, 3x3 and 4x4", A, on_cpu, on_reference) {
  qd::init({.arch = A::arch});
  const std::size_t keep = A::arch == qd::arch::reference ? 40 : 100000;
  auto take = [&](auto v) {
    if (v.size() > keep) v.erase(v.begin() + static_cast<std::ptrdiff_t>(keep / 2), v.end() - static_cast<std::ptrdiff_t>(keep / 2));
    return v;
  };
  check_sym_eig<double, 2>(take(test_matrices<2>(true, 5)));
  check_sym_eig<float, 2>(take(test_matrices<2>(true, 6)));
  check_sym_eig<double, 3>(take(test_matrices<3>(true, 7)));
  check_sym_eig<float, 3>(take(test_matrices<3>(true, 8)));
  check_sym_eig<double, 4>(take(test_matrices<4>(true, 9)));
  check_sym_eig<float, 4>(take(test_matrices<4>(true, 10)));
}

TEST_CASE("qd::sym_eig reads the upper triangle only") {
  qd_test::init_cpu();
  std::vector<matrix<double, 3>> ms(1);
  ms[0] << 2, 1, 0.5, -7, 3, 0.25, 9, 4, 1;  // lower triangle garbage
  matrix<double, 3> upper = ms[0].triangularView<Eigen::Upper>();
  matrix<double, 3> sym = upper + upper.transpose();
  sym.diagonal() /= 2;
  qd::ndarray<double, 2> w({1, 3});
  qd::ndarray<double, 3> q({1, 3, 3}), spd({1, 3, 3});
  auto a = upload<double, 3>(ms);
  sym_eig_kernel<double, 3>()(a, w, q, spd);
  Eigen::SelfAdjointEigenSolver<matrix<double, 3>> ref(sym);
  const auto hw = w.to_host();
  for (int i = 0; i < 3; ++i) CHECK(std::abs(hw[static_cast<std::size_t>(i)] - ref.eigenvalues()[i]) < 1e-13 * sym.norm());
}

TEST_CASE_TEMPLATE("qd::solve agrees with Eigen's partial-pivoting LU for 2x2, 3x3 and 4x4", A, on_cpu, on_reference) {
  qd::init({.arch = A::arch});
  check_solve<double, 2>(test_matrices<2>(false, 11));
  check_solve<float, 3>(test_matrices<3>(false, 12));
  check_solve<double, 3>(test_matrices<3>(false, 13));
  check_solve<double, 4>(test_matrices<4>(false, 14));
}

TEST_CASE("qd::solve of a singular system gives infinities or NaNs, not a crash") {
  qd_test::init_cpu();
  std::vector<matrix<double, 2>> ms(1, matrix<double, 2>::Zero());
  auto a = upload<double, 2>(ms);
  qd::ndarray<double, 2> b({1, 2}), x({1, 2});
  b.fill(1.0);
  solve_kernel<double, 2>()(a, b, x);
  for (double v : x.to_host()) CHECK(!std::isfinite(v));
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

// out = (w, Q, make_spd(A), solve(A, e)) per matrix.
template <int N>
auto eig_outputs_kernel() {
  return qd::kernel("eig_outputs", [](qd::types::ndarray<double, 3, qd::needs_grad> a,
                                      qd::types::ndarray<double, 2, qd::needs_grad> out) {
    qd::range_for(a.shape(0), [&](qd::i32 i) {
      const auto m = load<double, N>(a, i);
      auto [w, Q] = qd::sym_eig(m);
      const auto spd = qd::make_spd(m);
      const auto x = qd::solve(m, qd::detail::generate_vec<N>([](int k) { return qd::expr<double>(1.0 + k); }));
      int c = 0;
      for (int r = 0; r < N; ++r) out(i, c++) = w[r];
      for (int r = 0; r < N; ++r)
        for (int q = 0; q < N; ++q) out(i, c++) = Q(r, q);
      for (int r = 0; r < N; ++r)
        for (int q = 0; q < N; ++q) out(i, c++) = spd(r, q);
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
void check_gradient(K&& kernel, const std::vector<matrix<double, N>>& inputs, int outputs, bool upper_only,
                    double rtol, double h = 1e-6) {
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
        l[static_cast<std::size_t>(k)] += seed[static_cast<std::size_t>(k * outputs + c)] * y[static_cast<std::size_t>(k * outputs + c)];
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
    if (k % 4 == 1) s[1] = s[0] - gap;                     // nearly repeated
    if (k % 4 == 2) s[N - 1] = gap;                        // near-singular
    if (k % 4 == 3) s[N - 1] = -s[N - 1];                  // negative determinant / indefinite
    if (symmetric) {
      matrix<double, N> x;
      for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) x(i, j) = ud(g);
      Eigen::HouseholderQR<matrix<double, N>> q(x);
      matrix<double, N> Q = q.householderQ();
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

}  // namespace

TEST_CASE("gradients of qd::svd and qd::polar_decompose match central differences, near-degenerate too") {
  qd_test::init_cpu();
  check_gradient<3>(svd_outputs_kernel<3>(), differentiable_matrices<3>(false, 1e-2), 45, false, 1e-6);
  check_gradient<3>(svd_outputs_kernel<3>(), differentiable_matrices<3>(false, 1e-4), 45, false, 1e-4, 1e-8);
  check_gradient<2>(svd_outputs_kernel<2>(), differentiable_matrices<2>(false, 1e-3), 20, false, 1e-6, 1e-7);
}

TEST_CASE("gradients of qd::sym_eig, qd::make_spd and qd::solve match central differences") {
  qd_test::init_cpu();
  check_gradient<2>(eig_outputs_kernel<2>(), differentiable_matrices<2>(true, 1e-2), 2 + 4 + 4 + 2, true, 1e-6);
  check_gradient<3>(eig_outputs_kernel<3>(), differentiable_matrices<3>(true, 1e-2), 3 + 9 + 9 + 3, true, 1e-6);
  check_gradient<3>(eig_outputs_kernel<3>(), differentiable_matrices<3>(true, 1e-4), 3 + 9 + 9 + 3, true, 1e-4, 1e-8);
  check_gradient<4>(eig_outputs_kernel<4>(), differentiable_matrices<4>(true, 1e-2), 4 + 16 + 16 + 4, true, 1e-6);
}

TEST_CASE("the singular values' adjoint is u_k v_k^T exactly, at a diagonal input and a random one") {
  qd_test::init_cpu();
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
      Eigen::JacobiSVD<matrix<double, 3>> ref(ms[m], Eigen::ComputeFullU | Eigen::ComputeFullV);
      const matrix<double, 3> want = ref.matrixU().col(which) * ref.matrixV().col(which).transpose();
      CAPTURE(m);
      CAPTURE(which);
      CHECK((at<3>(grad, m) - want).norm() < 1e-12);
    }
  }
}
