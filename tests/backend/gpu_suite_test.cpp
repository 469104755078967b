// The per-backend suite: test bodies written once and run on every arch -- the CPU
// here, CUDA and AMD GPUs where present (each GPU instance reports itself skipped,
// with the reason, where that GPU is absent). Statements, atomics and reductions,
// random numbers, print, top-level values, split against whole, the seed's fallbacks.
// This file: statements and expressions, atomics and reductions (gpu_suite.hpp has the
// shared part; gpu_suite_values.cpp and gpu_suite_graphs.cpp the rest of the suite).
#include "backend/gpu_suite.hpp"

// ---------------------------------------------------------------------------
// Statements and expressions.

QD_SUITE_CASE("suite: integer operators wrap and define division by zero, for every integer type", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  check_integer_operators<std::int32_t>();
  check_integer_operators<std::int64_t>();
  check_integer_operators<std::uint32_t>();
  check_integer_operators<std::uint8_t>();
}

QD_SUITE_CASE("suite: floating-point operators are IEEE, bit for bit", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  check_float_operators<float>();
  check_float_operators<double>();
}

QD_SUITE_CASE("suite: math functions agree with <cmath>", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  const int ulps = on_gpu<A>() ? 8 : 4;
  check_math_functions<float>(ulps);
  check_math_functions<double>(ulps);
}

QD_SUITE_CASE("suite: casts convert, truncate toward zero and narrow modulo the width", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::casts();
  const std::vector<std::int32_t> is = {300, -1, 0, 7, -129, 65536 + 255};
  const std::vector<std::int64_t> ls = {
      (std::int64_t{1} << 32) + 5, -1, lim<std::int64_t>::min(), 12345678901LL, -7, 0};
  const std::vector<float> fs = {2.7f, -2.7f, 0.0f, 99.99f, -0.5f, 200.5f};
  const std::vector<double> ds = {0.1, -1e9, 16777217.0, 1.0 / 3.0, 0.75, -3.5};
  const std::int64_t n = 6, columns = 16;
  qd::ndarray<std::int32_t, 1> i32s(n);
  qd::ndarray<std::int64_t, 1> i64s(n);
  qd::ndarray<float, 1> f32s(n);
  qd::ndarray<double, 1> f64s(n);
  qd::ndarray<double, 2> out({n, columns});
  qd::ndarray<std::uint8_t, 2> small({n, 3});
  i32s.from_host(is), i64s.from_host(ls), f32s.from_host(fs), f64s.from_host(ds);
  k(i32s, i64s, f32s, f64s, out, small);
  auto got = out.to_host();
  auto got_small = small.to_host();
  for (std::size_t r = 0; r < static_cast<std::size_t>(n); ++r) {
    const std::int32_t i = is[r];
    const std::int64_t l = ls[r];
    const float f = fs[r];
    const double d = ds[r];
    const std::vector<double> want = {static_cast<double>(static_cast<std::int32_t>(f)),
                                      static_cast<double>(static_cast<std::int32_t>(d)),
                                      static_cast<double>(static_cast<std::int32_t>(l)),
                                      static_cast<double>(static_cast<std::uint32_t>(i)),
                                      static_cast<double>(static_cast<std::uint8_t>(i)),
                                      static_cast<double>(static_cast<float>(d)),
                                      static_cast<double>(static_cast<float>(i)),
                                      static_cast<double>(static_cast<std::int64_t>(f)),
                                      i != 0 ? 1.0 : 0.0,
                                      f != 0 ? 1.0 : 0.0,
                                      static_cast<double>(static_cast<std::uint32_t>(l)),
                                      i > 0 ? static_cast<double>(f) : static_cast<double>(static_cast<float>(i)),
                                      f < 0 ? -1.0 : 1.0,
                                      d > 0.5 ? static_cast<double>(l) : static_cast<double>(i),
                                      static_cast<double>(static_cast<std::int64_t>(i) * 4),
                                      static_cast<double>(f)};
    for (std::size_t c = 0; c < want.size(); ++c) {
      CAPTURE(r);
      CAPTURE(c);
      CHECK(got[r * static_cast<std::size_t>(columns) + c] == want[c]);
    }
    CHECK(got_small[r * 3 + 0] == static_cast<std::uint8_t>(i));
    CHECK(got_small[r * 3 + 1] == static_cast<std::uint8_t>(std::abs(f)));
    CHECK(got_small[r * 3 + 2] == static_cast<std::uint8_t>(i + 250));
  }
}

// The documented float-to-integer rule, computed independently of the library: the
// truncated value in long double (exact for every bound involved), clamped; NaN gives 0.
template <class I, class F>
I saturated(F x) {
  if (std::isnan(x)) return 0;
  const long double t = std::trunc(static_cast<long double>(x));
  if (t <= static_cast<long double>(lim<I>::min())) return lim<I>::min();
  if (t >= static_cast<long double>(lim<I>::max())) return lim<I>::max();
  return static_cast<I>(t);
}

