// CPU backend benchmark: generated code against the same loops written by hand
// (compiled by the same compiler with the same flags, run on the same thread
// pool), host launch overhead, and compile times. Ratios are measured side by
// side, rounds interleaved, medians reported.
#include <quadrants/quadrants.hpp>

#include "bench_support.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <thread>
#include <cstring>
#include <string>
#include <vector>

#include "quadrants/backend/cpu/compiler.hpp"
#include "quadrants/backend/cpu/module.hpp"
#include "quadrants/backend/cpu/prelude.hpp"
#include "quadrants/runtime/pipeline/program.hpp"

namespace {

using namespace qd_bench;  // bench_support.hpp

// Hand-written task entry points with the generated code's ABI, so they launch
// through the same device and thread pool.
constexpr const char* hand_source = R"(
struct saxpy_frame { const qd_f32* x; qd_f32* y; qd_f32 a; };
static void saxpy_chunk(const void* fp, const qd_ctx*, qd_i64 lo, qd_i64 hi) {
  const saxpy_frame f = *(const saxpy_frame*)fp;
  for (qd_i64 i = lo; i < hi; ++i) f.y[i] = f.a * f.x[i] + f.y[i];
}
extern "C" __attribute__((visibility("default"))) void hand_saxpy(const qd_ctx* ctx) {
  saxpy_frame f{(const qd_f32*)ctx->arrays[0].data, (qd_f32*)ctx->arrays[1].data, *(const qd_f32*)ctx->scalars};
  ((const qd_cpu_runtime*)ctx->runtime)->parallel_for(ctx, 0, ctx->arrays[0].shape[0], &saxpy_chunk, &f);
}
struct stencil_frame { const qd_f32* u; qd_f32* out; qd_i64 w; };
static void stencil_chunk(const void* fp, const qd_ctx*, qd_i64 lo, qd_i64 hi) {
  const stencil_frame f = *(const stencil_frame*)fp;
  const qd_i64 w = f.w;
  for (qd_i64 r = lo; r < hi; ++r) {
    const qd_i64 i = r + 1;
    for (qd_i64 j = 1; j < w - 1; ++j)
      f.out[i * w + j] = 0.25f * (f.u[(i - 1) * w + j] + f.u[(i + 1) * w + j] + f.u[i * w + j - 1] + f.u[i * w + j + 1]);
  }
}
extern "C" __attribute__((visibility("default"))) void hand_stencil(const qd_ctx* ctx) {
  stencil_frame f{(const qd_f32*)ctx->arrays[0].data, (qd_f32*)ctx->arrays[1].data, ctx->arrays[0].shape[1]};
  ((const qd_cpu_runtime*)ctx->runtime)->parallel_for(ctx, 0, ctx->arrays[0].shape[0] - 2, &stencil_chunk, &f);
}
/* A plain C++ conversion: what generated code did before float-to-integer casts were
   defined for NaN and out-of-range values (undefined there); the floor of their cost. */
struct cast_frame { const qd_f32* x; qd_i32* y; };
static void cast_chunk(const void* fp, const qd_ctx*, qd_i64 lo, qd_i64 hi) {
  const cast_frame f = *(const cast_frame*)fp;
  for (qd_i64 i = lo; i < hi; ++i) f.y[i] = (qd_i32)f.x[i];
}
extern "C" __attribute__((visibility("default"))) void hand_cast(const qd_ctx* ctx) {
  cast_frame f{(const qd_f32*)ctx->arrays[0].data, (qd_i32*)ctx->arrays[1].data};
  ((const qd_cpu_runtime*)ctx->runtime)->parallel_for(ctx, 0, ctx->arrays[0].shape[0], &cast_chunk, &f);
}
)";

struct hand_code {
  std::unique_ptr<qd::backend::loaded_module> module;
  void* saxpy = nullptr;
  void* stencil = nullptr;
  void* cast = nullptr;
};

hand_code compile_hand_code(int opt_level) {
  auto& dev = qd::detail::current_program("bench").device();
  std::string source = qd::backend::cpu::translation_unit_prelude() + hand_source;
  (void)opt_level;
  auto binary = dev.compile(source, "hand-written benchmark code");
  hand_code h;
  h.module = dev.load(binary, "hand-written benchmark code");
  h.saxpy = h.module->entry("hand_saxpy");
  h.stencil = h.module->entry("hand_stencil");
  h.cast = h.module->entry("hand_cast");
  return h;
}

