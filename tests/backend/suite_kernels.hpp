// The kernels of the per-backend suite, defined once: gpu_suite_test runs them on
// every arch and checks their results, compile_only_test compiles every one of
// them with NVRTC and hipRTC. Between them they use every statement and expression.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include <quadrants/quadrants.hpp>

namespace qd_test::kernels {

// integer_operators' body, which tests/backend/vulkan_emitter_test.cpp also traces on its own.
template <class T>
auto integer_operators_body() {
  using R = typename decltype(std::declval<qd::expr<T>>() + std::declval<qd::expr<T>>())::value_type;
  return [](qd::types::ndarray<T, 1> x, qd::types::ndarray<T, 1> y, qd::types::ndarray<R, 2> out) {
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      qd::expr<R> a = x[i];
      qd::expr<R> b = y[i];
      int c = 0;
      auto put = [&](const auto& v) { out(i, c++) = v; };
      auto flag = [&](const qd::boolean& v) { out(i, c++) = qd::cast<R>(v); };
      put(a + b), put(a - b), put(a * b), put(a / b), put(a % b);
      put(a & b), put(a | b), put(a ^ b), put(a << b), put(a >> b);
      put(qd::min(a, b)), put(qd::max(a, b)), put(-a), put(~a), put(qd::abs(a)), put(+a);
      flag(a == b), flag(a != b), flag(a < b), flag(a <= b), flag(a > b), flag(a >= b);
      flag(a > 0 && b > 0), flag(a > 0 || b > 0), flag(!(a > b));
      put(a * 3 - 7), put(a / 2), put(a % 3), put(7 - a), put(100 / a);
      put(a << 3), put(a >> 1), put(a & 0x5a);
      flag(a != 0 && b / a > 1);
    });
  };
}

template <class T>
auto integer_operators() {
  return qd::kernel("integer_operators", {"x", "y", "out"}, integer_operators_body<T>());
}

template <class T>
auto float_operators() {
  return qd::kernel("float_operators", {"x", "y", "out"},
                    [](qd::types::ndarray<T, 1> x, qd::types::ndarray<T, 1> y, qd::types::ndarray<T, 2> out) {
                      qd::range_for(x.shape(0), [&](qd::i32 i) {
                        qd::expr<T> a = x[i];
                        qd::expr<T> b = y[i];
                        int c = 0;
                        auto put = [&](const qd::expr<T>& v) { out(i, c++) = v; };
                        auto flag = [&](const qd::boolean& v) { out(i, c++) = qd::cast<T>(v); };
                        put(a + b), put(a - b), put(a * b), put(a / b), put(-a), put(+a);
                        put(a * 2.0), put(a + 1), put(1.5 - a), put(3 / a);
                        flag(a == b), flag(a != b), flag(a < b), flag(a <= b), flag(a > b), flag(a >= b);
                        flag(a < 0 || b < 0), flag(a > 0 && b > 0);
                      });
                    });
}

template <class T>
auto math_functions() {
  return qd::kernel("math_functions", {"x", "y", "z", "out"},
                    [](qd::types::ndarray<T, 1> x, qd::types::ndarray<T, 1> y, qd::types::ndarray<T, 1> z,
                       qd::types::ndarray<T, 2> out) {
                      qd::range_for(x.shape(0), [&](qd::i32 i) {
                        qd::expr<T> a = x[i];
                        qd::expr<T> b = y[i];
                        qd::expr<T> c = z[i];
                        qd::expr<T> positive = qd::abs(a) + 0.5;
                        int col = 0;
                        auto put = [&](const qd::expr<T>& v) { out(i, col++) = v; };
                        put(qd::sqrt(positive)), put(qd::abs(a)), put(qd::floor(a)), put(qd::ceil(a));
                        put(qd::min(a, b)), put(qd::max(a, b)), put(qd::fma(a, b, c));
                        put(qd::exp(a)), put(qd::log(positive)), put(qd::sin(a)), put(qd::cos(a)), put(qd::tanh(a));
                        put(qd::pow(positive, b));
                      });
                    });
}

inline auto casts() {
  return qd::kernel(
      "casts", {"i", "l", "f", "d", "out", "small"},
      [](qd::types::ndarray<std::int32_t, 1> is, qd::types::ndarray<std::int64_t, 1> ls,
         qd::types::ndarray<float, 1> fs, qd::types::ndarray<double, 1> ds, qd::types::ndarray<double, 2> out,
         qd::types::ndarray<std::uint8_t, 2> small) {
        qd::range_for(is.shape(0), [&](qd::i32 r) {
          auto i = is[r];
          auto l = ls[r];
          auto f = fs[r];
          auto d = ds[r];
          int c = 0;
          auto put = [&](const auto& v) { out(r, c++) = v; };
          put(qd::cast<std::int32_t>(f)), put(qd::cast<std::int32_t>(d)), put(qd::cast<std::int32_t>(l));
          put(qd::cast<std::uint32_t>(i)), put(qd::cast<std::uint8_t>(i)), put(qd::cast<float>(d));
          put(qd::cast<float>(i)), put(qd::cast<std::int64_t>(f)), put(qd::cast<std::int32_t>(qd::cast<bool>(i)));
          put(qd::cast<std::int32_t>(qd::cast<bool>(f))), put(qd::cast<std::uint32_t>(l));
          put(qd::select(i > 0, f, i)), put(qd::select(f < 0, -1, qd::i32(1))), put(qd::select(d > 0.5, l, i));
          qd::i64 wide = i;
          qd::f64 wider = f;
          put(wide * 4), put(wider);
          small(r, 0) = qd::cast<std::uint8_t>(i);
          small(r, 1) = qd::cast<std::uint8_t>(qd::abs(f));
          small(r, 2) = qd::cast<std::uint8_t>(i + 250);
        });
      });
}

// Every float-to-integer conversion, one plain loop per pair (so the compiler may vectorise each).
inline auto float_to_int() {
  return qd::kernel("float_to_int", {"f", "d", "i32f", "i32d", "i64f", "i64d", "u32f", "u32d", "u8f", "u8d"},
                    [](qd::types::ndarray<float, 1> f, qd::types::ndarray<double, 1> d,
                       qd::types::ndarray<std::int32_t, 1> i32f, qd::types::ndarray<std::int32_t, 1> i32d,
                       qd::types::ndarray<std::int64_t, 1> i64f, qd::types::ndarray<std::int64_t, 1> i64d,
                       qd::types::ndarray<std::uint32_t, 1> u32f, qd::types::ndarray<std::uint32_t, 1> u32d,
                       qd::types::ndarray<std::uint8_t, 1> u8f, qd::types::ndarray<std::uint8_t, 1> u8d) {
                      qd::range_for(f.shape(0), [&](qd::i32 k) { i32f[k] = qd::cast<std::int32_t>(f[k]); });
                      qd::range_for(f.shape(0), [&](qd::i32 k) { i32d[k] = qd::cast<std::int32_t>(d[k]); });
                      qd::range_for(f.shape(0), [&](qd::i32 k) { i64f[k] = qd::cast<std::int64_t>(f[k]); });
                      qd::range_for(f.shape(0), [&](qd::i32 k) { i64d[k] = qd::cast<std::int64_t>(d[k]); });
                      qd::range_for(f.shape(0), [&](qd::i32 k) { u32f[k] = qd::cast<std::uint32_t>(f[k]); });
                      qd::range_for(f.shape(0), [&](qd::i32 k) { u32d[k] = qd::cast<std::uint32_t>(d[k]); });
                      qd::range_for(f.shape(0), [&](qd::i32 k) { u8f[k] = qd::cast<std::uint8_t>(f[k]); });
                      qd::range_for(f.shape(0), [&](qd::i32 k) { u8d[k] = qd::cast<std::uint8_t>(d[k]); });
                    });
}

