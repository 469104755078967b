// Math and atomics benchmark: each new math function in a generated CPU kernel against
// the same std:: call in a hand-written loop (same compiler and flags, same thread pool,
// rounds interleaved, medians), and an atomic_cas-loop counter against
// std::atomic<int>::compare_exchange_weak in plain C++. Prints the ratios side by side.
#include <quadrants/quadrants.hpp>

#include "bench_support.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "quadrants/backend/cpu/prelude.hpp"
#include "quadrants/runtime/pipeline/program.hpp"

namespace {

using namespace qd_bench;  // bench_support.hpp

// y[i] = F(x[i]) and friends, written by hand with <cmath>, <bit> and <atomic>, with the
// generated code's ABI so that they launch through the same device and thread pool.
constexpr const char* hand_source = R"(
#include <atomic>
#include <cmath>
struct qd_hand_frame { const qd_f32* x; const qd_f32* z; qd_f32* y; const qd_u32* u; qd_i32* iy; };
#define QD_HAND_LOOP(NAME, BODY)                                                                      \
  static void NAME##_chunk(const void* fp, const qd_ctx*, qd_i64 lo, qd_i64 hi) {                    \
    const qd_hand_frame f = *(const qd_hand_frame*)fp;                                                \
    for (qd_i64 i = lo; i < hi; ++i) { BODY; }                                                        \
  }                                                                                                   \
  extern "C" __attribute__((visibility("default"))) void NAME(const qd_ctx* ctx) {                   \
    qd_hand_frame f{(const qd_f32*)ctx->arrays[0].data, (const qd_f32*)ctx->arrays[1].data,           \
                    (qd_f32*)ctx->arrays[2].data, (const qd_u32*)ctx->arrays[3].data,                 \
                    (qd_i32*)ctx->arrays[4].data};                                                    \
    ((const qd_cpu_runtime*)ctx->runtime)->parallel_for(ctx, 0, ctx->arrays[0].shape[0], &NAME##_chunk, &f); \
  }
QD_HAND_LOOP(hand_tan, f.y[i] = std::tan(f.x[i]))
QD_HAND_LOOP(hand_asin, f.y[i] = std::asin(f.z[i]))
QD_HAND_LOOP(hand_acos, f.y[i] = std::acos(f.z[i]))
QD_HAND_LOOP(hand_atan2, f.y[i] = std::atan2(f.x[i], f.z[i]))
QD_HAND_LOOP(hand_rsqrt, f.y[i] = 1.0f / std::sqrt(std::fabs(f.x[i])))
QD_HAND_LOOP(hand_log2, f.y[i] = std::log2(std::fabs(f.x[i])))
QD_HAND_LOOP(hand_exp2, f.y[i] = std::exp2(f.z[i]))
QD_HAND_LOOP(hand_round, f.y[i] = std::round(f.x[i]))
QD_HAND_LOOP(hand_trunc, f.y[i] = std::trunc(f.x[i]))
QD_HAND_LOOP(hand_fmod, f.y[i] = std::fmod(f.x[i], f.z[i]))
QD_HAND_LOOP(hand_clamp, f.y[i] = f.x[i] < -1.0f ? -1.0f : (2.0f < f.x[i] ? 2.0f : f.x[i]))
QD_HAND_LOOP(hand_popcnt, f.iy[i] = __builtin_popcount(f.u[i]))
QD_HAND_LOOP(hand_clz, f.iy[i] = f.u[i] ? __builtin_clz(f.u[i]) : 32)
/* The counter: each iteration adds one with a compare_exchange_weak loop. */
static void hand_cas_chunk(const void* fp, const qd_ctx*, qd_i64 lo, qd_i64 hi) {
  std::atomic<int>* c = *(std::atomic<int>* const*)fp;
  for (qd_i64 i = lo; i < hi; ++i) {
    int seen = c->load(std::memory_order_relaxed);
    while (!c->compare_exchange_weak(seen, seen + 1, std::memory_order_relaxed)) {}
  }
}
extern "C" __attribute__((visibility("default"))) void hand_cas(const qd_ctx* ctx) {
  std::atomic<int>* c = (std::atomic<int>*)ctx->arrays[0].data;
  ((const qd_cpu_runtime*)ctx->runtime)->parallel_for(ctx, 0, *(const qd_i64*)ctx->scalars, &hand_cas_chunk, &c);
}
)";

