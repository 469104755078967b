// The vector and matrix kernels of the per-backend suite (SPEC §11.1, §11.4), with
// their checks against plain C++: gpu_suite_test runs them on every arch, the
// compile-only tests compile them with NVRTC and hipRTC, runtime/vec_test and
// analysis/atomic_demotion_test run them on the CPU and the reference backend.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include <quadrants/quadrants.hpp>

namespace qd_test {

namespace kernels {

inline auto vec_ops() {
  return qd::kernel(
      "vec_ops", {"a", "b", "out"},
      [](qd::types::ndarray<qd::vec3f, 1> a, qd::types::ndarray<qd::vec3f, 1> b, qd::types::ndarray<float, 2> out) {
        qd::range_for(a.shape(0), [&](qd::i32 i) {
          qd::vec3f u = a[i];
          qd::vec3f v = b[i];
          int c = 0;
          auto put = [&](const auto& x) {
            if constexpr (qd::vector_like<decltype(x)>) {
              for (int k2 = 0; k2 < qd::detail::vector_size<decltype(x)>; ++k2) out(i, c++) = x[k2];
            } else {
              out(i, c++) = x;
            }
          };
          put(u + v), put(u - v), put(u * v), put(u / v), put(-u), put(+u);
          put(2.0f * u), put(u * 3.0f), put(u / 2.0f), put(u + 1.0f), put(1.0f - u);
          put(qd::dot(u, v)), put(qd::cross(u, v)), put(qd::norm(u)), put(qd::norm_sqr(u));
          put(qd::normalize(u)), put(qd::min(u, v)), put(qd::max(u, v)), put(qd::abs(v));
          put(u.x()), put(u.y()), put(u.z()), put(v[1]);
          put(qd::vec3f(1.0f, 2.0f, u.x())), put(qd::vec3f(0.5f)), put(qd::vec3f::zero());
          put(a[i] + b[i]);
          qd::vec3i iv(1, 2, 3);
          put(iv * u);
        });
      });
}

inline auto mat_ops() {
  return qd::kernel(
      "mat_ops", {"m", "v", "out"},
      [](qd::types::ndarray<qd::mat3f, 1> ms, qd::types::ndarray<qd::vec3f, 1> vs, qd::types::ndarray<float, 2> out) {
        qd::range_for(ms.shape(0), [&](qd::i32 i) {
          qd::mat3f m = ms[i];
          qd::mat3f n = ms[(i + 1) % ms.shape(0)];
          qd::vec3f v = vs[i];
          int c = 0;
          auto put = [&](const auto& x) {
            using X = std::remove_cvref_t<decltype(x)>;
            if constexpr (qd::matrix_like<X>) {
              for (int r = 0; r < X::rows; ++r)
                for (int q = 0; q < X::cols; ++q) out(i, c++) = x(r, q);
            } else if constexpr (qd::vector_like<X>) {
              for (int r = 0; r < X::size; ++r) out(i, c++) = x[r];
            } else {
              out(i, c++) = x;
            }
          };
          put(m * v), put(m * n), put(m + n), put(m - n), put(-m), put(2.0f * m), put(m * 0.5f);
          put(m / 4.0f), put(qd::transpose(m)), put(qd::determinant(m)), put(qd::trace(m));
          put(qd::inverse(m) * m), put(qd::outer(v, m.row(1))), put(m.row(2)), put(m.col(0));
          put(m(1, 2)), put(qd::mat3f::identity()), put(qd::mat3f::zero());
          put(qd::mat3f(v, m.col(1), qd::vec3f(1.0f, 2.0f, 3.0f)));
          put(qd::mat2f(1.0f, 2.0f, 3.0f, v.x()) * qd::vec2f(v.y(), v.z()));
          qd::mat4f big(m(0, 0), 1.0f, 0.5f, 0.0f, 0.25f, m(1, 1), 1.0f, 0.5f, 0.0f, 0.5f, m(2, 2), 1.0f, 1.0f, 0.0f,
                        0.25f, 3.0f);
          put(qd::determinant(big)), put(qd::inverse(big) * big);
          put(qd::determinant(qd::mat2i(2, 3, 1, 4))), put(qd::inverse(qd::mat2i(2, 3, 1, 4)));
        });
      });
}

inline auto vec_vars() {
  return qd::kernel("vec_vars", {"p", "out", "total", "mats"},
                    [](qd::types::ndarray<qd::vec3f, 1> p, qd::types::ndarray<qd::vec3f, 1> out,
                       qd::types::ndarray<qd::vec3f, 1> total, qd::types::ndarray<qd::mat2f, 1> mats) {
                      qd::var<qd::vec3f> sum = qd::vec3f(0.0f);  // top level: += is a reduction per component
                      qd::range_for(p.shape(0), [&](qd::i32 i) {
                        qd::var<qd::vec3f> acc = qd::vec3f(1.0f, 0.0f, 0.0f);
                        qd::range_for(3, [&](qd::i32 j) { acc += p[i] * qd::cast<float>(j); });
                        acc[1] = acc[1] + 10.0f;
                        acc.z() -= 1.0f;
                        acc *= 2.0f;
                        qd::var<qd::vec3f> copy = acc;
                        copy.x() = 0.0f;  // the copy is a new variable
                        out[i] = acc.value() + copy;
                        sum += p[i];
                        qd::var<qd::mat2f> m = qd::mat2f::identity();
                        m(0, 1) = p[i].x();
                        m += qd::mat2f(1.0f, 1.0f, 1.0f, 1.0f);
                        mats[i] = m;
                      });
                      total[0] = sum;
                    });
}

inline auto vec_elements() {
  return qd::kernel("vec_elements", {"p", "q", "hits", "olds"},
                    [](qd::types::ndarray<qd::vec3f, 1> p, qd::types::ndarray<qd::mat3f, 1> q,
                       qd::types::ndarray<qd::vec3i, 1> hits, qd::types::ndarray<qd::vec3i, 1> olds) {
                      qd::range_for(p.shape(0), [&](qd::i32 i) {
                        p[i] = p[i] + qd::vec3f(1.0f, 2.0f, 3.0f);
                        p[i][2] += 1.0f;
                        p[i] -= qd::vec3f(0.5f);
                        q[i](0, 1) = p[i].y();
                        q[i] += qd::mat3f::identity();
                        qd::atomic_add(hits[0], qd::vec3i(1, i, 2));  // contended: one atomic per component
                      });
                      // Serial: the old values are known.
                      olds[0] = qd::atomic_add(hits[1], qd::vec3i(5, 6, 7));
                      olds[1] = qd::atomic_add(hits[1], qd::vec3i(1, 1, 1));
                    });
}

// Demoted updates (y[i], rev[n - 1 - i]) next to atomic ones (a scatter, one element).
inline auto mixed_updates() {
  return qd::kernel("mixed_updates", {"x", "y", "rev", "idx", "hist", "total"},
                    [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y,
                       qd::types::ndarray<std::int32_t, 1> rev, qd::types::ndarray<std::int32_t, 1> idx,
                       qd::types::ndarray<std::int32_t, 1> hist, qd::types::ndarray<std::int32_t, 1> total) {
                      qd::range_for(x.shape(0), [&](qd::i32 i) {
                        y[i] += 2.0f * x[i];           // demoted
                        rev[x.shape(0) - 1 - i] += i;  // demoted
                        hist[idx[i]] += 1;             // scatter: atomic
                        total[0] += 1;                 // one element: atomic
                      });
                    });
}

// Vector and matrix scalar parameters: one run-time argument per component.
inline auto vec_params() {
  return qd::kernel("vec_params", {"p", "g", "m", "s"},
                    [](qd::types::ndarray<qd::vec3f, 1> p, qd::vec3f g, qd::mat2d m, qd::f32 s) {
                      qd::range_for(p.shape(0), [&](qd::i32 i) {
                        qd::vec2d r = m * qd::vec2d(qd::cast<double>(p[i].x()), qd::cast<double>(p[i].y()));
                        p[i] = p[i] + g * s + qd::vec3f(qd::cast<float>(r.x()), qd::cast<float>(r.y()), 0.0f);
                      });
                    });
}

}  // namespace kernels

namespace vec_checks {

using h3 = std::array<float, 3>;
using h33 = std::array<std::array<float, 3>, 3>;

// Plain C++ vector helpers, written independently of the library.
inline h3 add(h3 a, h3 b) { return {a[0] + b[0], a[1] + b[1], a[2] + b[2]}; }
inline h3 sub(h3 a, h3 b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }
inline h3 scale(float s, h3 a) { return {s * a[0], s * a[1], s * a[2]}; }
inline float dot3(h3 a, h3 b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
inline h3 cross3(h3 a, h3 b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}

inline bool close_to(double got, double want, double tol = 1e-5) {
  return std::abs(got - want) <= tol * std::max(1.0, std::abs(want));
}

inline std::vector<h3> sample_vectors(int n, float shift) {
  std::vector<h3> v;
  for (int i = 0; i < n; ++i)
    v.push_back({0.5f + static_cast<float>(i % 7) * 0.25f + shift, -1.0f + static_cast<float>(i % 5) * 0.5f,
                 2.0f - static_cast<float>(i % 3) * 0.75f - shift});
  return v;
}

// Plain C++ 3x3 helpers.
inline h33 matmul(const h33& a, const h33& b) {
  h33 r{};
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j) {
      float s = 0;
      for (std::size_t k = 0; k < 3; ++k) s += a[i][k] * b[k][j];
      r[i][j] = s;
    }
  return r;
}
inline h3 matvec(const h33& a, h3 v) {
  h3 r{};
  for (std::size_t i = 0; i < 3; ++i) r[i] = a[i][0] * v[0] + a[i][1] * v[1] + a[i][2] * v[2];
  return r;
}
// The determinant by Gaussian elimination with partial pivoting, in double.
template <std::size_t N>
inline double det_gauss(std::array<std::array<double, N>, N> m) {
  double det = 1;
  for (std::size_t c = 0; c < N; ++c) {
    std::size_t p = c;
    for (std::size_t r = c + 1; r < N; ++r)
      if (std::abs(m[r][c]) > std::abs(m[p][c])) p = r;
    if (m[p][c] == 0) return 0;
    if (p != c) std::swap(m[p], m[c]), det = -det;
    det *= m[c][c];
    for (std::size_t r = c + 1; r < N; ++r) {
      double f = m[r][c] / m[c][c];
      for (std::size_t k = c; k < N; ++k) m[r][k] -= f * m[c][k];
    }
  }
  return det;
}

inline std::vector<h33> sample_matrices(int n) {
  std::vector<h33> out;
  for (int i = 0; i < n; ++i) {
    h33 m{};
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c)
        m[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)] =
            static_cast<float>(((i + 1) * (r + 2) * (c + 3)) % 11) * 0.25f - 1.0f + (r == c ? 2.0f : 0.0f);
    out.push_back(m);
  }
  return out;
}