inline auto variables() {
  return qd::kernel("variables", {"x", "out", "fout", "s", "top"},
                    [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 2> out,
                       qd::types::ndarray<float, 1> fout, qd::i32 s, qd::types::ndarray<std::int32_t, 0> top) {
                      qd::var<std::int32_t> t = s;  // a top-level value, updated at the top level
                      t *= 3;
                      t += 4;
                      t %= 1000;
                      qd::range_for(x.shape(0), [&](qd::i32 i) {
                        qd::var<std::int32_t> v = x[i];  // one per iteration
                        v += 3;
                        out(i, 0) = v;
                        v -= 10;
                        out(i, 1) = v;
                        v *= -4;
                        out(i, 2) = v;
                        v /= 3;
                        out(i, 3) = v;
                        v %= 7;
                        out(i, 4) = v;
                        v &= 0x3c;
                        out(i, 5) = v;
                        v |= 0x101;
                        out(i, 6) = v;
                        v ^= 0x55;
                        out(i, 7) = v;
                        qd::var<std::int32_t> w = v;  // a copy is a new variable, not an alias
                        w += 1000;
                        out(i, 8) = v;
                        out(i, 9) = w;
                        qd::var<qd::i32> z;  // zero-initialized; qd::var<qd::i32> is qd::var<std::int32_t>
                        out(i, 10) = z;
                        z = w;
                        z = z * 2;
                        out(i, 11) = z;
                        out(i, 12) = t + i;
                        qd::i32 cube =
                            x[i];  // a C++ loop runs while tracing; rebinding a handle in its own block is allowed
                        for (int power = 1; power < 3; ++power) cube = cube * x[i];
                        out(i, 13) = cube;
                        qd::var<qd::f32> f = 1.5f;
                        static_assert(std::is_base_of_v<qd::var<float>, qd::var<qd::f32>>);
                        f *= x[i];
                        f /= 4;
                        f -= 0.25;
                        fout[i] = f;
                      });
                      top() = t;
                    });
}

inline auto ndranges() {
  return qd::kernel("ndranges", {"a2", "a3", "a4"},
                    [](qd::types::ndarray<std::int32_t, 2> a2, qd::types::ndarray<std::int32_t, 3> a3,
                       qd::types::ndarray<std::int32_t, 4> a4) {
                      // += is atomic: an index visited twice would show as a doubled value.
                      qd::range_for(qd::ndrange(a2.shape(0), a2.shape(1)),
                                    [&](qd::i32 i, qd::i32 j) { a2(i, j) += i * 1000 + j + 1; });
                      qd::range_for(
                          qd::ndrange(a3.shape(0), a3.shape(1), a3.shape(2)),
                          [&](qd::i32 i, qd::i32 j, qd::i32 l) { a3(i, j, l) += i * 10000 + j * 100 + l + 1; });
                      qd::range_for(qd::ndrange(2, 3, 4, 5), [&](qd::i32 i, qd::i32 j, qd::i32 l, qd::i32 m) {
                        a4(i, j, l, m) += i * 1000 + j * 100 + l * 10 + m + 1;
                      });
                    });
}

inline auto ranges() {
  return qd::kernel("ranges", {"hits", "values", "lo", "hi", "m", "count", "h", "w", "fixed"},
                    [](qd::types::ndarray<std::int32_t, 1> hits, qd::types::ndarray<std::int32_t, 1> values, qd::i32 lo,
                       qd::i64 hi, qd::types::ndarray<float, 2> m, qd::types::ndarray<std::int32_t, 0> count, qd::i32 h,
                       qd::i32 w, qd::types::ndarray<std::int32_t, 1> fixed) {
                      qd::range_for(lo, hi, [&](qd::i32 i) {
                        hits[i] += 1;
                        values[i] = i * 2;
                      });
                      qd::range_for(7, [&](qd::i32 i) { fixed[i] += i + 1; });  // a literal bound
                      qd::range_for(qd::ndrange(m.shape(0), m.shape(1)),
                                    [&](qd::i32 i, qd::i32 j) { m(i, j) = qd::cast<float>(i * m.shape(1) + j); });
                      qd::range_for(qd::ndrange(h, w), [&](qd::i32, qd::i32) { count() += 1; });
                      qd::range_for(h * w, [&](qd::i32) { count() += 1000; });
                    });
}

inline auto nested_loops() {
  return qd::kernel(
      "nested_loops", {"a", "v", "y"},
      [](qd::types::ndarray<std::int32_t, 2> a, qd::types::ndarray<std::int32_t, 1> v,
         qd::types::ndarray<std::int32_t, 2> y) {
        qd::range_for(a.shape(0), [&](qd::i32 i) {
          qd::var<std::int32_t> dot = 0;
          qd::range_for(a.shape(1), [&](qd::i32 j) { dot += a(i, j) * v[j]; });
          y(i, 0) = dot;
          qd::var<std::int32_t> pairs = 0;  // sum over j < i of (i - j), with a bound from the outer index
          qd::range_for(i, [&](qd::i32 j) { qd::range_for(j, i, [&](qd::i32) { pairs += 1; }); });
          y(i, 1) = pairs;
          qd::var<std::int32_t> evens = 0;
          qd::range_for(a.shape(1), [&](qd::i32 j) { qd::if_(v[j] % 2 == 0, [&] { evens += a(i, j); }); });
          y(i, 2) = evens;
          qd::var<std::int64_t> c = i + 1;  // Collatz steps of i + 1
          qd::var<std::int32_t> steps = 0;
          qd::while_([&] { return c != 1; },
                     [&] {
                       qd::if_(c % 2 == 0, [&] { c = c / 2; }).else_([&] { c = c * 3 + 1; });
                       steps += 1;
                     });
          y(i, 3) = steps;
        });
      });
}