QD_SUITE_CASE(
    "suite: float-to-integer casts of NaN, infinities and out-of-range values saturate, NaN gives 0, at "
    "every opt level",
    A, on_cpu, on_reference, on_cuda, on_amdgpu, on_vulkan) {
  const double inf = lim<double>::infinity(), nan = lim<double>::quiet_NaN();
  const std::vector<double> specials = {nan,
                                        -nan,
                                        inf,
                                        -inf,
                                        1e30,
                                        -1e30,
                                        3.4e38,
                                        -3.4e38,
                                        0.0,
                                        -0.0,
                                        0.5,
                                        -0.5,
                                        3.7,
                                        -3.7,
                                        -0.99,
                                        -1.0,
                                        1e-40,
                                        255.0,
                                        255.99,
                                        256.0,
                                        300.5,
                                        -255.5,
                                        2147483647.0,
                                        2147483647.5,
                                        2147483648.0,
                                        2147483900.0,
                                        -2147483648.0,
                                        -2147483648.9,
                                        -2147483649.0,
                                        -2147483904.0,
                                        4294967295.0,
                                        4294967295.9,
                                        4294967296.0,
                                        5e9,
                                        -5e9,
                                        9223372036854774784.0,
                                        9223372036854775808.0,
                                        -9223372036854775808.0,
                                        -9223372036854777856.0,
                                        1.8446744073709552e19};
  // Each value at every position of a long loop: a vectorised body and its remainder
  // once disagreed at opt_level 3.
  const std::int64_t n = 1031;
  std::vector<double> ds(static_cast<std::size_t>(n));
  std::vector<float> fs(ds.size());
  for (std::size_t k = 0; k < ds.size(); ++k) {
    ds[k] = specials[(k * 7) % specials.size()];
    fs[k] = static_cast<float>(ds[k]);  // every special is within float's range
  }
  for (int opt = 0; opt <= 3; ++opt) {
    CAPTURE(opt);
    if (!start<A>({.opt_level = opt})) return;
    auto k = kernels::float_to_int();
    qd::ndarray<float, 1> f(n);
    qd::ndarray<double, 1> d(n);
    qd::ndarray<std::int32_t, 1> i32f(n), i32d(n);
    qd::ndarray<std::int64_t, 1> i64f(n), i64d(n);
    qd::ndarray<std::uint32_t, 1> u32f(n), u32d(n);
    qd::ndarray<std::uint8_t, 1> u8f(n), u8d(n);
    f.from_host(fs), d.from_host(ds);
    k(f, d, i32f, i32d, i64f, i64d, u32f, u32d, u8f, u8d);
    int mismatches = 0;
    auto compare = [&](const char* what, const auto& got, const auto& source) {
      using I = typename std::decay_t<decltype(got)>::value_type;
      for (std::size_t e = 0; e < got.size(); ++e) {
        const I want = saturated<I>(source[e]);
        if (got[e] != want && ++mismatches <= 10) {
          CAPTURE(what);
          CAPTURE(e);
          CAPTURE(source[e]);
          CHECK(+got[e] == +want);
        }
      }
    };
    compare("i32 from f32", i32f.to_host(), fs), compare("i32 from f64", i32d.to_host(), ds);
    compare("i64 from f32", i64f.to_host(), fs), compare("i64 from f64", i64d.to_host(), ds);
    compare("u32 from f32", u32f.to_host(), fs), compare("u32 from f64", u32d.to_host(), ds);
    compare("u8 from f32", u8f.to_host(), fs), compare("u8 from f64", u8d.to_host(), ds);
    CHECK(mismatches == 0);
  }
  // A C++ literal converts as a run-time value does (it was converted with undefined behaviour).
  if (!start<A>()) return;
  auto literals = qd::kernel("cast_literals", {"out"}, [](qd::types::ndarray<std::int64_t, 1> out) {
    out[0] = qd::cast<std::int64_t>(qd::cast<std::int32_t>(1e30));
    out[1] = qd::cast<std::int64_t>(qd::cast<std::uint8_t>(-5.5));
    out[2] = qd::cast<std::int64_t>(qd::cast<std::uint32_t>(std::numeric_limits<double>::quiet_NaN()));
    out[3] = qd::cast<std::int64_t>(-1e300);
    out[4] = qd::cast<std::int64_t>(qd::cast<bool>(std::numeric_limits<double>::quiet_NaN()));
  });
  qd::ndarray<std::int64_t, 1> out(5);
  literals(out);
  CHECK(out.to_host() == std::vector<std::int64_t>{lim<std::int32_t>::max(), 0, 0, lim<std::int64_t>::min(), 1});
}

QD_SUITE_CASE("suite: qd::var is per iteration inside a loop and a top-level value outside", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::variables();
  std::vector<std::int32_t> xs;
  for (int i = 0; i < 200; ++i) xs.push_back((i * 37) % 101 - 50);
  const auto n = static_cast<std::int64_t>(xs.size());
  qd::ndarray<std::int32_t, 1> x(n);
  qd::ndarray<std::int32_t, 2> out({n, 14});
  qd::ndarray<float, 1> fout(n);
  qd::ndarray<std::int32_t, 0> top;
  x.from_host(xs);
  const std::int32_t s = 345;
  k(x, out, fout, s, top);
  const std::int32_t t = (s * 3 + 4) % 1000;
  CHECK(top.to_host()[0] == t);
  auto got = out.to_host();
  auto fgot = fout.to_host();
  int mismatches = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    std::int32_t v = xs[i];
    std::vector<std::int32_t> want;
    v += 3, want.push_back(v);
    v -= 10, want.push_back(v);
    v *= -4, want.push_back(v);
    v = host_div(v, 3), want.push_back(v);
    v = host_mod(v, 7), want.push_back(v);
    v &= 0x3c, want.push_back(v);
    v |= 0x101, want.push_back(v);
    v ^= 0x55, want.push_back(v);
    std::int32_t w = v + 1000;
    want.push_back(v), want.push_back(w), want.push_back(0), want.push_back(w * 2);
    want.push_back(t + static_cast<std::int32_t>(i));
    want.push_back(xs[i] * xs[i] * xs[i]);
    for (std::size_t c = 0; c < want.size(); ++c) {
      if (got[i * 14 + c] != want[c] && ++mismatches <= 10) {
        CAPTURE(i);
        CAPTURE(c);
        CHECK(got[i * 14 + c] == want[c]);
      }
    }
    float f = 1.5f;
    f *= static_cast<float>(xs[i]);
    f /= 4.0f;
    f -= 0.25f;
    mismatches += fgot[i] != f;
  }
  CHECK(mismatches == 0);
}