inline void check_vec_ops() {
  auto k = kernels::vec_ops();
  const int n = 40;
  auto ha = sample_vectors(n, 0.0f), hb = sample_vectors(n, 0.3f);
  for (auto& v : hb) v = {v[2], v[0] + 0.1f, -v[1] + 0.2f};
  qd::ndarray<qd::vec3f, 1> a(n), b(n);
  a.from_host(ha);
  b.from_host(hb);
  std::vector<std::vector<float>> want;
  for (int i = 0; i < n; ++i) {
    h3 u = ha[static_cast<std::size_t>(i)], v = hb[static_cast<std::size_t>(i)];
    std::vector<float> row;
    auto put = [&](h3 x) { row.insert(row.end(), x.begin(), x.end()); };
    auto put1 = [&](float x) { row.push_back(x); };
    put(add(u, v)), put(sub(u, v)), put({u[0] * v[0], u[1] * v[1], u[2] * v[2]}),
        put({u[0] / v[0], u[1] / v[1], u[2] / v[2]});
    put(scale(-1.0f, u)), put(u), put(scale(2.0f, u)), put(scale(3.0f, u)), put({u[0] / 2, u[1] / 2, u[2] / 2});
    put({u[0] + 1, u[1] + 1, u[2] + 1}), put({1 - u[0], 1 - u[1], 1 - u[2]});
    float len = std::sqrt(dot3(u, u));
    put1(dot3(u, v)), put(cross3(u, v)), put1(len), put1(dot3(u, u));
    put({u[0] / len, u[1] / len, u[2] / len});
    put({std::min(u[0], v[0]), std::min(u[1], v[1]), std::min(u[2], v[2])});
    put({std::max(u[0], v[0]), std::max(u[1], v[1]), std::max(u[2], v[2])});
    put({std::abs(v[0]), std::abs(v[1]), std::abs(v[2])});
    put1(u[0]), put1(u[1]), put1(u[2]), put1(v[1]);
    put({1.0f, 2.0f, u[0]}), put({0.5f, 0.5f, 0.5f}), put({0, 0, 0}), put(add(u, v)), put({u[0], 2 * u[1], 3 * u[2]});
    want.push_back(row);
  }
  const auto columns = static_cast<std::int64_t>(want[0].size());
  qd::ndarray<float, 2> out({n, columns});
  k(a, b, out);
  auto got = out.to_host();
  int bad = 0;
  for (int i = 0; i < n; ++i)
    for (std::int64_t c = 0; c < columns; ++c) {
      float g = got[static_cast<std::size_t>(i * columns + c)],
            w = want[static_cast<std::size_t>(i)][static_cast<std::size_t>(c)];
      if (!close_to(g, w) && ++bad < 10) {
        CAPTURE(i);
        CAPTURE(c);
        CHECK(g == doctest::Approx(w));
      }
    }
  CHECK(bad == 0);
}