inline auto serial_control_flow() {
  return qd::kernel("serial_control_flow", {"x", "prefix", "sign", "flag", "g", "a", "b"},
                    [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> prefix,
                       qd::types::ndarray<std::int32_t, 0> sign, qd::i32 flag, qd::types::ndarray<std::int32_t, 1> g,
                       qd::i32 a, qd::i32 b) {
                      qd::var<std::int32_t> alternating = 1;
                      qd::if_(flag != 0, [&] {
                        prefix[0] = x[0];
                        qd::range_for(1, x.shape(0), [&](qd::i32 i) {
                          prefix[i] = prefix[i - 1] + x[i];
                          alternating *= -1;  // allowed: this loop is not a parallel construct
                        });
                      }).else_([&] { qd::range_for(x.shape(0), [&](qd::i32 i) { prefix[i] = -x[i]; }); });
                      sign() = alternating;
                      qd::var<std::int32_t> p = a, q = b, rounds = 0;
                      qd::while_([&] { return q != 0; },
                                 [&] {
                                   qd::var<std::int32_t> t = q;
                                   q = p % q;
                                   p = t;
                                   rounds += 1;
                                 });
                      g[0] = p;
                      g[1] = rounds;
                    });
}

// Loop bounds of types wider than the i32 index: checked at every launch.
inline auto wide_bounds() {
  return qd::kernel("wide_bounds", {"hits", "lo", "hi", "n", "rows"},
                    [](qd::types::ndarray<std::int32_t, 1> hits, qd::i64 lo, qd::i64 hi, qd::u32 n, qd::i64 rows) {
                      qd::range_for(lo, hi, [&](qd::i32) { hits[0] += 1; });
                      qd::range_for(n, [&](qd::i32) { hits[1] += 1; });
                      qd::range_for(qd::ndrange(rows, 2), [&](qd::i32, qd::i32) { hits[2] += 1; });
                    });
}

inline auto branches() {
  return qd::kernel("branches", {"x", "cls", "big", "top", "s"},
                    [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> cls,
                       qd::types::ndarray<std::int32_t, 1> big, qd::types::ndarray<std::int32_t, 0> top, qd::i32 s) {
                      qd::range_for(x.shape(0), [&](qd::i32 i) {
                        auto v = x[i];
                        qd::if_(v < 0, [&] { cls[i] = -1; }).else_([&] {
                          qd::if_(v == 0, [&] { cls[i] = 0; }).else_([&] { cls[i] = 1; });
                        });
                        qd::if_(v % 2 == 0, [&] { cls[i] += 10; });  // no else_
                        qd::var<std::int32_t> count = 0;
                        qd::range_for(3, [&](qd::i32 j) { qd::if_(v > j * 10, [&] { count += 1; }); });
                        qd::var<bool> negative = v < 0;  // a boolean variable as a condition
                        qd::if_(!negative && v != 0, [&] { count += 100; });
                        big[i] = count;
                      });
                      qd::if_(s > 5, [&] { top() = 1; }).else_([&] { top() = 2; });
                    });
}

// Signed overflow wraps: the generated code must not let the compiler assume it away.
inline auto overflow_compare() {
  return qd::kernel("overflow_compare", {"x", "out", "total"},
                    [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> out,
                       qd::types::ndarray<std::int32_t, 0> total) {
                      qd::var<std::int32_t> sum = 0;
                      qd::range_for(x.shape(0), [&](qd::i32 i) {
                        qd::i32 v = x[i];
                        out[i] = qd::cast<std::int32_t>(v + 1 > v) + 2 * qd::cast<std::int32_t>(-v < 0) +
                                 4 * qd::cast<std::int32_t>(v * 2 / 2 == v);
                        sum += v;  // a reduction: wraps like the additions it stands for
                      });
                      total() = sum;
                    });
}

inline auto atomics_serial() {
  return qd::kernel("atomics_serial", {"a", "f", "olds", "folds"},
                    [](qd::types::ndarray<std::int32_t, 1> a, qd::types::ndarray<float, 1> f,
                       qd::types::ndarray<std::int32_t, 1> olds, qd::types::ndarray<float, 1> folds) {
                      olds[0] = qd::atomic_add(a[0], 5);
                      olds[1] = qd::atomic_sub(a[1], 5);
                      olds[2] = qd::atomic_min(a[2], 5);
                      olds[3] = qd::atomic_max(a[3], 5);
                      folds[0] = qd::atomic_add(f[0], 0.5f);
                      folds[1] = qd::atomic_sub(f[1], 0.5f);
                      folds[2] = qd::atomic_min(f[2], 0.5f);
                      folds[3] = qd::atomic_max(f[3], 0.5f);
                      qd::var<qd::i32> v = a[4];  // the traced name works for qd::var and its atomics
                      olds[4] = qd::atomic_add(v, 3);
                      olds[5] = qd::atomic_sub(v, 1);
                      olds[6] = qd::atomic_min(v, 7);
                      olds[7] = qd::atomic_max(v, 9);
                      a[4] = v;
                    });
}

inline auto atomics_parallel() {
  using lim = std::numeric_limits<std::int32_t>;
  return qd::kernel("atomics_parallel", {"x", "acc", "olds", "facc", "tops", "mine"},
                    [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> acc,
                       qd::types::ndarray<std::int32_t, 2> olds, qd::types::ndarray<float, 1> facc,
                       qd::types::ndarray<std::int32_t, 1> tops, qd::types::ndarray<std::int32_t, 1> mine) {
                      qd::var<std::int32_t> sum = 0, down = 0, lo = lim::max(), hi = lim::min();
                      qd::range_for(x.shape(0), [&](qd::i32 i) {
                        auto v = x[i];
                        qd::atomic_add(acc[0], v);
                        qd::atomic_sub(acc[1], v);
                        olds(i, 0) = qd::atomic_min(acc[2], v);
                        olds(i, 1) = qd::atomic_max(acc[3], v);
                        qd::atomic_add(facc[0], 1.0f);
                        qd::atomic_min(facc[1], qd::cast<float>(v) * 0.5f);
                        qd::atomic_max(facc[2], qd::cast<float>(v) * 0.5f);
                        sum += v;  // += / -= on a top-level var inside a parallel loop: a reduction
                        down -= v;
                        qd::atomic_min(lo, v);
                        qd::atomic_max(hi, v);
                        qd::var<std::int32_t> own = i;  // per iteration: its atomics are plain updates
                        auto old = qd::atomic_add(own, 2);
                        mine[i] = old * 1000 + own;
                      });
                      tops[0] = sum;
                      tops[1] = down;
                      tops[2] = lo;
                      tops[3] = hi;
                    });
}