void launch_hand(void* entry, std::vector<qd::backend::array_abi> arrays, std::vector<std::uint64_t> scalars) {
  auto& dev = qd::detail::current_program("bench").device();
  std::int64_t error[5] = {};
  scalars.resize(arrays.size() + 1);
  qd::backend::launch_context ctx{arrays.data(), scalars.data(), arrays.size(), nullptr, 0, error};
  dev.launch(entry, true, ctx);
}

qd::backend::array_abi abi(const qd::ndarray<float, 1>& a) {
  return {a.storage().data(), nullptr, {a.shape(0), 0, 0, 0}};
}
qd::backend::array_abi abi(const qd::ndarray<float, 2>& a) {
  return {a.storage().data(), nullptr, {a.shape(0), a.shape(1), 0, 0}};
}

void compare_loops(int threads, int rounds) {
  qd::init({.arch = qd::arch::cpu, .offline_cache = false, .cpu_max_num_threads = threads});
  hand_code hand = compile_hand_code(2);

  const std::int64_t n = 16 << 20;
  qd::ndarray<float, 1> x(n), y(n);
  x.fill(1.5f);
  y.fill(0.25f);
  auto saxpy = qd::kernel("saxpy", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y, qd::f32 a) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = a * x[i] + y[i]; });
  });
  saxpy.compile();
  std::uint64_t a_bits = 0;
  float a = 0.5f;
  std::memcpy(&a_bits, &a, 4);

  const std::int64_t side = 4096;
  qd::ndarray<float, 2> u({side, side}), out({side, side});
  u.fill(1.0f);
  auto stencil = qd::kernel("stencil", [](qd::types::ndarray<float, 2> u, qd::types::ndarray<float, 2> out) {
    qd::range_for(qd::ndrange(u.shape(0) - 2, u.shape(1) - 2), [&](qd::i32 i, qd::i32 j) {
      out(i + 1, j + 1) = 0.25f * (u(i, j + 1) + u(i + 2, j + 1) + u(i + 1, j) + u(i + 1, j + 2));
    });
  });
  stencil.compile();

  // Values of every kind (in range, out of range, NaN) so that no branch is predictable.
  qd::ndarray<float, 1> floats(n);
  qd::ndarray<std::int32_t, 1> ints(n);
  {
    std::vector<float> mixed(static_cast<std::size_t>(n));
    const float kinds[] = {1.5f, -7.25f, 3e9f, -3e9f, __builtin_nanf(""), 12345.0f, -0.5f, 1e30f};
    for (std::size_t i = 0; i < mixed.size(); ++i) mixed[i] = kinds[(i * 2654435761u >> 7) % 8];
    floats.from_host(mixed);
  }
  auto cast = qd::kernel("cast", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 1> y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = qd::cast<std::int32_t>(x[i]); });
  });
  cast.compile();
  qd::backend::array_abi ints_abi{ints.storage().data(), nullptr, {n, 0, 0, 0}};

  std::vector<double> gs, hs, gt, ht, gc, hc;
  for (int r = 0; r < rounds + 1; ++r) {
    double g1 = seconds([&] { saxpy(x, y, a); });
    double h1 = seconds([&] { launch_hand(hand.saxpy, {abi(x), abi(y)}, {a_bits}); });
    double g2 = seconds([&] { stencil(u, out); });
    double h2 = seconds([&] { launch_hand(hand.stencil, {abi(u), abi(out)}, {}); });
    double g3 = seconds([&] { cast(floats, ints); });
    double h3 = seconds([&] { launch_hand(hand.cast, {abi(floats), ints_abi}, {}); });
    if (r == 0) continue;  // warm-up: first touch of pages
    gs.push_back(g1);
    hs.push_back(h1);
    gt.push_back(g2);
    ht.push_back(h2);
    gc.push_back(g3);
    hc.push_back(h3);
  }
  fmt::print("  {} thread{}: saxpy 16M   generated {:7.2f} ms  hand-written {:7.2f} ms  ratio {:.3f}\n", threads,
             threads == 1 ? " " : "s", median(gs) * 1e3, median(hs) * 1e3, median(gs) / median(hs));
  fmt::print("  {} thread{}: stencil 16M generated {:7.2f} ms  hand-written {:7.2f} ms  ratio {:.3f}\n", threads,
             threads == 1 ? " " : "s", median(gt) * 1e3, median(ht) * 1e3, median(gt) / median(ht));
  fmt::print("  {} thread{}: f32->i32 16M generated {:7.2f} ms  plain (int) cast {:7.2f} ms  ratio {:.3f}\n", threads,
             threads == 1 ? " " : "s", median(gc) * 1e3, median(hc) * 1e3, median(gc) / median(hc));
}

