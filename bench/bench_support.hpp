// What the benchmark programs share: a stopwatch, the median of repeated runs, and
// the kernels of constructs of about 30 floating-point operations (as in LIMITS.md)
// that the compile-time benchmarks edit, one construct at a time.
#pragma once

#include <quadrants/quadrants.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace qd_bench {

using clock_type = std::chrono::steady_clock;

// Wall-clock time of f(), in seconds.
inline double seconds(const std::function<void()>& f) {
  auto t0 = clock_type::now();
  f();
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// Wall-clock time of f(), in milliseconds.
inline double ms(const std::function<void()>& f) { return seconds(f) * 1e3; }

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A construct of about 30 floating-point operations reading three arrays; `salt`
// makes constructs (and kernels) differ.
inline void construct(qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> b,
                      qd::types::ndarray<float, 1> c, qd::types::ndarray<float, 1> out, int salt) {
  qd::range_for(out.shape(0), [&](qd::i32 i) {
    qd::f32 p = a[i], q = b[i], s = c[i];
    qd::f32 acc = p * q + s * static_cast<float>(salt + 1);
    for (int k = 0; k < 9; ++k) acc = acc * p - q * s + acc * 0.5f;
    out[i] = acc;
  });
}

// A kernel of `n` such constructs; construct `edited` gets salt `edit_salt`.
inline auto make_kernel(std::string name, int n, int kernel_salt, int edited = -1, int edit_salt = 0) {
  return qd::kernel(std::move(name), [=](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> b,
                                         qd::types::ndarray<float, 1> c, qd::types::ndarray<float, 1> out) {
    for (int k = 0; k < n; ++k) construct(a, b, c, out, k == edited ? edit_salt : kernel_salt * 100 + k);
  });
}

}  // namespace qd_bench