struct hand_code {
  std::unique_ptr<qd::backend::loaded_module> module;
  void* entry(const char* name) const { return module->entry(name); }
};

hand_code compile_hand_code() {
  auto& dev = qd::detail::current_program("math_bench").device();
  auto binary = dev.compile(qd::backend::cpu::translation_unit_prelude() + hand_source, "hand-written benchmark code");
  return {dev.load(binary, "hand-written benchmark code")};
}

void launch_hand(void* entry, std::vector<qd::backend::array_abi> arrays, std::vector<std::uint64_t> scalars) {
  auto& dev = qd::detail::current_program("math_bench").device();
  std::int64_t error[5] = {};
  scalars.resize(arrays.size() + 1);
  qd::backend::launch_context ctx{arrays.data(), scalars.data(), arrays.size(), nullptr, 0, error};
  dev.launch(entry, true, ctx);
}

template <class T>
qd::backend::array_abi abi(const qd::ndarray<T, 1>& a) {
  return {a.storage().data(), nullptr, {a.shape(0), 0, 0, 0}};
}

using f1 = qd::types::ndarray<float, 1>;
using u1 = qd::types::ndarray<std::uint32_t, 1>;
using i1 = qd::types::ndarray<std::int32_t, 1>;

// One generated kernel per function, with the hand-written loop's parameters.
template <class Body>
auto unary_kernel(const char* name, Body body) {
  return qd::kernel(name, [body](f1 x, f1 z, f1 y, u1 u, i1 iy) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { body(x, z, y, u, iy, i); });
  });
}

struct row {
  const char* name;
  std::function<void()> generated, hand;
};

void compare_functions(int threads, int rounds) {
  qd::init({.arch = qd::arch::cpu, .offline_cache = false, .cpu_max_num_threads = threads});
  hand_code hand = compile_hand_code();
  const std::int64_t n = 4 << 20;
  std::vector<float> hx(static_cast<std::size_t>(n)), hz(hx.size());
  std::vector<std::uint32_t> hu(hx.size());
  for (std::size_t i = 0; i < hx.size(); ++i) {
    hx[i] = static_cast<float>(static_cast<double>((i * 2654435761u) % 20000) * 0.01 - 100.0);
    hz[i] = static_cast<float>(static_cast<double>((i * 40503u) % 2001) * 0.001 - 1.0);  // in [-1, 1]
    hu[i] = static_cast<std::uint32_t>(i * 2654435761u) >> (i % 13);
  }
  qd::ndarray<float, 1> x(n), z(n), y(n);
  qd::ndarray<std::uint32_t, 1> u(n);
  qd::ndarray<std::int32_t, 1> iy(n);
  x.from_host(hx), z.from_host(hz), u.from_host(hu);
  const std::vector<qd::backend::array_abi> arrays = {abi(x), abi(z), abi(y), abi(u), abi(iy)};

  std::vector<row> rows;
  auto add = [&](const char* name, auto k) {  // a kernel shares its state with its copies
    k.compile();
    void* h = hand.entry((std::string("hand_") + name).c_str());
    rows.push_back({name, [&, k] { k(x, z, y, u, iy); }, [&, h] { launch_hand(h, arrays, {}); }});
  };
#define QD_ROW(NAME, EXPR)                                                         \
  add(NAME, unary_kernel(NAME, [](f1 x_, f1 z_, f1 y_, u1 u_, i1 iy_, qd::i32 i) { \
        (void)x_, (void)z_, (void)y_, (void)u_, (void)iy_;                         \
        EXPR;                                                                      \
      }))
  QD_ROW("tan", y_[i] = qd::tan(x_[i]));
  QD_ROW("asin", y_[i] = qd::asin(z_[i]));
  QD_ROW("acos", y_[i] = qd::acos(z_[i]));
  QD_ROW("atan2", y_[i] = qd::atan2(x_[i], z_[i]));
  QD_ROW("rsqrt", y_[i] = qd::rsqrt(qd::abs(x_[i])));
  QD_ROW("log2", y_[i] = qd::log2(qd::abs(x_[i])));
  QD_ROW("exp2", y_[i] = qd::exp2(z_[i]));
  QD_ROW("round", y_[i] = qd::round(x_[i]));
  QD_ROW("trunc", y_[i] = qd::trunc(x_[i]));
  QD_ROW("fmod", y_[i] = qd::fmod(x_[i], z_[i]));
  QD_ROW("clamp", y_[i] = qd::clamp(x_[i], -1.0f, 2.0f));
  QD_ROW("popcnt", iy_[i] = qd::popcnt(u_[i]));
  QD_ROW("clz", iy_[i] = qd::clz(u_[i]));
#undef QD_ROW
  std::vector<std::vector<double>> gen(rows.size()), hw(rows.size());
  for (int r = 0; r < rounds + 1; ++r)
    for (std::size_t k = 0; k < rows.size(); ++k) {
      const double g = seconds(rows[k].generated), h = seconds(rows[k].hand);
      if (r == 0) continue;  // warm-up
      gen[k].push_back(g), hw[k].push_back(h);
    }
  for (std::size_t k = 0; k < rows.size(); ++k)
    fmt::print("  {} thread{}: {:7} 4M  generated {:7.2f} ms  std:: by hand {:7.2f} ms  ratio {:.3f}\n", threads,
               threads == 1 ? " " : "s", rows[k].name, median(gen[k]) * 1e3, median(hw[k]) * 1e3,
               median(gen[k]) / median(hw[k]));
}

