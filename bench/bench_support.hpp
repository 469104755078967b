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

// The GPU the compile-only benchmarks compile for: sm_90 for CUDA, gfx90a for AMD.
inline void target_benchmark_gpu(qd::config& c) {
  if (c.arch == qd::arch::cuda)
    c.cuda_arch = 90;
  else
    c.amdgpu_arch = "gfx90a";
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A construct of about 30 floating-point operations reading three arrays (and, given
// `sum`, a top-level variable); `salt` makes constructs (and kernels) differ.
inline void construct(qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> b, qd::types::ndarray<float, 1> c,
                      qd::types::ndarray<float, 1> out, int salt, const qd::var<float>* sum = nullptr) {
  auto third = [&](qd::i32 i) -> qd::f32 {
    if (sum != nullptr) return c[i] + *sum;  // a C++ `if`: decided when the kernel is traced
    return c[i];
  };
  qd::range_for(out.shape(0), [&](qd::i32 i) {
    qd::f32 p = a[i], q = b[i], s = third(i);
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

// A kernel of `n` constructs whose first four reduce into top-level variables that the
// later ones read (construct k >= 4 reads sum k % 4): split, the sums live in the
// persisted buffer. Construct `edited` gets salt `edit_salt` (a reducer's salt is in its
// update, so editing one moves its sum's slot).
inline auto make_reduction_kernel(std::string name, int n, int kernel_salt, int edited = -1, int edit_salt = 0) {
  return qd::kernel(std::move(name), [=](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> b,
                                         qd::types::ndarray<float, 1> c, qd::types::ndarray<float, 1> out) {
    qd::var<float> s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    qd::var<float>* sums[4] = {&s0, &s1, &s2, &s3};
    for (int k = 0; k < n; ++k) {
      const int salt = k == edited ? edit_salt : kernel_salt * 100 + k;
      if (k < 4) {
        qd::var<float>& sum = *sums[k];
        qd::range_for(a.shape(0), [&](qd::i32 i) { sum += a[i] * static_cast<float>(salt + 1) + b[i]; });
      } else {
        construct(a, b, c, out, salt, sums[k % 4]);
      }
    }
  });
}

// One round of the edit benchmark on make_reduction_kernel: with every task of the
// kernel cached on disk under `root`, the kernel with construct `edited` changed is
// compiled split, whole, and the edited construct alone (a one-construct kernel of the
// same size); `config(root, mode)` gives the program's settings. Milliseconds.
struct edit_round {
  double split = 0, whole = 0, alone = 0;
  int compiled = 0, loaded = 0, tasks = 0;  // the split's observations
};

inline edit_round reduction_edit_round(const std::function<qd::config(qd::per_offload_mode)>& config, int n, int edited,
                                       int salt) {
  edit_round out;
  qd::init(config(qd::per_offload_mode::on));
  make_reduction_kernel("reductions", n, 0).compile();
  qd::init(config(qd::per_offload_mode::on));  // a new program: the cache is on disk only
  auto split = make_reduction_kernel("reductions", n, 0, edited, salt);
  out.split = ms([&] { split.compile(); });
  const auto o = split.per_offload_cache_observations();
  out.compiled = o.constructs_compiled;
  out.loaded = o.constructs_loaded;
  out.tasks = o.frontend_constructs_total;
  qd::init(config(qd::per_offload_mode::off));
  auto whole = make_reduction_kernel("reductions", n, 0, edited, salt);
  out.whole = ms([&] { whole.compile(); });
  qd::init(config(qd::per_offload_mode::off));
  auto single = make_kernel("single", 1, 0, 0, salt + 500);
  out.alone = ms([&] { single.compile(); });
  qd::reset();
  return out;
}

}  // namespace qd_bench