QD_SUITE_CASE("suite: ndrange visits every index of a 2-D, 3-D and 4-D space exactly once", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::ndranges();
  // More points than a launch's threads (8 SMs x 2048 on the emulated CUDA GPU, 132 x 2048 on an H200): each
  // thread steps through the space, carrying from the last dimension into the others.
  const int r2 = 601, c2 = 997, d0 = 67, d1 = 65, d2 = 63;
  qd::ndarray<std::int32_t, 2> a2({r2, c2});
  qd::ndarray<std::int32_t, 3> a3({d0, d1, d2});
  qd::ndarray<std::int32_t, 4> a4({2, 3, 4, 5});
  k(a2, a3, a4);
  auto h2 = a2.to_host();
  auto h3 = a3.to_host();
  auto h4 = a4.to_host();
  int mismatches = 0;
  std::size_t p = 0;
  for (int i = 0; i < r2; ++i)
    for (int j = 0; j < c2; ++j) mismatches += h2[p++] != i * 1000 + j + 1;
  p = 0;
  for (int i = 0; i < d0; ++i)
    for (int j = 0; j < d1; ++j)
      for (int l = 0; l < d2; ++l) mismatches += h3[p++] != i * 10000 + j * 100 + l + 1;
  p = 0;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int l = 0; l < 4; ++l)
        for (int m = 0; m < 5; ++m) mismatches += h4[p++] != i * 1000 + j * 100 + l * 10 + m + 1;
  CHECK(mismatches == 0);
}

QD_SUITE_CASE("suite: range bounds from parameters, empty and negative extents", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::ranges();
  const std::int64_t n = 16;
  struct bounds {
    std::int32_t lo;
    std::int64_t hi;
    std::int64_t rows, cols;
    std::int32_t h, w;
  };
  // One compiled kernel serves every bound and array shape, empty and negative ones too.
  for (bounds b : {bounds{3, 10, 3, 5, 2, 3}, bounds{0, n, 0, 4, 0, 5}, bounds{5, 5, 1000, 1, -2, 3},
                   bounds{8, 2, 7, 0, -1, -1}, bounds{0, 1, 1, 1, 4, -1}}) {
    CAPTURE(b.lo);
    CAPTURE(b.hi);
    CAPTURE(b.h);
    CAPTURE(b.w);
    qd::ndarray<std::int32_t, 1> hits(n), values(n), fixed(n);
    qd::ndarray<float, 2> m({b.rows, b.cols});
    qd::ndarray<std::int32_t, 0> count;
    values.fill(-1);
    k(hits, values, b.lo, b.hi, m, count, b.h, b.w, fixed);
    auto h = hits.to_host();
    auto v = values.to_host();
    auto f = fixed.to_host();
    for (std::int32_t i = 0; i < n; ++i) {
      bool inside = i >= b.lo && i < b.hi;
      CHECK(h[static_cast<std::size_t>(i)] == (inside ? 1 : 0));
      CHECK(v[static_cast<std::size_t>(i)] == (inside ? i * 2 : -1));
      CHECK(f[static_cast<std::size_t>(i)] == (i < 7 ? i + 1 : 0));
    }
    std::vector<float> want;
    for (std::int64_t i = 0; i < b.rows * b.cols; ++i) want.push_back(static_cast<float>(i));
    CHECK(m.to_host() == want);
    const std::int32_t cells = b.h > 0 && b.w > 0 ? b.h * b.w : 0;
    CHECK(count.to_host()[0] == cells + (b.h * b.w > 0 ? b.h * b.w * 1000 : 0));
  }
}

QD_SUITE_CASE("suite: loops, branches and while_ nested in a parallel construct, and serial control flow", A,
              QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::nested_loops();
  const std::int64_t n = 300, m = 17;
  std::vector<std::int32_t> as, vs;
  for (std::int64_t i = 0; i < n * m; ++i) as.push_back(static_cast<std::int32_t>((i * 13) % 29 - 14));
  for (std::int64_t j = 0; j < m; ++j) vs.push_back(static_cast<std::int32_t>(j * 3 - 20));
  qd::ndarray<std::int32_t, 2> a({n, m}), y({n, 4});
  qd::ndarray<std::int32_t, 1> v(m);
  a.from_host(as), v.from_host(vs);
  k(a, v, y);
  auto got = y.to_host();
  int mismatches = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    std::int32_t dot = 0, evens = 0;
    for (std::int64_t j = 0; j < m; ++j) {
      dot += as[static_cast<std::size_t>(i * m + j)] * vs[static_cast<std::size_t>(j)];
      if (vs[static_cast<std::size_t>(j)] % 2 == 0) evens += as[static_cast<std::size_t>(i * m + j)];
    }
    std::int32_t steps = 0;
    for (std::int64_t c = i + 1; c != 1; ++steps) c = c % 2 == 0 ? c / 2 : c * 3 + 1;
    mismatches += got[static_cast<std::size_t>(i * 4 + 0)] != dot;
    mismatches += got[static_cast<std::size_t>(i * 4 + 1)] != static_cast<std::int32_t>(i * (i + 1) / 2);
    mismatches += got[static_cast<std::size_t>(i * 4 + 2)] != evens;
    mismatches += got[static_cast<std::size_t>(i * 4 + 3)] != steps;
  }
  CHECK(mismatches == 0);

  auto serial = kernels::serial_control_flow();
  const std::int64_t len = 5001;
  std::vector<std::int32_t> xs;
  for (std::int64_t i = 0; i < len; ++i) xs.push_back(static_cast<std::int32_t>(i % 7));
  qd::ndarray<std::int32_t, 1> x(len), prefix(len), g(2);
  qd::ndarray<std::int32_t, 0> sign;
  x.from_host(xs);
  std::vector<std::int32_t> want(xs.size());
  std::partial_sum(xs.begin(), xs.end(), want.begin());
  // A loop inside a top-level if_ is serial: it sees its own earlier iterations. The
  // while_ (Euclid) repeats while its condition holds, also zero times.
  for (const auto& pair : {std::pair{1071, 462}, std::pair{12, 18}, std::pair{7, 0}, std::pair{0, 5}}) {
    const int lhs = pair.first, rhs = pair.second;  // not a structured binding: CAPTURE is a lambda
    CAPTURE(lhs);
    CAPTURE(rhs);
    for (std::int32_t flag : {1, 0}) {
      CAPTURE(flag);
      serial(x, prefix, sign, flag, g, lhs, rhs);
      auto scanned = prefix.to_host();
      if (flag) {
        CHECK(scanned == want);
        CHECK(sign.to_host()[0] == ((len - 1) % 2 == 0 ? 1 : -1));
      } else {
        for (std::size_t i = 0; i < xs.size(); i += 97) CHECK(scanned[i] == -xs[i]);
        CHECK(sign.to_host()[0] == 1);
      }
      std::int32_t p = lhs, q = rhs, rounds = 0;
      while (q != 0) {
        std::int32_t t = q;
        q = p % q;
        p = t;
        ++rounds;
      }
      CHECK(p == std::gcd(lhs, rhs));
      CHECK(g.to_host() == std::vector<std::int32_t>{p, rounds});
    }
  }
}