inline auto compaction() {
  return qd::kernel("compaction", {"x", "picked", "count", "picked2", "count2"},
                    [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> picked,
                       qd::types::ndarray<std::int32_t, 0> count, qd::types::ndarray<std::int32_t, 1> picked2,
                       qd::types::ndarray<std::int32_t, 0> count2) {
                      qd::var<std::int32_t> c = 0;
                      qd::range_for(x.shape(0), [&](qd::i32 i) {
                        qd::if_(x[i] % 3 == 0, [&] {
                          auto slot = qd::atomic_add(count(), 1);
                          picked[slot] = x[i];
                          auto slot2 = qd::atomic_add(c, 1);  // a top-level var: one shared counter
                          picked2[slot2] = x[i];
                        });
                      });
                      count2() = c;
                    });
}

// x[i] += v, -= v, min and max on arrays of T from a parallel loop, and their reductions.
template <class T>
auto histogram() {
  return qd::kernel("histogram", {"keys", "up", "down", "all", "extremes"},
                    [](qd::types::ndarray<std::int32_t, 1> keys, qd::types::ndarray<T, 1> up,
                       qd::types::ndarray<T, 1> down, qd::types::ndarray<T, 0> all, qd::types::ndarray<T, 1> extremes) {
                      qd::var<T> lowest = std::numeric_limits<T>::max(), highest = std::numeric_limits<T>::lowest();
                      qd::range_for(keys.shape(0), [&](qd::i32 i) {
                        up[keys[i] % 16] += 1;
                        down[keys[i] % 16] -= 2;
                        all() += 1;
                        qd::atomic_min(extremes[0], qd::cast<T>(keys[i] % 97));
                        qd::atomic_max(extremes[1], qd::cast<T>(keys[i] % 97));
                        qd::atomic_min(lowest, qd::cast<T>(keys[i] % 89));
                        qd::atomic_max(highest, qd::cast<T>(keys[i] % 89));
                      });
                      extremes[2] = lowest;
                      extremes[3] = highest;
                    });
}

inline auto uniforms() {
  return qd::kernel("uniforms", {"f", "d", "u", "s", "serial", "grid"},
                    [](qd::types::ndarray<float, 1> f, qd::types::ndarray<double, 1> d,
                       qd::types::ndarray<std::uint32_t, 1> u, qd::types::ndarray<std::int32_t, 1> s,
                       qd::types::ndarray<float, 0> serial, qd::types::ndarray<float, 2> grid) {
                      qd::range_for(qd::ndrange(grid.shape(0), grid.shape(1)),
                                    [&](qd::i32 i, qd::i32 j) { grid(i, j) = qd::random<float>(); });
                      qd::range_for(f.shape(0), [&](qd::i32 i) {
                        f[i] = qd::random<float>();
                        d[i] = qd::random<double>();
                        u[i] = qd::random<std::uint32_t>();
                        s[i] = qd::random<std::int32_t>();
                      });
                      serial() = qd::random();
                    });
}

inline auto print_serial() {
  return qd::kernel(
      "print_serial", {"x", "n", "big", "u", "b", "flag", "d"},
      [](qd::types::ndarray<float, 1> x, qd::i32 n, qd::i64 big, qd::u32 u, qd::u8 b, qd::boolean flag, qd::f64 d) {
        qd::print("x0 =", x[0], "n =", n, "100% done");
        qd::print(big, u, b, flag, d, 42, 2.5, "tab\there", "quote\"s");
      });
}

inline auto print_parallel() {
  return qd::kernel("print_parallel", {"n"}, [](qd::i32 n) {
    qd::print("before");
    qd::range_for(n, [&](qd::i32 i) { qd::print("item", i, "squared", i * i); });
    qd::print("after");
  });
}

inline auto volatile_reads() {
  return qd::kernel("volatile_reads", {"x", "out"},
                    [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 2> out) {
                      qd::range_for(x.shape(0), [&](qd::i32 i) {
                        auto before = x[i];  // the load happens here
                        x[i] = before * 2 + 1;
                        out(i, 0) = before;
                        out(i, 1) = qd::volatile_load(before);  // loads again, after the store
                        out(i, 2) = qd::volatile_load(x[i]);
                      });
                    });
}

inline auto clamped() {
  return qd::kernel(
      "clamped", {"x", "m", "edges", "medges", "blur", "hits"},
      [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 2> m, qd::types::ndarray<float, 1> edges,
         qd::types::ndarray<std::int32_t, 1> medges, qd::types::ndarray<float, 1> blur,
         qd::types::ndarray<float, 1> hits) {
        auto n = x.shape(0);
        edges[0] = x.at(-5, qd::boundary::clamp);
        edges[1] = x.at(-1, qd::boundary::clamp);
        edges[2] = x.at(2, qd::boundary::clamp);
        edges[3] = x.at(n - 1, qd::boundary::clamp);
        edges[4] = x.at(n, qd::boundary::clamp);
        edges[5] = x.at(n + 1000, qd::boundary::clamp);
        auto h = m.shape(0), w = m.shape(1);
        medges[0] = m.at(-1, -1, qd::boundary::clamp);
        medges[1] = m.at(h, w, qd::boundary::clamp);
        medges[2] = m.at(-3, 2, qd::boundary::clamp);
        medges[3] = m.at(1, w + 10, qd::boundary::clamp);
        medges[4] = m.at(h + 1, -2, qd::boundary::clamp);
        medges[5] = m.at(1, 2, qd::boundary::clamp);
        qd::range_for(
            n, [&](qd::i32 i) { blur[i] = x.at(i - 1, qd::boundary::clamp) + x.at(i + 1, qd::boundary::clamp); });
        qd::range_for(n + 4, [&](qd::i32 i) { qd::atomic_add(hits.at(i - 2, qd::boundary::clamp), 1.0f); });
      });
}

inline auto gradients() {
  return qd::kernel("gradients", {"x", "m", "s", "plain"},
                    [](qd::types::ndarray<float, 1, qd::needs_grad> x, qd::types::ndarray<double, 2, qd::needs_grad> m,
                       qd::types::ndarray<float, 0, qd::needs_grad> s, qd::types::ndarray<float, 1> plain) {
                      qd::range_for(x.shape(0), [&](qd::i32 i) {
                        x.grad()[i] = x[i] * 2;
                        plain[i] = x.grad()[i] + 1;  // reads the gradient just written
                      });
                      qd::range_for(qd::ndrange(m.grad().shape(0), m.grad().shape(1)),
                                    [&](qd::i32 i, qd::i32 j) { m.grad()(i, j) += m(i, j) * 3; });
                      s.grad()() = s() * 4 + s.grad()();
                    });
}

inline auto scalars() {
  return qd::kernel("scalars", {"f", "d", "i", "l", "u", "b", "flag", "floats", "ints", "wide"},
                    [](qd::f32 f, qd::f64 d, qd::i32 i, qd::i64 l, qd::u32 u, qd::u8 b, qd::boolean flag,
                       qd::types::ndarray<double, 1> floats, qd::types::ndarray<std::int64_t, 1> ints,
                       qd::types::ndarray<std::uint32_t, 1> wide) {
                      floats[0] = f;
                      floats[1] = d;
                      ints[0] = i;
                      ints[1] = l;
                      ints[2] = b;
                      ints[3] = qd::select(flag, 1, qd::i32(0));
                      wide[0] = u;
                      qd::range_for(4, [&](qd::i32 k) {
                        floats[k + 2] = f * k + d;
                        ints[k + 4] = l - k;
                        wide[k + 1] = u + qd::cast<std::uint32_t>(k);
                      });
                    });
}

