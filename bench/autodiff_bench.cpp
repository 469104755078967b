// Reverse-mode autodiff on the CPU (issue 12): the adjoint's run time and compile time
// against its forward kernel's for a stencil, an N-body force loop, a reduction and a
// kernel whose gradient adds into a shared 0-d element,
// the gradient's accuracy against central finite differences in f64 and f32, and
// (issue 27) tape.backward() against the same adjoints launched by hand, and forward mode
// (kernel.fwd) against the forward kernel, and a serial loop carrying a variable.
// Usage: autodiff_bench [repeats] [tape [width] | fwd | carry]   (only that section)
#include <quadrants/quadrants.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_support.hpp"

namespace {

template <class T>
using g1 = qd::types::ndarray<T, 1, qd::needs_grad>;

template <class T>
auto stencil_kernel(const std::string& name) {
  return qd::kernel(name, [](g1<T> x, g1<T> y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      auto c = x[i];
      auto l = x.at(i - 1, qd::boundary::clamp), r = x.at(i + 1, qd::boundary::clamp);
      y[i] = c * c + static_cast<T>(0.25) * qd::sin(l * r) + qd::sqrt(c * c + static_cast<T>(1));
    });
  });
}

auto nbody_kernel() {
  return qd::kernel("nbody_forces", [](g1<float> px, g1<float> py, g1<float> fx, g1<float> fy) {
    qd::range_for(px.shape(0), [&](qd::i32 i) {
      qd::f32 xi = px[i], yi = py[i];
      qd::var<float> ax = 0.0f, ay = 0.0f;
      qd::range_for(px.shape(0), [&](qd::i32 j) {
        qd::f32 dx = px[j] - xi, dy = py[j] - yi;
        qd::f32 r2 = dx * dx + dy * dy + 0.01f;
        qd::f32 inv = 1.0f / (r2 * qd::sqrt(r2));
        ax += dx * inv;
        ay += dy * inv;
      });
      fx[i] = ax;
      fy[i] = ay;
    });
  });
}

auto reduction_kernel() {
  return qd::kernel("reduction", [](g1<float> x, qd::types::ndarray<float, 0, qd::needs_grad> loss) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { loss() += qd::exp(x[i] * 0.01f) * x[i]; });
  });
}

// Every iteration's gradient adds into one shared 0-d element (k).
auto shared_scalar_kernel() {
  return qd::kernel("shared_scalar", [](g1<float> x, qd::types::ndarray<float, 0, qd::needs_grad> k, g1<float> y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = qd::sin(x[i]) * k(); });
  });
}

struct timing {
  double forward_ms, adjoint_ms, forward_compile_ms, adjoint_compile_ms;
};

// Compile times: medians of 5 rounds, each in a fresh program without the offline cache.
template <class Make>
void measure_compile(Make make, timing& t) {
  std::vector<double> f, a;
  for (int round = 0; round < 5; ++round) {
    qd::init({.arch = qd::arch::cpu, .offline_cache = false});
    auto k = make();
    f.push_back(qd_bench::ms([&] { k.compile(); }));
    a.push_back(qd_bench::ms([&] { k.grad.compile(); }));
  }
  t.forward_compile_ms = qd_bench::median(f);
  t.adjoint_compile_ms = qd_bench::median(a);
  qd::init({.arch = qd::arch::cpu});
}

// Run times as medians, in the running program, once both are compiled.
template <class Make, class Forward, class Adjoint>
timing measure(Make make, Forward forward, Adjoint adjoint, int repeats, timing t) {
  auto k = make();
  forward(k);
  adjoint(k);
  std::vector<double> f, a;
  for (int r = 0; r < repeats; ++r) {
    f.push_back(qd_bench::ms([&] { forward(k); }));
    a.push_back(qd_bench::ms([&] { adjoint(k); }));
  }
  t.forward_ms = qd_bench::median(f);
  t.adjoint_ms = qd_bench::median(a);
  return t;
}

void report(const char* name, const char* size, const timing& t) {
  std::printf("%-22s %-14s forward %9.3f ms  adjoint %9.3f ms  ratio %5.2fx   compile %7.1f / %7.1f ms  ratio %4.2fx\n",
              name, size, t.forward_ms, t.adjoint_ms, t.adjoint_ms / t.forward_ms, t.forward_compile_ms,
              t.adjoint_compile_ms, t.adjoint_compile_ms / t.forward_compile_ms);
}