QD_SUITE_CASE(
    "suite: break_ and continue_ in every kind of loop, a serialized top-level loop and block_dim, "
    "whole and split, as plain C++ runs them",
    A, on_cpu, on_reference, on_cuda, on_amdgpu, on_vulkan) {
  for (auto mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
    CAPTURE(mode);
    if (!start<A>({.per_offload = mode})) return;
    auto k = kernels::loop_control();
    const std::int32_t n = 500, rows = 37, cols = 29;
    std::vector<std::int32_t> xs;
    for (std::int32_t i = 0; i < n; ++i) xs.push_back(i == 321 ? -1 : (i * 7) % 13);
    qd::ndarray<std::int32_t, 1> x(n), count(n), first(n), spins(n), hits(n), prefix(n);
    qd::ndarray<std::int32_t, 0> total;
    qd::ndarray<std::int32_t, 2> grid({rows, cols});
    x.from_host(xs);
    for (auto* a : {&count, &first, &spins, &hits, &prefix}) a->fill(-7);
    k(x, count, first, spins, hits, prefix, total, grid);
    kernels::loop_control_result got{count.to_host(),  first.to_host(), spins.to_host(),   hits.to_host(),
                                     prefix.to_host(), grid.to_host(),  total.to_host()[0]};
    const kernels::loop_control_result want = kernels::loop_control_expected(xs, rows, cols);
    using column = std::vector<std::int32_t> kernels::loop_control_result::*;
    for (column c : {&kernels::loop_control_result::count, &kernels::loop_control_result::first,
                     &kernels::loop_control_result::spins, &kernels::loop_control_result::hits,
                     &kernels::loop_control_result::prefix, &kernels::loop_control_result::grid})
      CHECK(got.*c == want.*c);
    CHECK(got.total == want.total);
    // Three constructs: the serialized loop and the store after it are one serial construct.
    if (mode == qd::per_offload_mode::on) CHECK(k.per_offload_cache_observations().frontend_constructs_total == 3);
    qd::reset();
  }
}

QD_SUITE_CASE("suite: a kernel returns a tuple of a reduction, a maximum, a count and a vector, whole and split", A,
              on_cpu, on_reference, on_cuda, on_amdgpu, on_vulkan) {
  for (auto mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
    CAPTURE(mode);
    if (!start<A>({.per_offload = mode})) return;
    kernels::check_returns();
    qd::reset();
  }
}

QD_SUITE_CASE("suite: a nested struct parameter matched member by member with a host struct", A, on_cpu, on_reference,
              on_cuda, on_amdgpu, on_vulkan) {
  if (!start<A>()) return;
  auto k = kernels::struct_step();
  const std::int64_t n = 300;
  std::vector<float> x, v;
  for (std::int64_t i = 0; i < n; ++i)
    x.push_back(static_cast<float>(i % 11) * 0.5f), v.push_back(static_cast<float>(i % 5) - 2.0f);
  kernels::body_host b{qd::ndarray<float, 1>(n), qd::ndarray<float, 1>(n), {4.0f, 2.0f}};
  b.x.from_host(x);
  b.v.from_host(v);
  k(b, 0.125f);
  auto gx = b.x.to_host(), gv = b.v.to_host();
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float nv = v[i] - 4.0f * (x[i] - 2.0f) * 0.125f;  // the same operations, in the same order
    CHECK(gv[i] == doctest::Approx(nv).epsilon(1e-6));
    CHECK(gx[i] == doctest::Approx(x[i] + nv * 0.125f).epsilon(1e-6));
  }
  qd::reset();
}

QD_SUITE_CASE("suite: a loop bound beyond qd::i32 fails the launch and runs no iteration, instead of wrapping", A,
              on_cpu, on_reference, on_cuda, on_amdgpu, on_vulkan) {
  for (auto mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
    CAPTURE(mode);
    if (!start<A>({.per_offload = mode})) return;
    auto k = kernels::wide_bounds();
    qd::ndarray<std::int32_t, 1> hits(3);
    auto launch = [&](std::int64_t lo, std::int64_t hi, std::uint32_t n, std::int64_t rows) {
      hits.fill(0);
      k(hits, lo, hi, n, rows);
    };
    launch(-3, 4, 5, 3);  // i64 and u32 bounds that fit are used as they are
    CHECK(hits.to_host() == std::vector<std::int32_t>{7, 5, 6});
    launch(2147483640, 2147483647, 0, 0);
    CHECK(hits.to_host() == std::vector<std::int32_t>{7, 0, 0});
    const std::string message = "kernel 'wide_bounds': a qd::range_for bound is ";
    using doctest::Contains;
    CHECK_THROWS_WITH_AS(launch(0, 3000000000, 0, 0), Contains((message + "3000000000").c_str()), qd::user_error);
    CHECK(hits.to_host()[0] == 0);  // 3000000000 wraps to a negative i32; 4294967296 + 5 would wrap to 5
    CHECK_THROWS_WITH_AS(launch(0, 4294967301, 0, 0), Contains((message + "4294967301").c_str()), qd::user_error);
    CHECK(hits.to_host()[0] == 0);
    CHECK_THROWS_WITH_AS(launch(-4294967296, 3, 0, 0), Contains((message + "-4294967296").c_str()), qd::user_error);
    CHECK(hits.to_host()[0] == 0);
    CHECK_THROWS_WITH_AS(launch(0, 0, 4294967295u, 0), Contains((message + "4294967295").c_str()), qd::user_error);
    CHECK(hits.to_host()[1] == 0);
    CHECK_THROWS_WITH_AS(launch(0, 0, 0, 4294967298), Contains("does not fit in qd::i32"), qd::user_error);
    CHECK(hits.to_host()[2] == 0);
    launch(1, 2, 1, 1);  // the kernel still runs afterwards: the error record was reset
    CHECK(hits.to_host() == std::vector<std::int32_t>{1, 1, 2});

    auto literal = qd::kernel("wide_literal", {"hits"}, [](qd::types::ndarray<std::int32_t, 1> hits) {
      qd::range_for(5000000000LL, [&](qd::i32) { hits[0] += 1; });
    });
    CHECK_THROWS_WITH_AS(literal(hits),
                         Contains("kernel 'wide_literal': a qd::range_for bound of 5000000000 does not fit"),
                         qd::user_error);
  }
}