void compare_cas_counter(int threads, int rounds) {
  qd::init({.arch = qd::arch::cpu, .offline_cache = false, .cpu_max_num_threads = threads});
  hand_code hand = compile_hand_code();
  auto counter = qd::kernel("cas_counter", [](qd::types::ndarray<std::int32_t, 1> c, qd::i64 n) {
    qd::range_for(qd::cast<std::int32_t>(n), [&](qd::i32) {
      qd::var<std::int32_t> seen = qd::volatile_load(c[0]);
      qd::var<std::int32_t> done = 0;
      qd::while_([&] { return done == 0; },
                 [&] {
                   qd::i32 old = qd::atomic_cas(c[0], seen, seen + 1);
                   qd::if_(old == seen, [&] { done = 1; }).else_([&] { seen = old; });
                 });
    });
  });
  counter.compile();
  const std::int64_t n = 4 << 20;
  qd::ndarray<std::int32_t, 1> c(1);
  std::uint64_t n_bits = 0;
  std::memcpy(&n_bits, &n, sizeof n);
  void* h = hand.entry("hand_cas");
  std::vector<double> gen, hw;
  for (int r = 0; r < rounds + 1; ++r) {
    c.fill(0);
    const double g = seconds([&] { counter(c, n); });
    const bool g_ok = c.to_host()[0] == n;
    c.fill(0);
    const double t = seconds([&] { launch_hand(h, {abi(c)}, {n_bits}); });
    const bool h_ok = c.to_host()[0] == n;
    if (!g_ok || !h_ok) fmt::print("  the counter lost updates ({} / {})\n", g_ok, h_ok);
    if (r == 0) continue;
    gen.push_back(g), hw.push_back(t);
  }
  fmt::print("  {} thread{}: cas counter 4M  generated {:7.2f} ms  std::atomic<int> by hand {:7.2f} ms  ratio {:.3f}\n",
             threads, threads == 1 ? " " : "s", median(gen) * 1e3, median(hw) * 1e3, median(gen) / median(hw));
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  const int threads = static_cast<int>(std::thread::hardware_concurrency());
  fmt::print("Quadrants math and atomics benchmark ({} hardware threads; medians of {} interleaved rounds)\n", threads,
             rounds);
  fmt::print(
      "A generated kernel y[i] = f(x[i]) vs the same std:: call in a loop by hand (same compiler, flags, pool):\n");
  compare_functions(1, rounds);
  if (threads > 1) compare_functions(threads, rounds);
  fmt::print("An atomic_cas-loop counter vs std::atomic<int>::compare_exchange_weak by hand:\n");
  compare_cas_counter(1, rounds);
  if (threads > 1) compare_cas_counter(threads, rounds);
  return 0;
}