inline void check_mat_ops() {
  auto k = kernels::mat_ops();
  const int n = 24;
  auto hm = sample_matrices(n);
  auto hv = sample_vectors(n, 0.1f);
  qd::ndarray<qd::mat3f, 1> ms(n);
  qd::ndarray<qd::vec3f, 1> vs(n);
  ms.from_host(hm);
  vs.from_host(hv);
  CHECK(ms.storage_shape() == std::array<std::int64_t, 3>{n, 3, 3});
  std::vector<std::vector<double>> want;
  for (int i = 0; i < n; ++i) {
    const h33& m = hm[static_cast<std::size_t>(i)];
    const h33& nn = hm[static_cast<std::size_t>((i + 1) % n)];
    h3 v = hv[static_cast<std::size_t>(i)];
    std::vector<double> row;
    auto put3 = [&](h3 x) { row.insert(row.end(), x.begin(), x.end()); };
    auto put33 = [&](const h33& x) {
      for (auto& r : x) put3(r);
    };
    auto each = [&](auto f) {
      h33 r{};
      for (std::size_t a = 0; a < 3; ++a)
        for (std::size_t b = 0; b < 3; ++b) r[a][b] = f(a, b);
      put33(r);
    };
    put3(matvec(m, v)), put33(matmul(m, nn));
    each([&](auto a, auto b) { return m[a][b] + nn[a][b]; });
    each([&](auto a, auto b) { return m[a][b] - nn[a][b]; });
    each([&](auto a, auto b) { return -m[a][b]; });
    each([&](auto a, auto b) { return 2 * m[a][b]; });
    each([&](auto a, auto b) { return m[a][b] * 0.5f; });
    each([&](auto a, auto b) { return m[a][b] / 4; });
    each([&](auto a, auto b) { return m[b][a]; });
    std::array<std::array<double, 3>, 3> md{};
    for (std::size_t a = 0; a < 3; ++a)
      for (std::size_t b = 0; b < 3; ++b) md[a][b] = m[a][b];
    row.push_back(det_gauss(md));
    row.push_back(m[0][0] + m[1][1] + m[2][2]);
    each([&](auto a, auto b) { return a == b ? 1.0f : 0.0f; });  // inverse(m) * m
    each([&](auto a, auto b) { return v[a] * m[1][b]; });
    put3(m[2]), put3({m[0][0], m[1][0], m[2][0]});
    row.push_back(m[1][2]);
    each([&](auto a, auto b) { return a == b ? 1.0f : 0.0f; });
    each([&](auto, auto) { return 0.0f; });
    put33({v, h3{m[0][1], m[1][1], m[2][1]}, h3{1, 2, 3}});
    row.push_back(1 * v[1] + 2 * v[2]), row.push_back(3 * v[1] + v[0] * v[2]);
    std::array<std::array<double, 4>, 4> big{
        {{m[0][0], 1, 0.5, 0}, {0.25, m[1][1], 1, 0.5}, {0, 0.5, m[2][2], 1}, {1, 0, 0.25, 3}}};
    row.push_back(det_gauss(big));
    for (std::size_t a = 0; a < 4; ++a)
      for (std::size_t b = 0; b < 4; ++b) row.push_back(a == b ? 1.0 : 0.0);
    row.push_back(5);
    for (double x : {4.0 / 5, -3.0 / 5, -1.0 / 5, 2.0 / 5}) row.push_back(x);
    want.push_back(row);
  }
  const auto columns = static_cast<std::int64_t>(want[0].size());
  qd::ndarray<float, 2> out({n, columns});
  k(ms, vs, out);
  auto got = out.to_host();
  int bad = 0;
  for (int i = 0; i < n; ++i)
    for (std::int64_t c = 0; c < columns; ++c) {
      double g = got[static_cast<std::size_t>(i * columns + c)],
             w = want[static_cast<std::size_t>(i)][static_cast<std::size_t>(c)];
      if (!close_to(g, w, 1e-4) && ++bad < 10) {
        CAPTURE(i);
        CAPTURE(c);
        CHECK(g == doctest::Approx(w));
      }
    }
  CHECK(bad == 0);
}