// Max relative error of the stencil's gradient against central differences (all coordinates).
template <class T>
double stencil_accuracy() {
  qd::init({.arch = qd::arch::cpu});
  auto k = stencil_kernel<T>(std::string("stencil_accuracy_") + (sizeof(T) == 8 ? "f64" : "f32"));
  const int n = 64;
  std::vector<T> x0(n), w(n);
  for (int i = 0; i < n; ++i) {
    x0[static_cast<std::size_t>(i)] = static_cast<T>(0.5 + 0.4 * std::sin(0.37 * i));
    w[static_cast<std::size_t>(i)] = static_cast<T>(0.5 + 0.3 * std::cos(0.91 * i));
  }
  auto loss = [&](const std::vector<T>& xs) {
    qd::ndarray<T, 1> x(n, qd::needs_grad), y(n, qd::needs_grad);
    x.from_host(xs);
    k(x, y);
    auto ys = y.to_host();
    double s = 0;
    for (int i = 0; i < n; ++i)
      s += static_cast<double>(w[static_cast<std::size_t>(i)]) * static_cast<double>(ys[static_cast<std::size_t>(i)]);
    return s;
  };
  qd::ndarray<T, 1> x(n, qd::needs_grad), y(n, qd::needs_grad);
  x.from_host(x0);
  k(x, y);
  y.grad().from_host(w);
  k.grad(x, y);
  auto g = x.grad().to_host();
  const double h = sizeof(T) == 8 ? 1e-6 : 1e-2;
  double worst = 0;
  for (int j = 0; j < n; ++j) {
    auto hi = x0, lo = x0;
    hi[static_cast<std::size_t>(j)] += static_cast<T>(h);
    lo[static_cast<std::size_t>(j)] -= static_cast<T>(h);
    const double step =
        static_cast<double>(hi[static_cast<std::size_t>(j)]) - static_cast<double>(lo[static_cast<std::size_t>(j)]);
    const double fd = (loss(hi) - loss(lo)) / step;
    const double err =
        std::abs(static_cast<double>(g[static_cast<std::size_t>(j)]) - fd) / std::max(1e-3, std::abs(fd));
    worst = std::max(worst, err);
  }
  return worst;
}

// tape.backward() over `steps` launches writing one row of `width` per time step (and a
// loss launch), against the same adjoints launched by hand in reverse order, and the
// forward launches recorded on that tape against the same launches without one: medians
// of `repeats` rounds, each recording a fresh tape.
void measure_tape(int steps, int width, int repeats) {
  using g2 = qd::types::ndarray<float, 2, qd::needs_grad>;
  using g0 = qd::types::ndarray<float, 0, qd::needs_grad>;
  auto advance = qd::kernel("tape_advance", {"rows", "t"}, [](g2 rows, qd::i32 t) {
    qd::range_for(rows.shape(1), [&](qd::i32 j) { rows(t + 1, j) = qd::sin(rows(t, j)) + rows(t, j); });
  });
  auto last_row = qd::kernel("tape_last_row", [](g2 rows, g0 loss) {
    qd::range_for(rows.shape(1), [&](qd::i32 j) { loss() += rows(rows.shape(0) - 1, j); });
  });
  qd::ndarray<float, 2> rows({steps + 1, width}, qd::needs_grad);
  qd::ndarray<float, 0> loss(qd::needs_grad);
  rows.fill(0.25f);
  rows.grad().fill(0.0f);
  auto forward = [&] {
    for (int s = 0; s < steps; ++s) advance(rows, s);
    last_row(rows, loss);
  };
  std::vector<double> plain_ms, recorded_ms, tape_ms, hand_ms;
  for (int r = 0; r < repeats + 1; ++r) {  // the first round compiles the adjoints
    const double p = qd_bench::ms(forward);
    double f = 0, t = 0;
    {
      qd::ad::tape tape(loss);
      f = qd_bench::ms(forward);
      t = qd_bench::ms([&] { tape.backward(); });
    }
    const double h = qd_bench::ms([&] {
      loss.grad().fill(1.0f);
      last_row.grad(rows, loss);
      for (int s = steps; s-- > 0;) advance.grad(rows, s);
    });
    if (r == 0) continue;
    plain_ms.push_back(p);
    recorded_ms.push_back(f);
    tape_ms.push_back(t);
    hand_ms.push_back(h);
  }
  const double p = qd_bench::median(plain_ms), f = qd_bench::median(recorded_ms), t = qd_bench::median(tape_ms),
               h = qd_bench::median(hand_ms);
  std::printf(
      "%5d launches, rows of %4d: backward %8.3f ms (%5.2f us/launch)  by hand %8.3f ms  ratio %5.2fx | "
      "forward on the tape %8.3f ms  without %8.3f ms  (%+5.2f us/launch) | forward+backward ratio %5.2fx\n",
      steps + 1, width, t, 1e3 * t / (steps + 1), h, t / h, f, p, 1e3 * (f - p) / (steps + 1), (f + t) / (p + h));
}