void launch_overhead() {
  qd::init({.arch = qd::arch::cpu, .offline_cache = false});
  auto tiny = qd::kernel(
      "tiny", [](qd::types::ndarray<float, 1> x) { qd::range_for(1, [&](qd::i32 i) { x[i] = x[i] + 1.0f; }); });
  qd::ndarray<float, 1> x(1);
  tiny(x);
  const int launches = 100000;
  std::vector<double> per;
  for (int r = 0; r < 5; ++r)
    per.push_back(seconds([&] {
                    for (int k = 0; k < launches; ++k) tiny(x);
                  }) /
                  launches);
  // The same work through a hand-written entry point called directly: the floor.
  auto& dev = qd::detail::current_program("bench").device();
  std::string source = qd::backend::cpu::translation_unit_prelude() + R"(
extern "C" __attribute__((visibility("default"))) void bare(const qd_ctx* ctx) { ((qd_f32*)ctx->arrays[0].data)[0] += 1.0f; }
)";
  auto module = dev.load(dev.compile(source, "bare"), "bare");
  auto bare = reinterpret_cast<void (*)(const void*)>(module->entry("bare"));
  qd::backend::array_abi arr = abi(x);
  struct {
    const qd::backend::array_abi* arrays;
    const std::uint64_t* scalars;
    unsigned char* temps;
    std::uint64_t rng;
    std::int64_t* error;
    const void* runtime;
  } ctx{&arr, nullptr, nullptr, 0, nullptr, nullptr};
  std::vector<double> floor;
  for (int r = 0; r < 5; ++r)
    floor.push_back(seconds([&] {
                      for (int k = 0; k < launches; ++k) bare(&ctx);
                    }) /
                    launches);
  fmt::print(
      "  tiny kernel, {} launches: {:.3f} us per launch; the bare function call: {:.3f} us; overhead {:.3f} us "
      "(target <= 2 us)\n",
      launches, median(per) * 1e6, median(floor) * 1e6, (median(per) - median(floor)) * 1e6);
  float expect = 1.0f + 10.0f * launches;
  float got = x.to_host()[0];
  if (got != expect) fmt::print("  WARNING: tiny kernel result {} != {}\n", got, expect);
}

// The second wave's parameters and results on the launch path: the same one-element
// update through a struct parameter, a vector parameter, a return value, a mesh and a
// graph kernel, against the plain kernel, all warm (docs/architecture.md).
struct tiny_view {
  qd::types::ndarray<float, 1> x;
  qd::f32 step;
};
struct tiny_host {
  const qd::ndarray<float, 1>& x;
  float step;
};

// One kind of launch: a label and the call.
struct launch_row {
  const char* what;
  std::function<void()> call;
};

// Times 100,000 launches of each row (each warmed up twice), five interleaved rounds,
// and prints the medians against the first row's.
void print_launch_rows(const std::vector<launch_row>& rows) {
  const int launches = 100000;
  std::vector<std::vector<double>> per(rows.size());
  for (const auto& r : rows) r.call(), r.call();
  for (int round = 0; round < 5; ++round)
    for (std::size_t k = 0; k < rows.size(); ++k) {
      const auto& call = rows[k].call;
      per[k].push_back(seconds([&] {
                         for (int l = 0; l < launches; ++l) call();
                       }) /
                       launches);
    }
  for (std::size_t k = 0; k < rows.size(); ++k)
    fmt::print("  {:30} {:.3f} us per launch ({:+.3f} us against the plain kernel)\n", rows[k].what,
               median(per[k]) * 1e6, (median(per[k]) - median(per[0])) * 1e6);
}