QD_SUITE_CASE("suite: if_ and else_ branch per element inside loops and at the top level", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::branches();
  std::vector<std::int32_t> xs;
  for (int i = -40; i <= 40; ++i) xs.push_back(i);
  const auto n = static_cast<std::int64_t>(xs.size());
  qd::ndarray<std::int32_t, 1> x(n), cls(n), big(n);
  qd::ndarray<std::int32_t, 0> top;
  x.from_host(xs);
  for (std::int32_t s : {9, 5}) {
    k(x, cls, big, top, s);
    auto c = cls.to_host();
    auto b = big.to_host();
    for (std::size_t i = 0; i < xs.size(); ++i) {
      std::int32_t v = xs[i];
      CAPTURE(v);
      CHECK(c[i] == (v < 0 ? -1 : v == 0 ? 0 : 1) + (v % 2 == 0 ? 10 : 0));
      CHECK(b[i] == (v > 0) + (v > 10) + (v > 20) + (v > 0 ? 100 : 0));
    }
    CHECK(top.to_host()[0] == (s > 5 ? 1 : 2));
  }
}

QD_SUITE_CASE("suite: signed overflow wraps instead of being assumed away by the compiler", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::overflow_compare();
  std::vector<std::int32_t> xs = {
      0, 5, -5, lim<std::int32_t>::max(), lim<std::int32_t>::min(), 1 << 30, lim<std::int32_t>::max(), 1 << 30};
  qd::ndarray<std::int32_t, 1> x(static_cast<std::int64_t>(xs.size())), out(static_cast<std::int64_t>(xs.size()));
  qd::ndarray<std::int32_t, 0> total;
  x.from_host(xs);
  k(x, out, total);
  std::int32_t sum = 0;
  for (std::int32_t v : xs) sum = wrap_add(sum, v);
  CHECK(total.to_host()[0] == sum);
  auto got = out.to_host();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    std::int32_t v = xs[i];
    std::int32_t want = static_cast<std::int32_t>(wrap_add(v, 1) > v) + 2 * static_cast<std::int32_t>(wrap_neg(v) < 0) +
                        4 * static_cast<std::int32_t>(host_div(wrap_mul(v, 2), 2) == v);
    CAPTURE(v);
    CHECK(got[i] == want);
  }
}

QD_SUITE_CASE("suite: scalar parameters of every type arrive with their run-time values", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::scalars();
  qd::ndarray<double, 1> floats(6);
  qd::ndarray<std::int64_t, 1> ints(8);
  qd::ndarray<std::uint32_t, 1> wide(5);
  struct args {
    float f;
    double d;
    std::int32_t i;
    std::int64_t l;
    std::uint32_t u;
    std::uint8_t b;
    bool flag;
  };
  for (args a : {args{1.5f, -2.25e-10, -7, -(std::int64_t{1} << 40) - 3, 4000000000u, 200, true},
                 args{-0.1f, 1e300, lim<std::int32_t>::min(), lim<std::int64_t>::max() - 1, 7u, 255, false}}) {
    k(a.f, a.d, a.i, a.l, a.u, a.b, a.flag, floats, ints, wide);  // the same compiled kernel, new values
    std::vector<double> want_floats = {a.f, a.d};
    std::vector<std::int64_t> want_ints = {a.i, a.l, a.b, a.flag ? 1 : 0};
    std::vector<std::uint32_t> want_wide = {a.u};
    for (int k2 = 0; k2 < 4; ++k2) {
      want_floats.push_back(static_cast<double>(a.f * static_cast<float>(k2)) + a.d);
      want_ints.push_back(a.l - k2);
      want_wide.push_back(a.u + static_cast<std::uint32_t>(k2));
    }
    CHECK(floats.to_host() == want_floats);
    CHECK(ints.to_host() == want_ints);
    CHECK(wide.to_host() == want_wide);
  }
  // C++ numbers convert where no value can change (int -> qd::f64, int -> qd::i64, std::int16_t -> qd::f32);
  // others need a static_cast (tests/compile_fail/scalar_argument_*.cpp).
  k(std::int16_t{2}, 3, static_cast<std::int32_t>(4.9), 5, 6u, std::uint8_t{7}, true, floats, ints, wide);
  CHECK(floats.to_host()[0] == 2.0);
  CHECK(floats.to_host()[1] == 3.0);
  CHECK(ints.to_host()[0] == 4);
  CHECK(ints.to_host()[1] == 5);
}