inline void check_vec_vars() {
  auto k = kernels::vec_vars();
  const int n = 50;
  auto hp = sample_vectors(n, 0.0f);
  qd::ndarray<qd::vec3f, 1> p(n), out(n), total(1);
  qd::ndarray<qd::mat2f, 1> mats(n);
  p.from_host(hp);
  k(p, out, total, mats);
  auto got = out.to_host();
  auto gm = mats.to_host();
  h3 sum{0, 0, 0};
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    h3 v = hp[static_cast<std::size_t>(i)];
    h3 acc{1, 0, 0};
    for (int j = 0; j < 3; ++j) acc = add(acc, scale(static_cast<float>(j), v));
    acc[1] += 10, acc[2] -= 1, acc = scale(2, acc);
    h3 copy = acc;
    copy[0] = 0;
    h3 want = add(acc, copy);
    for (std::size_t c = 0; c < 3; ++c)
      if (!close_to(got[static_cast<std::size_t>(i)][c], want[c])) ++bad;
    sum = add(sum, v);
    std::array<std::array<float, 2>, 2> wm{{{2, v[0] + 1}, {1, 2}}};
    if (gm[static_cast<std::size_t>(i)] != wm) ++bad;
  }
  CHECK(bad == 0);
  auto t = total.to_host()[0];
  for (std::size_t c = 0; c < 3; ++c) CHECK(close_to(t[c], sum[c]));
}