void second_wave_launches() {
  qd::init({.arch = qd::arch::cpu, .offline_cache = false});
  auto plain = qd::kernel("plain", [](qd::types::ndarray<float, 1> x, qd::f32 step) {
    qd::range_for(1, [&](qd::i32 i) { x[i] = x[i] + step; });
  });
  auto with_struct =
      qd::kernel("with_struct", [](tiny_view v) { qd::range_for(1, [&](qd::i32 i) { v.x[i] = v.x[i] + v.step; }); });
  auto with_vec = qd::kernel("with_vec", [](qd::types::ndarray<float, 1> x, qd::vec3f step) {
    qd::range_for(1, [&](qd::i32 i) { x[i] = x[i] + step.x(); });
  });
  auto with_return = qd::kernel("with_return", [](qd::types::ndarray<float, 1> x, qd::f32 step) -> qd::f32 {
    qd::range_for(1, [&](qd::i32 i) { x[i] = x[i] + step; });
    return x[0];
  });
  auto with_mesh = qd::kernel("with_mesh", [](qd::types::ndarray<float, 1> x, qd::types::mesh m) {
    qd::mesh_for(m.cells(), [&](qd::mesh_element c) { qd::if_(c.id() == 0, [&] { x[0] = x[0] + 1.0f; }); });
  });
  auto as_graph = qd::kernel("as_graph", qd::graph::on, [](qd::types::ndarray<float, 1> x, qd::f32 step) {
    qd::range_for(1, [&](qd::i32 i) { x[i] = x[i] + step; });
  });
  qd::ndarray<float, 1> x(1);
  qd::mesh m = qd::mesh::tetrahedral(4, {{0, 1, 2, 3}});
  const std::array<float, 3> v{1.0f, 0.0f, 0.0f};
  float sink = 0.0f;
  print_launch_rows({{"plain (array, scalar)", [&] { plain(x, 1.0f); }},
                     {"struct parameter",
                      [&] {
                        with_struct(tiny_host{x, 1.0f});
                      }},
                     {"qd::vec3f parameter", [&] { with_vec(x, v); }},
                     {"returns a qd::f32", [&] { sink += with_return(x, 1.0f); }},
                     {"qd::mesh parameter (one tet)", [&] { with_mesh(x, m); }},
                     {"graph kernel (qd::graph::on)", [&] { as_graph(x, 1.0f); }}});
  if (sink == 0.0f) fmt::print("  WARNING: the returning kernel returned nothing\n");
  qd::reset();
}

// The third wave on the launch path: a kernel specialised per value (one template
// argument; the same value, then two values alternating) and an array of structs,
// against the plain kernel, all warm.
struct tiny_k {
  qd::f32 x;
  qd::vec2f v;
};
struct tiny_h {
  float x;
  std::array<float, 2> v;
};

void third_wave_launches() {
  qd::init({.arch = qd::arch::cpu, .offline_cache = false});
  auto plain = qd::kernel("plain", [](qd::types::ndarray<float, 1> x, qd::f32 step) {
    qd::range_for(1, [&](qd::i32 i) { x[i] = x[i] + step; });
  });
  auto templated =
      qd::kernel("templated", [](qd::types::template_arg<int> k, qd::types::ndarray<float, 1> x, qd::f32 step) {
        qd::range_for(1, [&](qd::i32 i) { x[i] = x[i] + step * static_cast<float>(k); });
      });
  auto of_structs = qd::kernel("of_structs", [](qd::types::ndarray<tiny_k, 1> p, qd::f32 step) {
    qd::range_for(1, [&](qd::i32 i) { p[i].x = p[i].x + step; });
  });
  qd::ndarray<float, 1> x(1);
  qd::ndarray<tiny_h, 1> p(1);
  int flip = 0;
  print_launch_rows({{"plain (array, scalar)", [&] { plain(x, 1.0f); }},
                     {"one template argument", [&] { templated(1, x, 1.0f); }},
                     {"template argument, 2 values", [&] { templated(1 + (flip ^= 1), x, 1.0f); }},
                     {"array of structs (2 members)", [&] { of_structs(p, 1.0f); }}});
  qd::reset();
}

// A short-circuit guard (`i < m && x[i] > 0`, the load of x[i] skipped past m) against
// the same guard written as a qd::var and a qd::if_, over 16M elements.
void short_circuit_cost(int threads, int rounds) {
  qd::init({.arch = qd::arch::cpu, .offline_cache = false, .cpu_max_num_threads = threads});
  auto with_and =
      qd::kernel("with_and", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out, qd::i32 m) {
        qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = qd::select(i < m && x[i] > 0.0f, 1.0f, 0.0f); });
      });
  auto with_if = qd::kernel("with_if", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out, qd::i32 m) {
    qd::range_for(out.shape(0), [&](qd::i32 i) {
      qd::var<bool> ok = i < m;
      qd::if_(ok, [&] { ok = x[i] > 0.0f; });
      out[i] = qd::select(ok, 1.0f, 0.0f);
    });
  });
  const std::int64_t n = 1 << 24;
  qd::ndarray<float, 1> x(n), out(n);
  x.fill(1.0f);
  const std::int32_t m = static_cast<std::int32_t>(n / 2);
  with_and(x, out, m);
  with_if(x, out, m);
  std::vector<double> ta, ti;
  for (int r = 0; r < rounds; ++r) {
    ta.push_back(seconds([&] { with_and(x, out, m); }));
    ti.push_back(seconds([&] { with_if(x, out, m); }));
  }
  fmt::print("  {} thread{}: i < m && x[i] > 0, 16M  && {:7.2f} ms  qd::var + qd::if_ {:7.2f} ms  ratio {:.3f}\n",
             threads, threads == 1 ? " " : "s", median(ta) * 1e3, median(ti) * 1e3, median(ta) / median(ti));
  qd::reset();
}