inline auto out_of_bounds() {
  return qd::kernel("out_of_bounds", {"x", "n"}, [](qd::types::ndarray<float, 1> x, qd::i32 n) {
    qd::range_for(n, [&](qd::i32 i) { x[i] = 1.0f; });
  });
}

// Top-level values crossing constructs, each run under every per_offload mode.

inline auto running_total() {
  return qd::kernel("running_total", {"x", "out", "fx", "fout"},
                    [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> out,
                       qd::types::ndarray<float, 1> fx, qd::types::ndarray<float, 1> fout) {
                      qd::var<std::int32_t> total = 0;
                      qd::range_for(x.shape(0), [&](qd::i32 i) { total += x[i]; });
                      qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = total + i; });
                      qd::var<float> ftotal = 0.0f;  // the SPEC's example, in floating point
                      qd::range_for(fx.shape(0), [&](qd::i32 i) { ftotal += fx[i]; });
                      qd::range_for(fout.shape(0), [&](qd::i32 i) { fout[i] = ftotal; });
                    });
}

inline auto stale_snapshot() {
  return qd::kernel("stale_snapshot", {"a", "m", "out"},
                    [](qd::types::ndarray<std::int32_t, 1> a, qd::types::ndarray<std::int32_t, 2> m,
                       qd::types::ndarray<std::int32_t, 2> out) {
                      qd::i32 first = a[0];                            // a snapshot, as a traced value
                      qd::var<std::int32_t> last = a[a.shape(0) - 1];  // and as a variable
                      qd::i32 corner = m(1, 2);
                      qd::range_for(a.shape(0), [&](qd::i32 i) { a[i] = a[i] * 10 + first; });
                      qd::range_for(qd::ndrange(m.shape(0), m.shape(1)), [&](qd::i32 i, qd::i32 j) { m(i, j) = -1; });
                      qd::i32 fresh = a[0];  // read after the loop: the new value
                      qd::range_for(out.shape(0), [&](qd::i32 i) {
                        out(i, 0) = first + i;
                        out(i, 1) = last;
                        out(i, 2) = corner;
                        out(i, 3) = fresh;
                      });
                    });
}

inline auto bounds_from_arrays() {
  return qd::kernel("bounds_from_arrays", {"bounds", "x", "out", "count"},
                    [](qd::types::ndarray<std::int32_t, 1> bounds, qd::types::ndarray<std::int32_t, 1> x,
                       qd::types::ndarray<std::int32_t, 1> out, qd::types::ndarray<std::int32_t, 0> count) {
                      qd::range_for(bounds[0], [&](qd::i32 i) { out[i] = x[i] * 2; });
                      qd::range_for(bounds[1], bounds[2], [&](qd::i32 i) { out[i] = -x[i]; });
                      count() = x.shape(0) / 3;  // a serial construct writes the next bound
                      qd::range_for(count(), [&](qd::i32 i) { out[i] += 1000; });
                    });
}

inline auto relay() {
  return qd::kernel("relay", {"x", "out", "sign"},
                    [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 2> out,
                       qd::types::ndarray<std::int32_t, 0> sign) {
                      auto n = out.shape(0);
                      qd::i32 a = x[0] * 2 + n;  // a load and arithmetic at the top level
                      qd::var<std::int32_t> acc = a;
                      qd::range_for(n, [&](qd::i32 i) { out(i, 0) = a + i; });
                      qd::range_for(x.shape(0), [&](qd::i32 i) { acc += x[i]; });
                      qd::i32 b = acc * 3;  // computed from the reduced variable
                      qd::range_for(n, [&](qd::i32 i) { out(i, 1) = a + b; });
                      qd::if_(b > 0, [&] { sign() = 1; }).else_([&] { sign() = -1; });
                      acc -= a;  // a top-level update between constructs
                      qd::range_for(n, [&](qd::i32 i) {
                        out(i, 2) = acc;
                        out(i, 3) = a - b + sign();
                      });
                    });
}

inline auto forty_values() {
  constexpr int count = 40;
  return qd::kernel("forty_values", {"x", "out"},
                    [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 2> out) {
                      std::vector<qd::i32> values;  // trace-time C++ containers of traced handles
                      std::deque<qd::var<std::int32_t>> sums;
                      for (int c = 0; c < count; ++c) {
                        values.push_back(x[c] * (c + 1) + c);
                        sums.emplace_back(c);
                      }
                      qd::range_for(x.shape(0), [&](qd::i32 i) {
                        for (int c = 0; c < count; ++c) sums[static_cast<std::size_t>(c)] += x[i] * c;
                      });
                      qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = -1; });  // the snapshots must survive
                      qd::range_for(out.shape(0), [&](qd::i32 i) {
                        for (int c = 0; c < count; ++c) {
                          out(i, c) = values[static_cast<std::size_t>(c)] + i;
                          out(i, c + count) = sums[static_cast<std::size_t>(c)];
                        }
                      });
                    });
}

inline auto shared_draw() {
  return qd::kernel("shared_draw", {"flag", "out"},
                    [](qd::types::ndarray<std::int32_t, 1> flag, qd::types::ndarray<float, 2> out) {
                      qd::f32 r = qd::random<float>();
                      qd::i32 seen = qd::volatile_load(flag[0]);
                      qd::range_for(flag.shape(0), [&](qd::i32 i) { flag[i] = flag[i] + 1; });
                      qd::range_for(out.shape(0), [&](qd::i32 i) { out(i, 0) = r; });
                      qd::range_for(out.shape(0), [&](qd::i32 i) {
                        out(i, 1) = r;
                        out(i, 2) = qd::cast<float>(seen);
                      });
                    });
}

inline auto serial_between_loops() {
  return qd::kernel("serial_between_loops", {"x", "scratch", "out"},
                    [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> scratch,
                       qd::types::ndarray<std::int32_t, 1> out) {
                      qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] + 1; });
                      scratch[0] = x[0] + x[x.shape(0) - 1];  // top-level stores: a serial construct
                      scratch[1] = scratch[0] * 2;            // reads the store just made
                      qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = scratch[0] * i + scratch[1]; });
                    });
}