QD_SUITE_CASE("suite: needs_grad arrays carry a gradient buffer of the same shape, read and written through .grad()", A,
              QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::gradients();
  const std::int64_t n = 8;
  qd::ndarray<float, 1> x(n, qd::needs_grad);
  qd::ndarray<double, 2> m({3, 5}, qd::needs_grad);
  qd::ndarray<float, 0> s(qd::needs_grad);
  qd::ndarray<float, 1> plain(n, qd::needs_grad);  // a gradient the parameter does not ask for is fine
  REQUIRE(x.has_grad());
  CHECK(x.grad().shape() == x.shape());
  CHECK(m.grad().shape() == m.shape());
  std::vector<float> xs;
  for (int i = 0; i < n; ++i) xs.push_back(static_cast<float>(i) - 2.5f);
  std::vector<double> ms, mgrad;
  for (int i = 0; i < 15; ++i) ms.push_back(i * 0.25), mgrad.push_back(100.0 + i);
  x.from_host(xs), m.from_host(ms), m.grad().from_host(mgrad);
  s.from_host(std::vector<float>{1.5f});
  s.grad().from_host(std::vector<float>{0.25f});
  CHECK(x.grad().to_host() == std::vector<float>(static_cast<std::size_t>(n), 0.0f));  // zero-initialized
  k(x, m, s, plain);
  std::vector<float> want_xgrad, want_plain;
  for (float v : xs) want_xgrad.push_back(v * 2), want_plain.push_back(v * 2 + 1);
  std::vector<double> want_mgrad;
  for (std::size_t i = 0; i < ms.size(); ++i) want_mgrad.push_back(mgrad[i] + ms[i] * 3);
  CHECK(x.grad().to_host() == want_xgrad);
  CHECK(x.to_host() == xs);  // the primal is untouched
  CHECK(plain.to_host() == want_plain);
  CHECK(plain.grad().to_host() == std::vector<float>(static_cast<std::size_t>(n), 0.0f));
  CHECK(m.grad().to_host() == want_mgrad);
  CHECK(m.to_host() == ms);
  CHECK(s.grad().to_host() == std::vector<float>{1.5f * 4 + 0.25f});
}

QD_SUITE_CASE("suite: kernel.grad computes the adjoint of a reduction, a carried loop variable and a branch", A,
              QD_SUITE_ARCHES, on_reference) {
  if (!start<A>()) return;
  auto k = kernels::adjoint_chain();
  const std::vector<float> xs{0.2f, 0.7f, -0.4f, 0.9f, 0.45f, 0.6f};
  const auto n = static_cast<std::int64_t>(xs.size());
  qd::ndarray<float, 1> x(n, qd::needs_grad), y(n, qd::needs_grad);
  qd::ndarray<float, 0> loss(qd::needs_grad);
  x.from_host(xs);
  loss.fill(0.0f);
  k(x, y, loss);
  loss.grad().fill(1.0f);
  k.grad(x, y, loss);
  CHECK(k.grad.per_offload_cache_observations().fallback == qd::fallback_reason::autodiff);
  // In double on the host: p = ((x + 0.5) x + 0.5) x + 0.5, y = p^2 or sin p, loss = sum(x) sum(y).
  double total = 0, ysum = 0;
  std::vector<double> dy;
  for (float xf : xs) {
    double v = xf, p = 1, dp = 0;
    for (int r = 0; r < 3; ++r) {
      dp = dp * v + p;
      p = p * v + 0.5;
    }
    double yv = v > 0.5 ? p * p : std::sin(p);
    dy.push_back(v > 0.5 ? 2 * p * dp : std::cos(p) * dp);
    total += v;
    ysum += yv;
  }
  auto got = x.grad().to_host();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    CAPTURE(i);
    double want = total * dy[i] + ysum;
    CHECK(std::abs(got[i] - want) <= 1e-4 * std::max(1.0, std::abs(want)));
  }
  CHECK(y.grad().to_host() == std::vector<float>(xs.size(), 0.0f));  // the plain stores' adjoints zero them
}

QD_SUITE_CASE("suite: kernel.grad of a long carried loop restores its values from the value stacks", A, QD_SUITE_ARCHES,
              on_reference) {
  if (!start<A>()) return;
  auto k = kernels::long_carry();
  const std::vector<float> cs{0.3f, -0.7f, 1.1f, 0.05f}, ws{1.0f, -0.5f, 2.0f, 0.75f};
  for (std::int64_t n : {150, 4200}) {
    CAPTURE(n);
    std::vector<float> xs;
    for (std::int64_t j = 0; j < n; ++j)
      xs.push_back(static_cast<float>(0.3 + 0.7 * std::sin(1.7 * static_cast<double>(j) + 0.4)));
    qd::ndarray<float, 1> x(n, qd::needs_grad), c(4, qd::needs_grad), y(4, qd::needs_grad);
    x.from_host(xs);
    c.from_host(cs);
    x.grad().fill(0.0f);
    c.grad().fill(0.0f);
    k(x, c, y);
    y.grad().from_host(ws);
    k.grad(x, c, y);
    // In double on the host: every p_j stored, then the reverse sweep.
    std::vector<double> want_x(static_cast<std::size_t>(n), 0.0), want_c;
    for (std::size_t i = 0; i < cs.size(); ++i) {
      std::vector<double> ps{cs[i]};
      for (float xf : xs) ps.push_back(0.5 * ps.back() + 0.4 * std::sin(ps.back() * xf) + 0.1 * xf);
      double g = ws[i];
      for (std::size_t j = xs.size(); j-- > 0;) {
        const double cj = std::cos(ps[j] * xs[j]);
        want_x[j] += g * (0.4 * cj * ps[j] + 0.1);
        g *= 0.5 + 0.4 * cj * xs[j];
      }
      want_c.push_back(g);
    }
    const auto got_x = x.grad().to_host(), got_c = c.grad().to_host();
    for (std::size_t i = 0; i < cs.size(); ++i) {
      CAPTURE(i);
      CHECK(std::abs(got_c[i] - want_c[i]) <= 1e-4 * std::max(1.0, std::abs(want_c[i])));
    }
    for (std::size_t j = 0; j < xs.size(); ++j) {
      CAPTURE(j);
      CHECK(std::abs(got_x[j] - want_x[j]) <= 1e-4 * std::max(1.0, std::abs(want_x[j])));
    }
  }
}