// A fresh offline cache directory for a split benchmark ("" and a warning if none).
std::string temporary_cache(const char* what) {
  char dir_template[] = "/tmp/qd-cpu-bench-XXXXXX";
  const char* dir = ::mkdtemp(dir_template);
  if (dir == nullptr) fmt::print("  WARNING: no temporary cache directory; {} not measured\n", what);
  return dir == nullptr ? std::string() : std::string(dir);
}

// A split kernel's launch: the run-time disjointness check of its recorded pairs
// plus the dispatch of its tasks, against the same kernel whole (its two tasks and
// global temporaries) and against two bare calls doing the same work.
void split_launch() {
  const std::string dir = temporary_cache("split launch");
  if (dir.empty()) return;
  const int launches = 100000;
  double per[2] = {0, 0};
  std::size_t pairs_checked = 0;
  for (int split = 0; split < 2; ++split) {
    qd::init({.arch = qd::arch::cpu,
              .offline_cache_file_path = dir,
              .per_offload = split ? qd::per_offload_mode::on : qd::per_offload_mode::off});
    // first = a[0] is recomputed by the second task; b and c are written after it
    // is read, so the split checks two pairs, (a, b) and (a, c), at every launch.
    auto k =
        qd::kernel("split_pairs", {"a", "b", "c"},
                   [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> b, qd::types::ndarray<float, 1> c) {
                     qd::f32 first = a[0];
                     qd::range_for(1, [&](qd::i32 i) { b[i] = b[i] + 1.0f; });
                     qd::range_for(1, [&](qd::i32 i) { c[i] = first; });
                   });
    qd::ndarray<float, 1> a(1), b(1), c(1);
    k(a, b, c);
    auto o = k.per_offload_cache_observations();
    if (split && (o.frontend_constructs_total != 2 || o.runtime_fallbacks != 0))
      fmt::print("  WARNING: the kernel did not split ({} constructs)\n", o.frontend_constructs_total);
    pairs_checked = split ? 2 : 0;
    std::vector<double> t;
    for (int r = 0; r < 5; ++r)
      t.push_back(seconds([&] {
                    for (int l = 0; l < launches; ++l) k(a, b, c);
                  }) /
                  launches);
    per[split] = median(t);
  }
  ::system(fmt::format("rm -rf '{}'", dir).c_str());
  fmt::print(
      "  two-construct kernel, {} launches: split {:.3f} us per launch ({} pairs checked), whole {:.3f} us; "
      "split minus whole {:+.0f} ns\n",
      launches, per[1] * 1e6, pairs_checked, per[0] * 1e6, (per[1] - per[0]) * 1e9);
}

