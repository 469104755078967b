// Vectors and atomic demotion on the CPU backend (issue 11): an N-body step over
// qd::vec3f against the same step written by hand with a small vector struct
// (compiled by the same compiler with the same flags, run on the same thread pool);
// `y[i] += a * x[i]` (demoted) against `y[i] = y[i] + a * x[i]` and against an
// explicit atomic; a scatter that stays atomic against a hand-written atomic loop.
// Ratios side by side, rounds interleaved, medians reported.
#include <quadrants/quadrants.hpp>

#include "bench_support.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "quadrants/backend/cpu/prelude.hpp"
#include "quadrants/runtime/pipeline/program.hpp"

namespace {

using namespace qd_bench;  // bench_support.hpp

// Hand-written task entry points with the generated code's ABI.
constexpr const char* hand_source = R"(
struct v3 { qd_f32 x, y, z; };
static inline v3 operator+(v3 a, v3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
static inline v3 operator-(v3 a, v3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
static inline v3 operator*(v3 a, qd_f32 s) { return {a.x * s, a.y * s, a.z * s}; }
static inline qd_f32 dot(v3 a, v3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }

struct nbody_frame { const v3* pos; v3* vel; const qd_f32* mass; qd_i64 n; qd_f32 dt, eps; };
static void nbody_chunk(const void* fp, const qd_ctx*, qd_i64 lo, qd_i64 hi) {
  const nbody_frame f = *(const nbody_frame*)fp;
  for (qd_i64 i = lo; i < hi; ++i) {
    const v3 pi = f.pos[i];
    v3 acc{0.0f, 0.0f, 0.0f};
    for (qd_i64 j = 0; j < f.n; ++j) {
      const v3 d = f.pos[j] - pi;
      const qd_f32 r2 = dot(d, d) + f.eps;
      const qd_f32 inv = 1.0f / (r2 * __builtin_sqrtf(r2));
      acc = acc + d * (f.mass[j] * inv);
    }
    f.vel[i] = f.vel[i] + acc * f.dt;
  }
}
extern "C" __attribute__((visibility("default"))) void hand_nbody(const qd_ctx* ctx) {
  nbody_frame f{(const v3*)ctx->arrays[0].data, (v3*)ctx->arrays[1].data, (const qd_f32*)ctx->arrays[2].data,
                ctx->arrays[0].shape[0], *(const qd_f32*)(ctx->scalars + 3), *(const qd_f32*)(ctx->scalars + 4)};
  ((const qd_cpu_runtime*)ctx->runtime)->parallel_for(ctx, 0, f.n, &nbody_chunk, &f);
}

static inline qd_f32 norm3(v3 a) { return __builtin_sqrtf(dot(a, a)); }
static inline void atomic_add3(v3* p, v3 v) {  /* what std::atomic_ref<float>::fetch_add does, per component */
  qd_u32* c = (qd_u32*)&p->x;
  const qd_f32 d[3] = {v.x, v.y, v.z};
  for (int k = 0; k < 3; ++k) {
    qd_u32 o = __atomic_load_n(&c[k], __ATOMIC_RELAXED), n;
    qd_f32 f;
    do {
      __builtin_memcpy(&f, &o, 4);
      f += d[k];
      __builtin_memcpy(&n, &f, 4);
    } while (!__atomic_compare_exchange_n(&c[k], &o, n, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  }
}
struct springs_frame { const v3* pos; v3* force; const qd_i32* edges; qd_f32 k, rest; };
static void springs_chunk(const void* fp, const qd_ctx*, qd_i64 lo, qd_i64 hi) {
  const springs_frame f = *(const springs_frame*)fp;
  for (qd_i64 e = lo; e < hi; ++e) {
    const qd_i32 a = f.edges[2 * e], b = f.edges[2 * e + 1];
    const v3 d = f.pos[b] - f.pos[a];
    const qd_f32 len = norm3(d);
    const v3 force = d * (f.k * (len - f.rest) / len);
    atomic_add3(&f.force[a], force);
    atomic_add3(&f.force[b], force * -1.0f);
  }
}
struct integrate_frame { v3* pos; v3* vel; v3* force; qd_f32 dt; };
static void integrate_chunk(const void* fp, const qd_ctx*, qd_i64 lo, qd_i64 hi) {
  const integrate_frame f = *(const integrate_frame*)fp;
  for (qd_i64 i = lo; i < hi; ++i) {
    f.vel[i] = f.vel[i] + f.force[i] * f.dt;
    f.pos[i] = f.pos[i] + f.vel[i] * f.dt;
    f.force[i] = v3{0.0f, 0.0f, 0.0f};
  }
}
extern "C" __attribute__((visibility("default"))) void hand_mass_spring(const qd_ctx* ctx) {
  const qd_cpu_runtime* rt = (const qd_cpu_runtime*)ctx->runtime;
  springs_frame s{(const v3*)ctx->arrays[0].data, (v3*)ctx->arrays[2].data, (const qd_i32*)ctx->arrays[3].data,
                  *(const qd_f32*)(ctx->scalars + 4), *(const qd_f32*)(ctx->scalars + 5)};
  rt->parallel_for(ctx, 0, ctx->arrays[3].shape[0], &springs_chunk, &s);
  integrate_frame g{(v3*)ctx->arrays[0].data, (v3*)ctx->arrays[1].data, (v3*)ctx->arrays[2].data,
                    *(const qd_f32*)(ctx->scalars + 6)};
  rt->parallel_for(ctx, 0, ctx->arrays[0].shape[0], &integrate_chunk, &g);
}

/* A histogram with one atomic increment per element: what std::atomic_ref<int>::fetch_add compiles to. */
struct scatter_frame { const qd_i32* idx; qd_i32* h; };
static void scatter_chunk(const void* fp, const qd_ctx*, qd_i64 lo, qd_i64 hi) {
  const scatter_frame f = *(const scatter_frame*)fp;
  for (qd_i64 i = lo; i < hi; ++i) __atomic_fetch_add(&f.h[f.idx[i]], 1, __ATOMIC_RELAXED);
}
extern "C" __attribute__((visibility("default"))) void hand_scatter(const qd_ctx* ctx) {
  scatter_frame f{(const qd_i32*)ctx->arrays[0].data, (qd_i32*)ctx->arrays[1].data};
  ((const qd_cpu_runtime*)ctx->runtime)->parallel_for(ctx, 0, ctx->arrays[0].shape[0], &scatter_chunk, &f);
}
)";

struct hand_code {
  std::unique_ptr<qd::backend::loaded_module> module;
  void* nbody = nullptr;
  void* scatter = nullptr;
  void* mass_spring = nullptr;
};

hand_code compile_hand_code() {
  auto& dev = qd::detail::current_program("bench").device();
  std::string source = qd::backend::cpu::translation_unit_prelude() + hand_source;
  auto binary = dev.compile(source, "hand-written benchmark code");
  hand_code h;
  h.module = dev.load(binary, "hand-written benchmark code");
  h.nbody = h.module->entry("hand_nbody");
  h.scatter = h.module->entry("hand_scatter");
  h.mass_spring = h.module->entry("hand_mass_spring");
  return h;
}

void launch_hand(void* entry, std::vector<qd::backend::array_abi> arrays, std::vector<std::uint64_t> scalars) {
  auto& dev = qd::detail::current_program("bench").device();
  std::int64_t error[5] = {};
  qd::backend::launch_context ctx{arrays.data(), scalars.data(), arrays.size(), nullptr, 0, error};
  dev.launch(entry, true, ctx);
}

template <class A>
qd::backend::array_abi abi(const A& a) {
  qd::backend::array_abi out{a.storage().data(), nullptr, {0, 0, 0, 0}};
  if constexpr (requires { a.storage_shape(); }) {
    auto s = a.storage_shape();
    for (std::size_t d = 0; d < s.size(); ++d) out.shape[d] = s[d];
  } else {
    for (int d = 0; d < A::ndim; ++d) out.shape[d] = a.shape(d);
  }
  return out;
}

std::uint64_t bits(float v) {
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof v);
  return b;
}

const char* plural(int threads) { return threads == 1 ? " " : "s"; }

void compare_nbody(int threads, int rounds) {
  qd::init({.arch = qd::arch::cpu, .offline_cache = false, .cpu_max_num_threads = threads});
  hand_code hand = compile_hand_code();
  const int n = 4096;
  auto step = qd::kernel("nbody", [](qd::types::ndarray<qd::vec3f, 1> pos, qd::types::ndarray<qd::vec3f, 1> vel,
                                     qd::types::ndarray<float, 1> mass, qd::f32 dt, qd::f32 eps) {
    qd::range_for(pos.shape(0), [&](qd::i32 i) {
      qd::vec3f pi = pos[i];
      qd::var<qd::vec3f> acc = qd::vec3f(0.0f);
      qd::range_for(pos.shape(0), [&](qd::i32 j) {
        qd::vec3f d = pos[j] - pi;
        qd::f32 r2 = qd::dot(d, d) + eps;
        qd::f32 inv = 1.0f / (r2 * qd::sqrt(r2));
        acc += d * (mass[j] * inv);
      });
      vel[i] += acc * dt;  // demoted: each body owns its velocity
    });
  });
  step.compile();
  std::vector<std::array<float, 3>> hp(n), hv(n, {0.0f, 0.0f, 0.0f});
  std::vector<float> hm(n);
  for (int i = 0; i < n; ++i) {
    auto f = static_cast<float>(i);
    hp[static_cast<std::size_t>(i)] = {std::sin(f) * 10.0f, std::cos(f * 0.7f) * 10.0f, f * 0.01f};
    hm[static_cast<std::size_t>(i)] = 1.0f + static_cast<float>(i % 7) * 0.1f;
  }
  qd::ndarray<qd::vec3f, 1> pos(n), vel(n), hand_vel(n);
  qd::ndarray<float, 1> mass(n);
  pos.from_host(hp);
  vel.from_host(hv);
  hand_vel.from_host(hv);
  mass.from_host(hm);
  const float dt = 0.001f, eps = 0.01f;
  std::vector<double> g, h;
  for (int r = 0; r < rounds + 1; ++r) {
    double tg = seconds([&] { step(pos, vel, mass, dt, eps); });
    double th = seconds([&] {
      launch_hand(hand.nbody, {abi(pos), abi(hand_vel), abi(mass), {}, {}}, {0, 0, 0, bits(dt), bits(eps)});
    });
    if (r == 0) continue;
    g.push_back(tg);
    h.push_back(th);
  }
  // Both advanced the same velocities the same number of times: compare them.
  auto a = vel.to_host(), b = hand_vel.to_host();
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t c = 0; c < 3; ++c)
      worst = std::max(worst, static_cast<double>(std::abs(a[i][c] - b[i][c])) / (1e-6 + std::abs(b[i][c])));
  fmt::print(
      "  {} thread{}: N-body step, 4096 bodies  qd::vec3f {:7.2f} ms  hand-written struct {:7.2f} ms  ratio {:.3f}"
      "  (largest relative difference {:.1e})\n",
      threads, plural(threads), median(g) * 1e3, median(h) * 1e3, median(g) / median(h), worst);
}

// A cloth of side x side particles with structural springs: spring forces scattered
// into both ends (computed indices: atomic), then each particle integrated (demoted).
void compare_mass_spring(int threads, int rounds) {
  qd::init({.arch = qd::arch::cpu, .offline_cache = false, .cpu_max_num_threads = threads});
  hand_code hand = compile_hand_code();
  const int side = 256, n = side * side;
  auto step =
      qd::kernel("mass_spring", [](qd::types::ndarray<qd::vec3f, 1> pos, qd::types::ndarray<qd::vec3f, 1> vel,
                                   qd::types::ndarray<qd::vec3f, 1> force, qd::types::ndarray<qd::vec2i, 1> edges,
                                   qd::f32 k, qd::f32 rest, qd::f32 dt) {
        qd::range_for(edges.shape(0), [&](qd::i32 e) {
          qd::vec2i ab = edges[e];
          qd::vec3f d = pos[ab.y()] - pos[ab.x()];
          qd::f32 len = qd::norm(d);
          qd::vec3f f = d * (k * (len - rest) / len);
          force[ab.x()] += f;  // computed index: atomic
          force[ab.y()] += f * -1.0f;
        });
        qd::range_for(pos.shape(0), [&](qd::i32 i) {
          vel[i] += force[i] * dt;  // demoted
          pos[i] += vel[i] * dt;
          force[i] = qd::vec3f(0.0f);
        });
      });
  step.compile();
  std::vector<std::array<float, 3>> hp(static_cast<std::size_t>(n)), zero(static_cast<std::size_t>(n), {0, 0, 0});
  std::vector<std::array<std::int32_t, 2>> he;
  for (int r = 0; r < side; ++r)
    for (int c = 0; c < side; ++c) {
      const int i = r * side + c;
      hp[static_cast<std::size_t>(i)] = {static_cast<float>(c) * 0.011f, static_cast<float>(r) * 0.009f,
                                         0.001f * static_cast<float>((i * 7) % 13)};
      if (c + 1 < side) he.push_back({i, i + 1});
      if (r + 1 < side) he.push_back({i, i + side});
    }
  qd::ndarray<qd::vec3f, 1> pos(n), vel(n), force(n), hpos(n), hvel(n), hforce(n);
  qd::ndarray<qd::vec2i, 1> edges(static_cast<std::int64_t>(he.size()));
  for (auto* a : {&pos, &hpos}) a->from_host(hp);
  for (auto* a : {&vel, &force, &hvel, &hforce}) a->from_host(zero);
  edges.from_host(he);
  const float k = 50.0f, rest = 0.01f, dt = 0.0005f;
  std::vector<double> g, h;
  for (int r = 0; r < rounds + 1; ++r) {
    double tg = seconds([&] { step(pos, vel, force, edges, k, rest, dt); });
    double th = seconds([&] {
      launch_hand(hand.mass_spring, {abi(hpos), abi(hvel), abi(hforce), abi(edges), {}, {}, {}},
                  {0, 0, 0, 0, bits(k), bits(rest), bits(dt)});
    });
    if (r == 0) continue;
    g.push_back(tg);
    h.push_back(th);
  }
  auto a = pos.to_host(), b = hpos.to_host();
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t c = 0; c < 3; ++c) worst = std::max(worst, static_cast<double>(std::abs(a[i][c] - b[i][c])));
  fmt::print(
      "  {} thread{}: mass-spring step, {} particles, {} springs  qd::vec3f {:7.2f} ms  hand-written struct "
      "{:7.2f} ms  ratio {:.3f}  (largest position difference {:.1e})\n",
      threads, plural(threads), n, he.size(), median(g) * 1e3, median(h) * 1e3, median(g) / median(h), worst);
}

void compare_updates(int threads, int rounds) {
  qd::init({.arch = qd::arch::cpu, .offline_cache = false, .cpu_max_num_threads = threads});
  hand_code hand = compile_hand_code();
  const std::int64_t n = 16 << 20;
  qd::ndarray<float, 1> x(n), y(n);
  x.fill(1.5f);
  y.fill(0.25f);
  using arr = qd::types::ndarray<float, 1>;
  auto demoted = qd::kernel("axpy_update", [](arr xs, arr ys, qd::f32 a) {
    qd::range_for(xs.shape(0), [&](qd::i32 i) { ys[i] += a * xs[i]; });
  });
  auto plain = qd::kernel("axpy_assign", [](arr xs, arr ys, qd::f32 a) {
    qd::range_for(xs.shape(0), [&](qd::i32 i) { ys[i] = ys[i] + a * xs[i]; });
  });
  auto atomic = qd::kernel("axpy_atomic", [](arr xs, arr ys, qd::f32 a) {
    qd::range_for(xs.shape(0), [&](qd::i32 i) { qd::atomic_add(ys[i], a * xs[i]); });
  });
  demoted.compile();
  plain.compile();
  atomic.compile();
  const std::int64_t bins = 1024;
  qd::ndarray<std::int32_t, 1> idx(n), hist(bins), hand_hist(bins);
  {
    std::vector<std::int32_t> h(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<std::int32_t>((i * 2654435761u >> 7) % bins);
    idx.from_host(h);
  }
  auto scatter =
      qd::kernel("scatter", [](qd::types::ndarray<std::int32_t, 1> is, qd::types::ndarray<std::int32_t, 1> hs) {
        qd::range_for(is.shape(0), [&](qd::i32 i) { hs[is[i]] += 1; });  // computed index: stays atomic
      });
  scatter.compile();
  std::vector<double> d, p, at, sg, sh;
  for (int r = 0; r < rounds + 1; ++r) {
    // Alternate which of the pair runs first: the first after the scatter finds colder caches.
    double t1 = 0, t2 = 0;
    if (r % 2) {
      t2 = seconds([&] { plain(x, y, 0.5f); });
      t1 = seconds([&] { demoted(x, y, 0.5f); });
    } else {
      t1 = seconds([&] { demoted(x, y, 0.5f); });
      t2 = seconds([&] { plain(x, y, 0.5f); });
    }
    double t3 = seconds([&] { atomic(x, y, 0.5f); });
    double t4 = seconds([&] { scatter(idx, hist); });
    double t5 = seconds([&] { launch_hand(hand.scatter, {abi(idx), abi(hand_hist)}, {0, 0}); });
    if (r == 0) continue;
    d.push_back(t1);
    p.push_back(t2);
    at.push_back(t3);
    sg.push_back(t4);
    sh.push_back(t5);
  }
  bool same = hist.to_host() == hand_hist.to_host();
  fmt::print(
      "  {} thread{}: y[i] += a*x[i] (demoted) {:7.2f} ms  y[i] = y[i] + a*x[i] {:7.2f} ms  ratio {:.3f}"
      "  (qd::atomic_add: {:7.2f} ms, ratio {:.2f})\n",
      threads, plural(threads), median(d) * 1e3, median(p) * 1e3, median(d) / median(p), median(at) * 1e3,
      median(at) / median(p));
  fmt::print(
      "  {} thread{}: scatter h[idx[i]] += 1 (atomic) {:7.2f} ms  hand-written __atomic_fetch_add {:7.2f} ms  "
      "ratio {:.3f}  (histograms {})\n",
      threads, plural(threads), median(sg) * 1e3, median(sh) * 1e3, median(sg) / median(sh), same ? "equal" : "DIFFER");
}

// Trace plus analysis (DCE, demotion, the construct analysis) of a kernel with 100
// chained qd::mat3f products: kernel.ir() traces on first use.
void trace_time(int rounds) {
  qd::init({.arch = qd::arch::cpu, .offline_cache = false});
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) {
    auto k = qd::kernel("products", [](qd::types::ndarray<qd::mat3f, 1> m, qd::types::ndarray<qd::mat3f, 1> out) {
      qd::range_for(m.shape(0), [&](qd::i32 i) {
        qd::mat3f a = m[i];
        qd::mat3f p = qd::mat3f::identity();
        for (int k2 = 0; k2 < 100; ++k2) p = p * a;
        out[i] = p;
      });
    });
    t.push_back(seconds([&] { (void)k.ir(); }));
  }
  fmt::print("  trace + analysis of a kernel with 100 qd::mat3f products: {:.2f} ms\n", median(t) * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const int all = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  qd::set_log_sink([](qd::log_level, std::string_view) {});
  fmt::print("N-body with qd::vec3f vs a hand-written vector struct, same compiler and flags, same thread pool:\n");
  for (int threads : {1, all}) compare_nbody(threads, rounds);
  for (int threads : {1, all}) compare_mass_spring(threads, rounds);
  fmt::print("Atomic demotion, 16M f32 (and a 16M-element scatter into 1024 bins):\n");
  for (int threads : {1, all}) compare_updates(threads, rounds);
  fmt::print("Tracing:\n");
  trace_time(rounds);
  qd::reset();
}