QD_SUITE_CASE("suite: kernel.fwd computes the tangent of a reduction, a carried loop variable and a branch", A,
              QD_SUITE_ARCHES, on_reference) {
  if (!start<A>()) return;
  auto k = kernels::adjoint_chain();
  const std::vector<float> xs{0.2f, 0.7f, -0.4f, 0.9f, 0.45f, 0.6f}, us{1.0f, -0.5f, 0.25f, 2.0f, -1.0f, 0.75f};
  const auto n = static_cast<std::int64_t>(xs.size());
  qd::ndarray<float, 1> x(n, qd::needs_grad), y(n, qd::needs_grad);
  qd::ndarray<float, 0> loss(qd::needs_grad);
  x.from_host(xs);
  x.dual().from_host(us);
  loss.fill(0.0f);
  k.fwd(x, y, loss);
  // In double on the host: p = ((x + 0.5) x + 0.5) x + 0.5, y = p^2 or sin p, loss = sum(x) sum(y);
  // the tangents along u: y' = dy u, loss' = sum(u) sum(y) + sum(x) sum(dy u).
  double total = 0, ysum = 0, usum = 0, dysum = 0, lsum = 0;
  std::vector<double> ydual;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    double v = xs[i], p = 1, dp = 0;
    for (int r = 0; r < 3; ++r) {
      dp = dp * v + p;
      p = p * v + 0.5;
    }
    const double yv = v > 0.5 ? p * p : std::sin(p), dy = v > 0.5 ? 2 * p * dp : std::cos(p) * dp;
    ydual.push_back(dy * us[i]);
    total += v, ysum += yv, usum += us[i], dysum += dy * us[i];
  }
  lsum = usum * ysum + total * dysum;
  const auto got = y.dual().to_host();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    CAPTURE(i);
    CHECK(std::abs(got[i] - ydual[i]) <= 1e-4 * std::max(1.0, std::abs(ydual[i])));
  }
  CHECK(std::abs(loss.dual().to_host()[0] - lsum) <= 1e-4 * std::max(1.0, std::abs(lsum)));
  CHECK(std::abs(loss.to_host()[0] - total * ysum) <= 1e-4 * std::max(1.0, std::abs(total * ysum)));
}

QD_SUITE_CASE("suite: volatile_load re-reads memory where a plain element read is a snapshot", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::volatile_reads();
  std::vector<std::int32_t> xs = {3, -4, 0, 100, 7};
  const auto n = static_cast<std::int64_t>(xs.size());
  qd::ndarray<std::int32_t, 1> x(n);
  qd::ndarray<std::int32_t, 2> out({n, 3});
  x.from_host(xs);
  k(x, out);
  auto got = out.to_host();
  auto now = x.to_host();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    CHECK(now[i] == xs[i] * 2 + 1);
    CHECK(got[i * 3 + 0] == xs[i]);
    CHECK(got[i * 3 + 1] == xs[i] * 2 + 1);
    CHECK(got[i * 3 + 2] == xs[i] * 2 + 1);
  }
}

QD_SUITE_CASE("suite: clamped indexing moves an out-of-range index to the nearest edge, for reads and writes", A,
              QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::clamped();
  const std::int64_t n = 10, h = 4, w = 6;
  std::vector<float> xs;
  for (int i = 0; i < n; ++i) xs.push_back(static_cast<float>(i * i) + 0.5f);
  std::vector<std::int32_t> ms;
  for (int i = 0; i < h * w; ++i) ms.push_back(i * 3 + 1);
  qd::ndarray<float, 1> x(n), edges(6), blur(n), hits(n);
  qd::ndarray<std::int32_t, 2> m({h, w});
  qd::ndarray<std::int32_t, 1> medges(6);
  x.from_host(xs), m.from_host(ms);
  k(x, m, edges, medges, blur, hits);
  auto c1 = [&](std::int64_t i) { return xs[static_cast<std::size_t>(std::clamp<std::int64_t>(i, 0, n - 1))]; };
  auto c2 = [&](std::int64_t i, std::int64_t j) {
    return ms[static_cast<std::size_t>(std::clamp<std::int64_t>(i, 0, h - 1) * w +
                                       std::clamp<std::int64_t>(j, 0, w - 1))];
  };
  CHECK(edges.to_host() == std::vector<float>{c1(-5), c1(-1), c1(2), c1(n - 1), c1(n), c1(n + 1000)});
  CHECK(medges.to_host() ==
        std::vector<std::int32_t>{c2(-1, -1), c2(h, w), c2(-3, 2), c2(1, w + 10), c2(h + 1, -2), c2(1, 2)});
  std::vector<float> want_blur, want_hits(static_cast<std::size_t>(n), 0.0f);
  for (std::int64_t i = 0; i < n; ++i) want_blur.push_back(c1(i - 1) + c1(i + 1));
  for (std::int64_t i = 0; i < n + 4; ++i)
    want_hits[static_cast<std::size_t>(std::clamp<std::int64_t>(i - 2, 0, n - 1))] += 1.0f;
  CHECK(blur.to_host() == want_blur);
  CHECK(hits.to_host() == want_hits);
  CHECK(want_hits.front() == 3.0f);  // the edges really were hit from outside
}

QD_SUITE_CASE("suite: every element type works in arrays of 0 to 4 dimensions", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  check_copy_scale_all_ranks<float>();
  check_copy_scale_all_ranks<double>();
  check_copy_scale_all_ranks<std::int32_t>();
  check_copy_scale_all_ranks<std::int64_t>();
  check_copy_scale_all_ranks<std::uint32_t>();
  check_copy_scale_all_ranks<std::uint8_t>();
}

// ---------------------------------------------------------------------------
// Atomics and reductions.