// The persisted buffer's cost per launch (issue 15): a split kernel handing a reduction
// to a later loop through the buffer (a serial task initialising it, the reducing loop,
// the reading loop) against a split kernel of the same three tasks handing the same
// value through an array element instead (no buffer, so no turn to take).
void persisted_launch() {
  const std::string dir = temporary_cache("persisted launch");
  if (dir.empty()) return;
  const int launches = 100000;
  qd::init({.arch = qd::arch::cpu, .offline_cache_file_path = dir, .per_offload = qd::per_offload_mode::on});
  auto with_buffer =
      qd::kernel("with_buffer", {"a", "b", "c"},
                 [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> b, qd::types::ndarray<float, 1> c) {
                   qd::var<float> total = 0.0f;
                   qd::range_for(1, [&](qd::i32 i) { total += a[i]; });
                   qd::range_for(1, [&](qd::i32 i) { c[i] = total + b[i]; });
                 });
  auto without =
      qd::kernel("without_buffer", {"a", "b", "c"},
                 [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> b, qd::types::ndarray<float, 1> c) {
                   b[0] = 0.0f;  // a serial construct
                   qd::range_for(1, [&](qd::i32 i) { b[0] += a[i]; });
                   qd::range_for(1, [&](qd::i32 i) { c[i] = b[0]; });
                 });
  qd::ndarray<float, 1> a(1), b(1), c(1);
  with_buffer(a, b, c);
  without(a, b, c);
  if (with_buffer.per_offload_cache_observations().frontend_constructs_total != 3 ||
      without.per_offload_cache_observations().frontend_constructs_total != 3)
    fmt::print("  WARNING: the kernels did not split into three tasks each\n");
  std::vector<double> t_with, t_without;
  for (int r = 0; r < 9; ++r) {
    t_with.push_back(seconds([&] {
                       for (int l = 0; l < launches; ++l) with_buffer(a, b, c);
                     }) /
                     launches);
    t_without.push_back(seconds([&] {
                          for (int l = 0; l < launches; ++l) without(a, b, c);
                        }) /
                        launches);
  }
  qd::reset();
  ::system(fmt::format("rm -rf '{}'", dir).c_str());
  fmt::print(
      "  three-task split kernel, {} launches: with a persisted value {:.3f} us per launch, without {:.3f} us; "
      "difference {:+.0f} ns (target <= +50 ns)\n",
      launches, median(t_with) * 1e6, median(t_without) * 1e6, (median(t_with) - median(t_without)) * 1e9);
}

void compile_times() {
  std::vector<double> times;
  for (int r = 0; r < 5; ++r) {
    qd::init({.arch = qd::arch::cpu, .offline_cache = false});
    auto k = make_kernel("sixteen", 16, 0);  // 16 constructs of ~30 operations
    times.push_back(seconds([&] { k.compile(); }));
  }
  fmt::print("  16-construct kernel (whole, one translation unit): compile {:.1f} ms (median of 5)\n",
             median(times) * 1e3);
  // A user translation unit with five kernels, as the build compiles it, in each way
  // of building (docs/architecture.md), and the implementation TU quadrants::header-only adds.
  struct tu {
    const char* flags;
    const char* file;
    const char* what;
  };
  for (const tu& c :
       {tu{"-DQD_SEPARATE_COMPILATION", QD_BENCH_USER_TU,
           "user TU with 5 kernels, quadrants::quadrants or quadrants::header-only"},
        tu{"", QD_BENCH_IMPLEMENTATION_TU, "implementation TU of quadrants::header-only, once per target"},
        tu{"", QD_BENCH_USER_TU, "user TU with 5 kernels, all inline (g++ main.cpp)"}}) {
    std::vector<double> t;
    for (int r = 0; r < 3; ++r) {
      std::string cmd =
          fmt::format("{} -std=c++20 -O2 {} -I{} -c {} -o /dev/null", QD_BENCH_CXX, c.flags, QD_BENCH_INCLUDE, c.file);
      t.push_back(seconds([&] {
        if (std::system(cmd.c_str()) != 0) fmt::print("  WARNING: '{}' failed\n", cmd);
      }));
    }
    fmt::print("  {}: {:.2f} s to compile at -O2\n", c.what, median(t));
  }
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 9;
  fmt::print("Quadrants CPU benchmark ({} hardware threads; medians of {} interleaved rounds)\n",
             std::thread::hardware_concurrency(), rounds);
  // `cpu_bench N launch`: launch overheads only; `cpu_bench N third`: the third wave's figures only.
  const std::string mode = argc > 2 ? argv[2] : "";
  if (mode.empty()) {
    fmt::print("Generated code vs the same loop by hand, same compiler and flags, same thread pool:\n");
    compare_loops(1, rounds);
    compare_loops(static_cast<int>(std::thread::hardware_concurrency()), rounds);
  }
  if (mode != "launch") {
    fmt::print("Short-circuit && against the equivalent qd::if_:\n");
    short_circuit_cost(1, rounds);
    short_circuit_cost(static_cast<int>(std::thread::hardware_concurrency()), rounds);
  }
  fmt::print("Host launch overhead (in-memory cache hit):\n");
  launch_overhead();
  if (mode != "third") {
    split_launch();
    persisted_launch();
    second_wave_launches();
  }
  third_wave_launches();
  if (!mode.empty()) return 0;
  fmt::print("Compile times:\n");
  compile_times();
  return 0;
}