inline void check_vec_elements() {
  auto k = kernels::vec_elements();
  const int n = 64;
  auto hp = sample_vectors(n, 0.0f);
  auto hq = sample_matrices(n);
  qd::ndarray<qd::vec3f, 1> p(n);
  qd::ndarray<qd::mat3f, 1> q(n);
  qd::ndarray<qd::vec3i, 1> hits(2), olds(2);
  p.from_host(hp);
  q.from_host(hq);
  hits.fill({0, 0, 0});
  k(p, q, hits, olds);
  auto gp = p.to_host();
  auto gq = q.to_host();
  int bad = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
    h3 w = add(hp[i], {1, 2, 3});
    w[2] += 1;
    w = sub(w, {0.5f, 0.5f, 0.5f});
    if (gp[i] != w) ++bad;
    h33 wq = hq[i];
    wq[0][1] = w[1];
    for (std::size_t d = 0; d < 3; ++d) wq[d][d] += 1;
    if (gq[i] != wq) ++bad;
  }
  CHECK(bad == 0);
  auto h = hits.to_host();
  CHECK(h[0] == std::array<std::int32_t, 3>{n, n * (n - 1) / 2, 2 * n});
  CHECK(h[1] == std::array<std::int32_t, 3>{6, 7, 8});
  auto o = olds.to_host();
  CHECK(o[0] == std::array<std::int32_t, 3>{0, 0, 0});
  CHECK(o[1] == std::array<std::int32_t, 3>{5, 6, 7});
}