inline auto bound_from_var() {
  return qd::kernel("bound_from_var", {"x", "out", "limit"},
                    [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> out, qd::i32 limit) {
                      qd::var<std::int32_t> n = x.shape(0);
                      qd::if_(limit < n, [&] { n = limit; });
                      qd::range_for(n, [&](qd::i32 i) { out[i] = x[i] + 1; });
                      qd::var<std::int32_t> root = x.shape(0);  // integer square root, serially
                      qd::while_([&] { return root * root > x.shape(0); }, [&] { root -= 1; });
                      qd::range_for(root, [&](qd::i32 i) { out[i] += 100; });
                    });
}

// Found by the differential fuzzer (tests/fuzz): a top-level variable kept in a global
// temporary (whole kernel) was updated with the atomics' rule (v < old ? v : old), the
// same variable recomputed task-locally (split) with old < v ? old : v, so a NaN or a
// zero of the other sign gave different results in the two variants.
inline auto nan_bounds() {
  return qd::kernel("nan_bounds", {"x", "out"}, [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 2> out) {
    qd::var<float> lo = 1.0f, hi = -1.0f, zero = 0.0f;
    qd::atomic_min(lo, x[0]);
    qd::atomic_max(hi, x[0]);
    qd::atomic_min(zero, x[1]);
    qd::range_for(out.shape(0), [&](qd::i32 i) {
      out(i, 0) = lo;
      out(i, 1) = hi;
      out(i, 2) = zero;
    });
  });
}

inline auto nan_reduction() {
  return qd::kernel("nan_reduction", {"x", "out"},
                    [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out) {
                      qd::var<float> lo = 100.0f;
                      qd::range_for(x.shape(0), [&](qd::i32 i) { qd::atomic_min(lo, x[i]); });
                      out[0] = lo;
                    });
}

// Found by the differential fuzzer: a loop that both assigned a top-level qd::var (a
// race, allowed) and reduced into it accumulated the reduction per chunk and flushed
// it after the chunk's last assignment, a result no order of the iterations gives.
inline auto assign_then_add() {
  return qd::kernel("assign_then_add", {"x", "out"},
                    [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> out) {
                      qd::var<std::int32_t> v = 0;
                      qd::range_for(x.shape(0), [&](qd::i32 i) {
                        v += x[i];
                        v = 0;  // every iteration resets it after its own update
                      });
                      out[0] = v;
                    });
}

// Per-offload (tests/runtime/per_offload_test.cpp): a kernel that splits, and the seed's fallbacks.

inline auto split_many_values() {
  return qd::kernel("many_values", {"x", "y", "z", "w", "s"},
                    [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y,
                       qd::types::ndarray<std::int32_t, 2> z, qd::types::ndarray<std::int32_t, 1> w, qd::f32 s) {
                      qd::i32 n = x.shape(0);
                      qd::f32 head = x[0] * s;       // read once; nothing overwrites x
                      qd::i32 bound = w[1] % n + 1;  // a loop bound loaded from an array nothing overwrites
                      qd::range_for(n, [&](qd::i32 i) { y[i] = qd::sin(x[i]) * head + qd::sqrt(qd::abs(x[i])); });
                      qd::range_for(qd::ndrange(z.shape(0), z.shape(1)), [&](qd::i32 i, qd::i32 j) {
                        qd::var<std::int32_t> acc = 0;
                        qd::range_for(j + 1, [&](qd::i32 k2) { acc += k2 * i; });
                        qd::if_(acc > 10, [&] { z(i, j) = acc; }).else_([&] { z(i, j) = -acc; });
                      });
                      y[0] = head + qd::cast<float>(bound);  // a serial construct
                      qd::range_for(bound, [&](qd::i32 i) { y[i + 1] = y[i + 1] * 0.5f + qd::random<float>(); });
                    });
}

// A new user's energy kernel: two reductions and a count read by later constructs, each
// handed on through the persisted buffer by the split.
inline auto energy() {
  return qd::kernel("energy", {"m", "v", "share", "count"},
                    [](qd::types::ndarray<float, 1> m, qd::types::ndarray<float, 1> v,
                       qd::types::ndarray<float, 1> share, qd::types::ndarray<std::int32_t, 0> count) {
                      qd::var<float> kinetic = 0.0f;
                      qd::var<float> heaviest = 0.0f;
                      qd::var<std::int32_t> moving = 0;
                      qd::range_for(m.shape(0), [&](qd::i32 i) { kinetic += 0.5f * m[i] * v[i] * v[i]; });
                      qd::range_for(m.shape(0), [&](qd::i32 i) {
                        qd::atomic_max(heaviest, m[i]);
                        qd::if_(v[i] != 0.0f, [&] { moving += 1; });
                      });
                      qd::f32 total = kinetic;
                      qd::range_for(share.shape(0),
                                    [&](qd::i32 i) { share[i] = 0.5f * m[i] * v[i] * v[i] / total + heaviest; });
                      count() = moving;  // a serial construct
                    });
}

inline auto seed_running_total() {
  return qd::kernel("seed_running_total", {"x", "out"},
                    [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out) {
                      qd::var<float> total = 0.0f;
                      qd::range_for(x.shape(0), [&](qd::i32 i) { total += x[i]; });
                      qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = total; });
                    });
}

inline auto seed_stale_snapshot() {
  return qd::kernel("seed_stale_snapshot", {"a", "out"},
                    [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> out) {
                      qd::f32 first = a[0];
                      qd::range_for(a.shape(0), [&](qd::i32 i) { a[i] = 0.0f; });
                      qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = first; });
                    });
}

inline auto seed_stale_clamped() {
  return qd::kernel("seed_stale_clamped", {"a", "out"},
                    [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> out) {
                      qd::f32 first = a.at(-5, qd::boundary::clamp);
                      qd::range_for(a.shape(0), [&](qd::i32 i) { a[i] = 0.0f; });
                      qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = first; });
                    });
}

inline auto seed_grad_snapshot() {
  return qd::kernel("seed_grad_snapshot", {"a", "b", "out"},
                    [](qd::types::ndarray<float, 1, qd::needs_grad> a, qd::types::ndarray<float, 1, qd::needs_grad> b,
                       qd::types::ndarray<float, 1> out) {
                      qd::f32 g = a.grad()[0];
                      qd::range_for(b.shape(0), [&](qd::i32 i) { b.grad()[i] = 0.0f; });
                      qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = g; });
                    });
}

inline auto copy_after_snapshot() {
  return qd::kernel("copy_after_snapshot", {"src", "dst"},
                    [](qd::types::ndarray<float, 1> src, qd::types::ndarray<float, 1> dst) {
                      qd::f32 first = src[0];
                      qd::range_for(dst.shape(0), [&](qd::i32 i) { dst[i] = 0.0f; });
                      qd::range_for(dst.shape(0), [&](qd::i32 i) { dst[i] = dst[i] + first; });
                    });
}