QD_SUITE_CASE("suite: atomics return the old value in a serial construct", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::atomics_serial();
  std::vector<std::int32_t> ha = {1, 2, 10, 4, 10};
  std::vector<float> hf = {0.25f, 1.0f, -1.5f, 2.0f};
  qd::ndarray<std::int32_t, 1> a(5), olds(8);
  qd::ndarray<float, 1> f(4), folds(4);
  a.from_host(ha);
  f.from_host(hf);
  for (int launch = 0; launch < 2; ++launch) {
    CAPTURE(launch);
    k(a, f, olds, folds);
    std::vector<std::int32_t> want_olds = {ha[0], ha[1], ha[2], ha[3]};
    std::vector<float> want_folds = hf;
    ha[0] += 5, ha[1] -= 5, ha[2] = std::min(ha[2], 5), ha[3] = std::max(ha[3], 5);
    hf[0] += 0.5f, hf[1] -= 0.5f, hf[2] = std::min(hf[2], 0.5f), hf[3] = std::max(hf[3], 0.5f);
    std::int32_t v = ha[4];
    want_olds.push_back(v), v += 3;
    want_olds.push_back(v), v -= 1;
    want_olds.push_back(v), v = std::min(v, 7);
    want_olds.push_back(v), v = std::max(v, 9);
    ha[4] = v;
    CHECK(olds.to_host() == want_olds);
    CHECK(folds.to_host() == want_folds);
    CHECK(a.to_host() == ha);
    CHECK(f.to_host() == hf);
  }
}

QD_SUITE_CASE("suite: contended atomics and top-level reductions in a parallel construct", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  auto k = kernels::atomics_parallel();
  const std::int64_t n = 20000;
  std::vector<std::int32_t> xs;  // distinct values: 7919 is invertible modulo the prime 100003
  for (std::int64_t i = 0; i < n; ++i) xs.push_back(static_cast<std::int32_t>((i * 7919) % 100003 - 50000));
  qd::ndarray<std::int32_t, 1> x(n), acc(4), tops(4), mine(n);
  qd::ndarray<std::int32_t, 2> olds({n, 2});
  qd::ndarray<float, 1> facc(3);
  x.from_host(xs);
  acc.from_host(std::vector<std::int32_t>{0, 0, lim<std::int32_t>::max(), lim<std::int32_t>::min()});
  facc.from_host(std::vector<float>{0.0f, lim<float>::infinity(), -lim<float>::infinity()});
  k(x, acc, olds, facc, tops, mine);
  const std::int64_t total = std::accumulate(xs.begin(), xs.end(), std::int64_t{0});
  const std::int32_t mn = *std::min_element(xs.begin(), xs.end());
  const std::int32_t mx = *std::max_element(xs.begin(), xs.end());
  const std::vector<std::int32_t> want = {static_cast<std::int32_t>(total), static_cast<std::int32_t>(-total), mn, mx};
  CHECK(acc.to_host() == want);
  CHECK(tops.to_host() == want);
  CHECK(facc.to_host() ==
        std::vector<float>{static_cast<float>(n), 0.5f * static_cast<float>(mn), 0.5f * static_cast<float>(mx)});
  // Old values: only the first update in the element's modification order sees the
  // initial value; every old value is the initial one or some x; the iteration holding
  // the extreme value saw something less extreme.
  auto o = olds.to_host();
  int saw_initial_min = 0, saw_initial_max = 0;
  bool olds_are_values = true;
  for (std::int64_t i = 0; i < n; ++i) {
    std::int32_t omin = o[static_cast<std::size_t>(i * 2)], omax = o[static_cast<std::size_t>(i * 2 + 1)];
    saw_initial_min += omin == lim<std::int32_t>::max();
    saw_initial_max += omax == lim<std::int32_t>::min();
    if (omin != lim<std::int32_t>::max() && (omin < mn || std::find(xs.begin(), xs.end(), omin) == xs.end()))
      olds_are_values = false;
    if (omax != lim<std::int32_t>::min() && (omax > mx || std::find(xs.begin(), xs.end(), omax) == xs.end()))
      olds_are_values = false;
    if (xs[static_cast<std::size_t>(i)] == mn) CHECK(omin > mn);
    if (xs[static_cast<std::size_t>(i)] == mx) CHECK(omax < mx);
  }
  CHECK(saw_initial_min == 1);
  CHECK(saw_initial_max == 1);
  CHECK(olds_are_values);
  auto m = mine.to_host();
  for (std::int64_t i = 0; i < n; i += 101) CHECK(m[static_cast<std::size_t>(i)] == i * 1000 + i + 2);

  auto compaction = kernels::compaction();
  const std::int64_t len = 30000;
  std::vector<std::int32_t> cs;
  for (std::int64_t i = 0; i < len; ++i) cs.push_back(static_cast<std::int32_t>((i * 7919) % 100003 - 50000));
  std::vector<std::int32_t> picked_want;
  std::copy_if(cs.begin(), cs.end(), std::back_inserter(picked_want), [](std::int32_t v) { return v % 3 == 0; });
  std::sort(picked_want.begin(), picked_want.end());
  REQUIRE(picked_want.size() > 1000);
  qd::ndarray<std::int32_t, 1> cx(len), picked(len), picked2(len);
  qd::ndarray<std::int32_t, 0> count, count2;
  cx.from_host(cs);
  compaction(cx, picked, count, picked2, count2);
  for (auto* arrays : {&picked, &picked2}) {
    auto got = arrays->to_host();
    got.resize(picked_want.size());
    std::sort(got.begin(), got.end());
    CHECK(got == picked_want);  // every slot handed out once
  }
  CHECK(count.to_host()[0] == static_cast<std::int32_t>(picked_want.size()));
  CHECK(count2.to_host()[0] == static_cast<std::int32_t>(picked_want.size()));
}

QD_SUITE_CASE("suite: x[i] += v, -= v, min and max are atomic for every element type", A, QD_SUITE_ARCHES) {
  if (!start<A>()) return;
  check_histogram<std::int32_t>();
  check_histogram<std::uint32_t>();
  check_histogram<std::int64_t>();
  check_histogram<std::uint8_t>();
  check_histogram<float>();
  check_histogram<double>();
}