inline void check_mixed_updates() {
  const int n = 20000, bins = 7;
  auto k = kernels::mixed_updates();
  std::vector<float> hx(n), hy(n);
  std::vector<std::int32_t> hrev(n), hidx(n);
  for (int i = 0; i < n; ++i) {
    hx[static_cast<std::size_t>(i)] = static_cast<float>(i % 13) * 0.5f;
    hy[static_cast<std::size_t>(i)] = static_cast<float>(i % 5);
    hrev[static_cast<std::size_t>(i)] = 3 * i;
    hidx[static_cast<std::size_t>(i)] = (i * 31) % bins;
  }
  qd::ndarray<float, 1> x(n), y(n);
  qd::ndarray<std::int32_t, 1> rev(n), idx(n), hist(bins), total(1);
  x.from_host(hx);
  y.from_host(hy);
  rev.from_host(hrev);
  idx.from_host(hidx);
  k(x, y, rev, idx, hist, total);
  std::vector<float> wy = hy;
  std::vector<std::int32_t> wrev = hrev, whist(bins, 0);
  for (int i = 0; i < n; ++i) {
    wy[static_cast<std::size_t>(i)] += 2.0f * hx[static_cast<std::size_t>(i)];
    wrev[static_cast<std::size_t>(n - 1 - i)] += i;
    ++whist[static_cast<std::size_t>(hidx[static_cast<std::size_t>(i)])];
  }
  CHECK(y.to_host() == wy);
  CHECK(rev.to_host() == wrev);
  CHECK(hist.to_host() == whist);
  CHECK(total.to_host()[0] == n);
}

inline void check_vec_params() {
  auto k = kernels::vec_params();
  const int n = 16;
  std::vector<std::array<float, 3>> hp(n);
  for (int i = 0; i < n; ++i) hp[static_cast<std::size_t>(i)] = {static_cast<float>(i), 1.0f, -static_cast<float>(i)};
  qd::ndarray<qd::vec3f, 1> p(n);
  p.from_host(hp);
  const std::array<float, 3> g{0.5f, -1.0f, 2.0f};
  const std::array<std::array<double, 2>, 2> m{{{1.0, 2.0}, {0.0, -1.0}}};
  k(p, g, m, 2.0f);
  auto got = p.to_host();
  for (int i = 0; i < n; ++i) {
    const auto& h = hp[static_cast<std::size_t>(i)];
    double rx = m[0][0] * h[0] + m[0][1] * h[1], ry = m[1][0] * h[0] + m[1][1] * h[1];
    std::array<float, 3> want{h[0] + g[0] * 2.0f + static_cast<float>(rx), h[1] + g[1] * 2.0f + static_cast<float>(ry),
                              h[2] + g[2] * 2.0f};
    CHECK(got[static_cast<std::size_t>(i)] == want);
  }
}

}  // namespace vec_checks

}  // namespace qd_test