void measure_tapes(int repeats, int only_width = 0) {
  std::printf(
      "tape.backward() against the same adjoints launched by hand, and the forward launches on the tape against "
      "the same launches without one (median of %d tapes):\n",
      repeats);
  for (int width : {16, 4096})  // a launch the calling thread runs alone; one the worker threads share
    if (only_width == 0 || width == only_width)
      for (int steps : {125, 500, 2000}) measure_tape(steps, width, repeats);
}

// kernel.fwd (the kernel and its tangent in one launch) against the kernel alone, f32,
// medians of `repeats` launches of each once both are compiled.
void measure_forward_mode(int repeats) {
  qd::init({.arch = qd::arch::cpu});
  std::printf("kernel.fwd against the forward kernel on the CPU (median of %d runs)\n", repeats);
  auto row = [&](const char* name, const char* size, auto make, auto forward, auto tangent) {
    const timing t = measure(make, forward, tangent, repeats, {});
    std::printf("%-26s %-10s forward %9.3f ms  kernel.fwd %9.3f ms  ratio %5.2fx\n", name, size, t.forward_ms,
                t.adjoint_ms, t.adjoint_ms / t.forward_ms);
  };
  const std::int64_t n = 1 << 22;
  qd::ndarray<float, 1> x(n, qd::needs_grad), y(n, qd::needs_grad);
  x.fill(0.5f);
  x.dual().fill(1.0f);
  row(
      "stencil (3-point)", "n = 2^22", [] { return stencil_kernel<float>("stencil"); }, [&](auto& k) { k(x, y); },
      [&](auto& k) { k.fwd(x, y); });
  {
    const std::int64_t m = 2048;
    qd::ndarray<float, 1> px(m, qd::needs_grad), py(m, qd::needs_grad), fx(m, qd::needs_grad), fy(m, qd::needs_grad);
    std::vector<float> hx, hy;
    for (std::int64_t i = 0; i < m; ++i) {
      hx.push_back(static_cast<float>(std::sin(0.1 * static_cast<double>(i))));
      hy.push_back(static_cast<float>(std::cos(0.37 * static_cast<double>(i))));
    }
    px.from_host(hx);
    py.from_host(hy);
    px.dual().fill(1.0f);
    py.dual().fill(0.5f);
    row(
        "N-body force loop", "n = 2048", [] { return nbody_kernel(); }, [&](auto& k) { k(px, py, fx, fy); },
        [&](auto& k) { k.fwd(px, py, fx, fy); });
  }
  qd::ndarray<float, 0> loss(qd::needs_grad), k0(qd::needs_grad);
  row(
      "reduction (sum)", "n = 2^22", [] { return reduction_kernel(); }, [&](auto& k) { k(x, loss); },
      [&](auto& k) { k.fwd(x, loss); });
  k0.fill(1.5f);
  k0.dual().fill(1.0f);
  row(
      "shared scalar (y=sin(x)k)", "n = 2^22", [] { return shared_scalar_kernel(); }, [&](auto& k) { k(x, k0, y); },
      [&](auto& k) { k.fwd(x, k0, y); });
}