// Loop control (SPEC §11.4): continue_ in a parallel loop (1-D and 2-D), break_ and
// continue_ in nested loops (1-D and 2-D) and a while_, a serialized top-level loop that
// breaks, and a block_dim. The host model is loop_control_expected below.
inline auto loop_control() {
  return qd::kernel("loop_control", {"x", "count", "first", "spins", "hits", "prefix", "total", "grid"},
                    [](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<std::int32_t, 1> count,
                       qd::types::ndarray<std::int32_t, 1> first, qd::types::ndarray<std::int32_t, 1> spins,
                       qd::types::ndarray<std::int32_t, 1> hits, qd::types::ndarray<std::int32_t, 1> prefix,
                       qd::types::ndarray<std::int32_t, 0> total, qd::types::ndarray<std::int32_t, 2> grid) {
                      qd::range_for(x.shape(0), qd::loop_config{.block_dim = 64}, [&](qd::i32 i) {
                        count[i] = 0;
                        qd::if_(i % 3 == 0, [&] { qd::continue_(); });
                        qd::var<std::int32_t> c = 0, found = -1;
                        qd::range_for(0, 100, [&](qd::i32 j) {
                          qd::if_(j % 2 == 1, [&] { qd::continue_(); });
                          c += 1;
                          qd::if_((i + j) % 7 == 0, [&] {
                            found = j;
                            qd::break_();
                          });
                        });
                        count[i] = c;
                        first[i] = found;
                        qd::var<std::int32_t> k = 0;
                        qd::while_([&] { return k < 10; },
                                   [&] {
                                     k += 1;
                                     qd::if_(k == i % 10, [&] { qd::break_(); });
                                   });
                        spins[i] = k;
                        qd::var<std::int32_t> where = -1;
                        qd::range_for(qd::ndrange(4, 5), [&](qd::i32 a, qd::i32 b) {
                          qd::if_(a * 5 + b == i % 20, [&] {
                            where = a * 10 + b;
                            qd::break_();
                          });
                        });
                        hits[i] = where;
                      });
                      qd::var<std::int32_t> s = 0;
                      qd::range_for(x.shape(0), qd::loop_config{.serialize = true}, [&](qd::i32 i) {
                        qd::if_(x[i] < 0, [&] { qd::break_(); });
                        s += x[i];
                        prefix[i] = s;
                      });
                      total() = s;
                      qd::range_for(qd::ndrange(grid.shape(0), grid.shape(1)), qd::loop_config{.block_dim = 32},
                                    [&](qd::i32 a, qd::i32 b) {
                                      grid(a, b) = 1;
                                      qd::if_((a + b) % 3 == 0, [&] { qd::continue_(); });
                                      grid(a, b) = 2;
                                    });
                    });
}

// A kernel returning a tuple (SPEC §11.3): a reduction (carried to the final store
// when split), a maximum, a count, and the first two again as a qd::vec2f.
inline auto returns() {
  return qd::kernel("returns", {"x"}, [](qd::types::ndarray<float, 1> x) {
    qd::var<float> s = 0.0f, top = -1e30f;
    qd::var<std::int32_t> positive = 0;
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      s += x[i];
      qd::atomic_max(top, x[i]);
      qd::if_(x[i] > 0.0f, [&] { positive += 1; });
    });
    return std::tuple{qd::f32(s), qd::f32(top), qd::i32(positive), qd::vec2f(s, top)};
  });
}

// Runs returns() on 777 values (multiples of 0.5 of small magnitude: sums exact in any
// order) and compares each result with plain C++; a program must be initialised.
inline void check_returns() {
  auto k = returns();
  const std::int64_t n = 777;
  std::vector<float> h;
  for (std::int64_t i = 0; i < n; ++i) h.push_back(static_cast<float>((i * 37) % 23) * 0.5f - 4.0f);
  qd::ndarray<float, 1> x(n);
  x.from_host(h);
  auto [sum, top, positive, pair] = k(x);
  float want_sum = 0.0f, want_top = -1e30f;
  std::int32_t want_positive = 0;
  for (float v : h) want_sum += v, want_top = std::max(want_top, v), want_positive += v > 0.0f;
  CHECK(sum == want_sum);
  CHECK(top == want_top);
  CHECK(positive == want_positive);
  CHECK(pair == std::array<float, 2>{want_sum, want_top});  // a qd::vec2f returns a std::array
}

// Struct parameters (SPEC §11.2): a nested kernel struct, matched by a host struct.
struct spring_view {
  qd::f32 k, rest;
};
struct body_view {
  qd::types::ndarray<float, 1> x, v;
  spring_view spring;
};
struct spring_host {
  float k, rest;
};
struct body_host {
  qd::ndarray<float, 1> x, v;
  spring_host spring;
};

inline auto struct_step() {
  return qd::kernel("struct_step", {"b", "dt"}, [](body_view b, qd::f32 dt) {
    qd::range_for(b.x.shape(0), [&](qd::i32 i) {
      b.v[i] = b.v[i] - b.spring.k * (b.x[i] - b.spring.rest) * dt;
      b.x[i] = b.x[i] + b.v[i] * dt;
    });
  });
}

// What loop_control leaves, from arrays filled with -7: per element count, first, spins,
// hits and prefix, then total, then the grid row-major.
struct loop_control_result {
  std::vector<std::int32_t> count, first, spins, hits, prefix, grid;
  std::int32_t total = 0;
};

inline loop_control_result loop_control_expected(const std::vector<std::int32_t>& x, std::int32_t rows,
                                                 std::int32_t cols) {
  const auto n = static_cast<std::int32_t>(x.size());
  loop_control_result r;
  for (auto* v : {&r.count, &r.first, &r.spins, &r.hits, &r.prefix}) v->assign(x.size(), -7);
  for (std::int32_t i = 0; i < n; ++i) {
    const auto at = static_cast<std::size_t>(i);
    r.count[at] = 0;
    if (i % 3 == 0) continue;
    std::int32_t c = 0, found = -1;
    for (std::int32_t j = 0; j < 100; ++j) {
      if (j % 2 == 1) continue;
      ++c;
      if ((i + j) % 7 == 0) {
        found = j;
        break;
      }
    }
    r.count[at] = c;
    r.first[at] = found;
    std::int32_t k = 0;
    while (k < 10) {
      ++k;
      if (k == i % 10) break;
    }
    r.spins[at] = k;
    std::int32_t where = -1;
    for (std::int32_t a = 0; a < 4 && where < 0; ++a)
      for (std::int32_t b = 0; b < 5; ++b)
        if (a * 5 + b == i % 20) {
          where = a * 10 + b;
          break;
        }
    r.hits[at] = where;
  }
  std::int32_t s = 0;
  for (std::int32_t i = 0; i < n; ++i) {
    if (x[static_cast<std::size_t>(i)] < 0) break;
    s += x[static_cast<std::size_t>(i)];
    r.prefix[static_cast<std::size_t>(i)] = s;
  }
  r.total = s;
  for (std::int32_t a = 0; a < rows; ++a)
    for (std::int32_t b = 0; b < cols; ++b) r.grid.push_back((a + b) % 3 == 0 ? 1 : 2);
  return r;
}

