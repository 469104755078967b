// The per-thread linear algebra kernel of the per-backend suite (SPEC §13.7): qd::svd,
// qd::polar_decompose, qd::sym_eig, qd::make_spd and qd::solve in f32 and f64, checked
// on the host with plain C++ products (Eigen's comparisons are runtime/linalg_test's).
#pragma once

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <quadrants/quadrants.hpp>

namespace qd_test {

namespace kernels {

// Per matrix i of a (n, 3, 3) f32 and a (n, 4, 4) f64 array: out32(i, 0..44) = U, S, V,
// R, P of the 3x3; out64(i, 0..) = w, Q, make_spd of the 4x4 (upper triangle), solve(A, (1, 2, 3, 4)).
inline auto linalg() {
  return qd::kernel(
      "linalg", {"a", "b", "out32", "out64"},
      [](qd::types::ndarray<float, 3> a, qd::types::ndarray<double, 3> b, qd::types::ndarray<float, 2> out32,
         qd::types::ndarray<double, 2> out64) {
        qd::range_for(a.shape(0), [&](qd::i32 i) {
          const auto m3 = qd::detail::generate_mat<3, 3>([&](int r, int c) { return qd::f32(a(i, r, c)); });
          const auto m4 = qd::detail::generate_mat<4, 4>([&](int r, int c) { return qd::f64(b(i, r, c)); });
          auto [U, S, V] = qd::svd(m3);
          auto [R, P] = qd::polar_decompose(m3);
          int c = 0;
          for (const auto* x : {&U, &S, &V, &R, &P})
            for (int r = 0; r < 3; ++r)
              for (int q = 0; q < 3; ++q) out32(i, c++) = (*x)(r, q);
          auto [w, Q] = qd::sym_eig(m4);
          const auto spd = qd::make_spd(m4);
          const auto x = qd::solve(m4, qd::vec4d(1.0, 2.0, 3.0, 4.0));
          c = 0;
          for (int r = 0; r < 4; ++r) out64(i, c++) = w[r];
          for (int r = 0; r < 4; ++r)
            for (int q = 0; q < 4; ++q) out64(i, c++) = Q(r, q);
          for (int r = 0; r < 4; ++r)
            for (int q = 0; q < 4; ++q) out64(i, c++) = spd(r, q);
          for (int r = 0; r < 4; ++r) out64(i, c++) = x[r];
        });
      });
}

}  // namespace kernels

namespace linalg_checks {

template <std::size_t N>
using square = std::array<std::array<double, N>, N>;

template <std::size_t N, class T>
square<N> read(const std::vector<T>& flat, std::size_t at) {
  square<N> m{};
  for (std::size_t r = 0; r < N; ++r)
    for (std::size_t c = 0; c < N; ++c) m[r][c] = static_cast<double>(flat[at + r * N + c]);
  return m;
}

template <std::size_t N>
square<N> product(const square<N>& a, const square<N>& b, bool transpose_b = false) {
  square<N> p{};
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = 0; j < N; ++j)
      for (std::size_t k = 0; k < N; ++k) p[i][j] += a[i][k] * (transpose_b ? b[j][k] : b[k][j]);
  return p;
}

template <std::size_t N>
double distance(const square<N>& a, const square<N>& b) {
  double s = 0;
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = 0; j < N; ++j) s += (a[i][j] - b[i][j]) * (a[i][j] - b[i][j]);
  return std::sqrt(s);
}

template <std::size_t N>
square<N> identity() {
  square<N> m{};
  for (std::size_t i = 0; i < N; ++i) m[i][i] = 1;
  return m;
}

inline double det3(const square<3>& m) {
  return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
         m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
}

// Runs the suite kernel on random 3x3 and symmetric 4x4 matrices (some singular) and checks
// reconstruction, orthogonality, orientation and order in plain C++.
inline void check_linalg() {
  const int n = 64;
  std::mt19937_64 g(17);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<float> ha;
  std::vector<double> hb;
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < 9; ++k) ha.push_back(static_cast<float>(u(g)));
    if (i % 8 == 7)  // rank 2: the third row the sum of the others
      for (int c = 0; c < 3; ++c)
        ha[ha.size() - 3 + static_cast<std::size_t>(c)] =
            ha[ha.size() - 9 + static_cast<std::size_t>(c)] + ha[ha.size() - 6 + static_cast<std::size_t>(c)];
    square<4> s{};
    for (std::size_t r = 0; r < 4; ++r)
      for (std::size_t c = r; c < 4; ++c)
        s[r][c] = s[c][r] = u(g) + (r == c ? 2.5 : 0.0);  // diagonally dominant: solvable
    for (std::size_t r = 0; r < 4; ++r)
      for (std::size_t c = 0; c < 4; ++c) hb.push_back(s[r][c]);
  }
  qd::ndarray<float, 3> a({n, 3, 3});
  qd::ndarray<double, 3> b({n, 4, 4});
  qd::ndarray<float, 2> out32({n, 45});
  qd::ndarray<double, 2> out64({n, 4 + 16 + 16 + 4});
  a.from_host(ha);
  b.from_host(hb);
  kernels::linalg()(a, b, out32, out64);
  const auto r32 = out32.to_host();
  const auto r64 = out64.to_host();
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    const auto at = static_cast<std::size_t>(i);
    const square<3> A = read<3>(ha, at * 9);
    const square<3> U = read<3>(r32, at * 45), S = read<3>(r32, at * 45 + 9), V = read<3>(r32, at * 45 + 18);
    const square<3> R = read<3>(r32, at * 45 + 27), P = read<3>(r32, at * 45 + 36);
    const double norm = distance<3>(A, square<3>{});
    bool ok = distance<3>(product<3>(product<3>(U, S), V, true), A) <= 1e-5 * norm &&
              distance<3>(product<3>(U, U, true), identity<3>()) <= 1e-5 && std::abs(det3(U) - 1) <= 1e-5 &&
              std::abs(det3(V) - 1) <= 1e-5 && distance<3>(product<3>(R, P), A) <= 1e-5 * norm &&
              std::abs(det3(R) - 1) <= 1e-5 && S[0][0] >= S[1][1] && S[1][1] >= std::abs(S[2][2]);
    const square<4> B = read<4>(hb, at * 16);
    const square<4> Q = read<4>(r64, at * 40 + 4), Spd = read<4>(r64, at * 40 + 20);
    square<4> D{};
    for (std::size_t k = 0; k < 4; ++k) D[k][k] = r64[at * 40 + k];
    ok = ok && distance<4>(product<4>(product<4>(Q, D), Q, true), B) <= 1e-12 * distance<4>(B, square<4>{}) &&
         distance<4>(Spd, B) <= 1e-12 * distance<4>(B, square<4>{});  // diagonally dominant: already SPD
    for (std::size_t r = 0; r < 4; ++r) {
      double row = 0;
      for (std::size_t c = 0; c < 4; ++c) row += B[r][c] * r64[at * 40 + 36 + c];
      ok = ok && std::abs(row - static_cast<double>(r + 1)) <= 1e-12 * 16;
      if (r < 3) ok = ok && D[r][r] <= D[r + 1][r + 1];
    }
    if (!ok && ++bad <= 3) {
      CAPTURE(i);
      CHECK(ok);
    }
  }
  CHECK(bad == 0);
}

}  // namespace linalg_checks

}  // namespace qd_test