// A serial loop carrying a variable nonlinearly (issue 27, item 4), f32: `threads`
// parallel iterations each run p = 0.5 p + 0.4 sin(p x[j]) + 0.1 x[j] for j < n. The
// adjoint restores p from value stacks (autodiff/adjoint-inl.hpp): its ratio to the
// forward should not grow with n up to 64^2 = 4096 (it grew like n before: each
// iteration's adjoint replayed the iterations before it).
void measure_carried_loop(int repeats) {
  qd::init({.arch = qd::arch::cpu});
  auto make = [] {
    return qd::kernel("carried_loop", [](g1<float> x, g1<float> c, g1<float> y) {
      qd::range_for(c.shape(0), [&](qd::i32 i) {
        qd::var<float> p = c[i];
        qd::range_for(x.shape(0), [&](qd::i32 j) { p = 0.5f * p + 0.4f * qd::sin(p * x[j]) + 0.1f * x[j]; });
        y[i] = p;
      });
    });
  };
  const std::int64_t threads = 256;
  std::printf("a serial loop carrying a qd::var, %lld parallel iterations of n serial ones (median of %d runs)\n",
              static_cast<long long>(threads), repeats);
  for (std::int64_t n : {16, 64, 256, 1024, 4096, 16384}) {
    qd::ndarray<float, 1> x(n, qd::needs_grad), c(threads, qd::needs_grad), y(threads, qd::needs_grad);
    x.fill(0.7f);
    c.fill(0.3f);
    const timing t = measure(
        make, [&](auto& k) { k(x, c, y); },
        [&](auto& k) {
          y.grad().fill(1.0f);
          k.grad(x, c, y);
        },
        repeats, {});
    std::printf("carried loop n = %6lld  forward %9.3f ms  adjoint %9.3f ms  ratio %5.2fx  (%.1f ns per iteration)\n",
                static_cast<long long>(n), t.forward_ms, t.adjoint_ms, t.adjoint_ms / t.forward_ms,
                1e6 * t.adjoint_ms / static_cast<double>(n * threads));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 7;
  if (argc > 2 && std::string(argv[2]) == "tape") {
    qd::init({.arch = qd::arch::cpu});
    measure_tapes(repeats, argc > 3 ? std::atoi(argv[3]) : 0);
    qd::reset();
    return 0;
  }
  if (argc > 2 && std::string(argv[2]) == "carry") {
    measure_carried_loop(repeats);
    qd::reset();
    return 0;
  }
  if (argc > 2 && std::string(argv[2]) == "fwd") {
    measure_forward_mode(repeats);
    qd::reset();
    return 0;
  }
  std::printf(
      "adjoint against forward on the CPU (median of %d runs; compile: median of 5 cold compiles, no offline cache)\n",
      repeats);
  {  // the first compile of a process also starts the compiler's caches: not part of either figure
    qd::init({.arch = qd::arch::cpu, .offline_cache = false});
    auto warm = qd::kernel("warm_up", [](g1<float> x, g1<float> y) {
      qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = qd::sin(x[i]); });
    });
    warm.compile();
    warm.grad.compile();
  }

  {
    const std::int64_t n = 1 << 22;
    auto make = [] { return stencil_kernel<float>("stencil"); };
    timing c;
    measure_compile(make, c);
    qd::ndarray<float, 1> x(n, qd::needs_grad), y(n, qd::needs_grad);
    x.fill(0.5f);
    y.grad().fill(1.0f);
    auto t = measure(
        make, [&](auto& k) { k(x, y); },
        [&](auto& k) {
          y.grad().fill(1.0f);  // the adjoint zeroes what it reads
          k.grad(x, y);
        },
        repeats, c);
    report("stencil (3-point)", "n = 2^22", t);
  }
  {
    const std::int64_t n = 2048;
    timing c;
    measure_compile([] { return nbody_kernel(); }, c);
    qd::ndarray<float, 1> px(n, qd::needs_grad), py(n, qd::needs_grad), fx(n, qd::needs_grad), fy(n, qd::needs_grad);
    std::vector<float> hx, hy;
    for (std::int64_t i = 0; i < n; ++i) {
      hx.push_back(static_cast<float>(std::sin(0.1 * static_cast<double>(i))));
      hy.push_back(static_cast<float>(std::cos(0.37 * static_cast<double>(i))));
    }
    auto t = measure([] { return nbody_kernel(); },
                     [&](auto& k) {
                       px.from_host(hx);
                       py.from_host(hy);
                       k(px, py, fx, fy);
                     },
                     [&](auto& k) {
                       fx.grad().fill(1.0f);
                       fy.grad().fill(1.0f);
                       k.grad(px, py, fx, fy);
                     },
                     repeats, c);
    report("N-body force loop", "n = 2048", t);
  }
  {
    const std::int64_t n = 1 << 22;
    timing c;
    measure_compile([] { return reduction_kernel(); }, c);
    qd::ndarray<float, 1> x(n, qd::needs_grad);
    qd::ndarray<float, 0> loss(qd::needs_grad);
    x.fill(0.5f);
    loss.grad().fill(1.0f);
    auto t = measure([] { return reduction_kernel(); }, [&](auto& k) { k(x, loss); }, [&](auto& k) { k.grad(x, loss); },
                     repeats, c);
    report("reduction (sum)", "n = 2^22", t);
  }
  measure_tapes(repeats);
  {
    const std::int64_t n = 1 << 22;
    timing c;
    measure_compile([] { return shared_scalar_kernel(); }, c);
    qd::ndarray<float, 1> x(n, qd::needs_grad), y(n, qd::needs_grad);
    qd::ndarray<float, 0> k(qd::needs_grad);
    x.fill(0.5f);
    k.fill(1.5f);
    auto t = measure([] { return shared_scalar_kernel(); }, [&](auto& kern) { kern(x, k, y); },
                     [&](auto& kern) {
                       y.grad().fill(1.0f);
                       kern.grad(x, k, y);
                     },
                     repeats, c);
    report("shared scalar (y=sin(x)k)", "n = 2^22", t);
  }
  std::printf(
      "gradient accuracy (stencil, n = 64, every coordinate against central differences): "
      "max relative error f64 %.2e, f32 %.2e\n",
      stencil_accuracy<double>(), stencil_accuracy<float>());
  measure_forward_mode(repeats);
  measure_carried_loop(repeats);
  qd::reset();
}