// Differentiable (issue 12): a reduction, a loop-carried qd::var, a branch and atomics,
// for kernel.grad on every backend.
inline auto adjoint_chain() {
  return qd::kernel("adjoint_chain", {"x", "y", "loss"},
                    [](qd::types::ndarray<float, 1, qd::needs_grad> x, qd::types::ndarray<float, 1, qd::needs_grad> y,
                       qd::types::ndarray<float, 0, qd::needs_grad> loss) {
                      qd::var<float> total = 0.0f;
                      qd::range_for(x.shape(0), [&](qd::i32 i) {
                        qd::var<float> p = 1.0f;
                        qd::range_for(3, [&](qd::i32) { p = p * x[i] + 0.5f; });
                        qd::if_(x[i] > 0.5f, [&] { y[i] = p * p; }).else_([&] { y[i] = qd::sin(p); });
                        total += x[i];
                      });
                      qd::range_for(y.shape(0), [&](qd::i32 i) { loss() += y[i] * total; });
                    });
}

// A serial loop carrying a variable over x's length (issue 27): the adjoint's value stacks
// hold 64 values, so lengths past 64 use several segments and past 4096 several runs each.
inline auto long_carry() {
  return qd::kernel("long_carry", {"x", "c", "y"},
                    [](qd::types::ndarray<float, 1, qd::needs_grad> x, qd::types::ndarray<float, 1, qd::needs_grad> c,
                       qd::types::ndarray<float, 1, qd::needs_grad> y) {
                      qd::range_for(c.shape(0), [&](qd::i32 i) {
                        qd::var<float> p = c[i];
                        qd::range_for(x.shape(0),
                                      [&](qd::i32 j) { p = 0.5f * p + 0.4f * qd::sin(p * x[j]) + 0.1f * x[j]; });
                        y[i] = p;
                      });
                    });
}

// Graph kernels (issue 13): nested do_while loops whose flags different constructs set,
// a top-level value read inside the body, a reduction per pass; rows[r] = 10 * (r + 1)
// + the sum of x, for each row r < rows.shape(0).
inline auto graph_loops() {
  return qd::kernel("graph_loops", {"x", "rows", "row", "count", "inner", "outer"}, qd::graph::on,
                    [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> rows,
                       qd::types::ndarray<std::int32_t, 0> row, qd::types::ndarray<std::int32_t, 0> count,
                       qd::types::ndarray<std::int32_t, 0> inner, qd::types::ndarray<std::int32_t, 0> outer) {
                      qd::f32 first = x[0];
                      qd::graph::do_while(outer, [&] {
                        qd::range_for(1, [&](qd::i32) { count() = 0; });
                        qd::graph::do_while(inner, [&] {
                          qd::range_for(1, [&](qd::i32) { count() = count() + 1; });
                          qd::range_for(1, [&](qd::i32) { inner() = qd::select(count() < 10 * (row() + 1), 1, 0); });
                        });
                        qd::var<float> sum = 0.0f;
                        qd::range_for(x.shape(0), [&](qd::i32 i) { sum += x[i]; });
                        qd::range_for(1, [&](qd::i32) {
                          rows[row()] = qd::cast<float>(count()) + sum + first - x[0];
                          row() = row() + 1;
                        });
                        qd::range_for(1, [&](qd::i32) { outer() = qd::select(row() < rows.shape(0), 1, 0); });
                      });
                    });
}

// A graph kernel whose runs a GPU records as device graphs: two top-level constructs
// (one run), then a do_while body of two constructs (another run, replayed each pass).
inline auto graph_replay() {
  return qd::kernel("graph_replay", {"x", "y", "flag", "s"}, qd::graph::on,
                    [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y,
                       qd::types::ndarray<std::int32_t, 0> flag, qd::f32 s) {
                      qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] + s; });
                      qd::range_for(y.shape(0), [&](qd::i32 i) { y[i] = y[i] * 2.0f; });
                      qd::graph::do_while(flag, [&] {
                        qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * 0.5f; });
                        qd::range_for(1, [&](qd::i32) { flag() = qd::select(x[0] > 1.0f, 1, 0); });
                      });
                    });
}

// qd::graph::parallel inside a do_while: two branches, then the flag.
inline auto graph_parallel() {
  return qd::kernel(
      "graph_parallel", {"a", "b", "flag"}, qd::graph::on,
      [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> b, qd::types::ndarray<std::int32_t, 0> flag) {
        qd::graph::do_while(flag, [&] {
          qd::graph::parallel([&] { qd::range_for(a.shape(0), [&](qd::i32 i) { a[i] = a[i] + 1.0f; }); },
                              [&] { qd::range_for(b.shape(0), [&](qd::i32 i) { b[i] = b[i] * 2.0f; }); });
          qd::range_for(1, [&](qd::i32) { flag() = qd::select(a[0] < 5.0f, 1, 0); });
        });
      });
}

// qd::concurrent regions writing disjoint parts of one array and another array.
inline auto concurrent_regions() {
  return qd::kernel(
      "concurrent_regions", {"a", "b"}, [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> b) {
        qd::concurrent([&] { qd::range_for(0, a.shape(0) / 2, [&](qd::i32 i) { a[i] = qd::cast<float>(i); }); },
                       [&] { qd::range_for(a.shape(0) / 2, a.shape(0), [&](qd::i32 i) { a[i] = -1.0f; }); },
                       [&] { qd::range_for(b.shape(0), [&](qd::i32 i) { b[i] = 3.0f * qd::cast<float>(i); }); });
        qd::range_for(b.shape(0), [&](qd::i32 i) { b[i] = b[i] + 1.0f; });
      });
}

// Meshes (issue 14, SPEC §11.7): a Laplacian over v.verts() and a mean over c.verts();
// the kernel stays whole (`mesh`).
inline auto mesh_laplacian() {
  return qd::kernel("mesh_laplacian", {"mesh", "u", "lap", "cell_mean"},
                    [](qd::types::mesh mesh, qd::types::ndarray<float, 1> u, qd::types::ndarray<float, 1> lap,
                       qd::types::ndarray<float, 1> cell_mean) {
                      qd::mesh_for(mesh.verts(), [&](qd::mesh_element v) {
                        qd::var<float> acc = 0.0f;
                        qd::for_each(v.verts(), [&](qd::mesh_element w) { acc += u[w.id()] - u[v.id()]; });
                        lap[v.id()] = acc;
                      });
                      qd::mesh_for(mesh.cells(), [&](qd::mesh_element c) {
                        qd::var<float> sum = 0.0f;
                        qd::for_each(c.verts(), [&](qd::mesh_element w) { sum += u[w.id()]; });
                        cell_mean[c.id()] = sum / qd::cast<float>(c.verts().size());
                      });
                    });
}

}  // namespace qd_test::kernels
