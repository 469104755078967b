// qd::arch::vulkan end to end, through qd::init and qd::kernel: suite kernels run on the
// Vulkan device (lavapipe in CI) give the CPU backend's results (the third wave's math,
// bit functions, atomics, narrow types and qd::assert_ too); the split is on by default;
// compile_only stores SPIR-V that a program with the device then loads; what a device
// lacks is a qd::user_error; no Vulkan loader falls back to the CPU with one warning.
// Without a Vulkan device the tests report themselves skipped.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <quadrants/quadrants.hpp>

#include "backend/suite_kernels.hpp"
#include "backend/suite_kernels_lang.hpp"
#include "backend/suite_kernels_math.hpp"
#include "backend/vulkan_support.hpp"
#include "runtime/runtime_test_support.hpp"
#include "support/fresh_dir.hpp"
#include "support/host_semantics.hpp"

namespace {

namespace kernels = qd_test::kernels;

// Starts a program on `a` without fallback; for Vulkan, false after reporting the test
// skipped when this machine has no Vulkan device.
bool start(qd::arch a, qd::config c = {}) {
  c.arch = a;
  c.enable_fallback = false;
  try {
    qd::init(c);
    return true;
  } catch (const qd::user_error& e) {
    if (a != qd::arch::vulkan) throw;
    const std::string why = std::string("skipped: no Vulkan device: ") + e.what();
    MESSAGE(why);
    return false;
  }
}

bool have_vulkan() {
  static const bool present = [] {
    const bool ok = start(qd::arch::vulkan);
    if (ok) qd::reset();
    return ok;
  }();
  return present;
}

// What `run` writes to stdout.
template <class Run>
std::string captured_stdout(Run&& run) {
  std::fflush(stdout);
  char path[] = "/tmp/qd-vk-print-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  const int saved = ::dup(1);
  ::dup2(fd, 1);
  run();
  std::fflush(stdout);
  ::dup2(saved, 1);
  ::close(saved);
  std::string text;
  char buffer[256];
  ::lseek(fd, 0, SEEK_SET);
  for (ssize_t got; (got = ::read(fd, buffer, sizeof(buffer))) > 0;) text.append(buffer, static_cast<std::size_t>(got));
  ::close(fd);
  ::unlink(path);
  return text;
}

// Each run's arrays, read back as bytes, in order.
using outputs = std::vector<std::vector<unsigned char>>;

template <class T, int N>
void keep(outputs& out, const qd::ndarray<T, N>& a) {
  auto h = a.to_host();
  std::vector<unsigned char> bytes(h.size() * sizeof(T));
  if (!h.empty()) std::memcpy(bytes.data(), h.data(), bytes.size());
  out.push_back(std::move(bytes));
}

// Runs `body` on the CPU and on Vulkan (each in a program of its own, per_offload `mode`)
// and requires the same bytes in every array it keeps.
void same_as_cpu(const std::function<void(outputs&)>& body,
                 qd::per_offload_mode mode = qd::per_offload_mode::automatic) {
  outputs cpu, vk;
  REQUIRE(start(qd::arch::cpu, {.per_offload = mode}));
  body(cpu);
  qd::reset();
  REQUIRE(start(qd::arch::vulkan, {.per_offload = mode}));
  CHECK(qd::current_settings().arch == qd::arch::vulkan);
  body(vk);
  qd::reset();
  REQUIRE(cpu.size() == vk.size());
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    CAPTURE(i);
    CHECK(cpu[i] == vk[i]);
  }
}

// Runs `body` on the CPU and on Vulkan, each in a program of its own, and returns both
// runs' arrays.
std::pair<outputs, outputs> on_cpu_and_vulkan(const std::function<void(outputs&)>& body, qd::config c = {}) {
  outputs cpu, vk;
  REQUIRE(start(qd::arch::cpu, c));
  body(cpu);
  qd::reset();
  REQUIRE(start(qd::arch::vulkan, c));
  body(vk);
  qd::reset();
  REQUIRE(cpu.size() == vk.size());
  return {cpu, vk};
}

template <class T>
std::vector<T> as(const std::vector<unsigned char>& bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

// Units in the last place between two floats (0 when their bits are equal or both are NaN:
// a NaN's sign and payload are not part of any result).
template <class T>
double ulps(T got, T want) {
  if ((std::isnan(got) && std::isnan(want)) ||
      std::bit_cast<std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>(got) ==
          std::bit_cast<std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>(want))
    return 0;
  if (std::isnan(got) || std::isnan(want) || std::isinf(got) || std::isinf(want) || got == want) return 1e30;
  const T spacing = std::max(std::abs(std::nextafter(want, std::numeric_limits<T>::infinity()) - want),
                             std::numeric_limits<T>::denorm_min());
  return static_cast<double>(std::abs(got - want) / spacing);
}

// Compares a matrix of floats column by column: a column with bound 0 bit for bit (NaN as
// NaN, -0 apart from 0), the others within their bound in ulps, except the entries `skip`
// names; returns the worst error of each column.
template <class T>
std::vector<double> compare_columns(const std::vector<T>& vk, const std::vector<T>& cpu,
                                    const std::vector<double>& bounds, const std::vector<T>& inputs,
                                    const std::function<bool(std::size_t, std::size_t)>& skip) {
  const std::size_t columns = bounds.size();
  REQUIRE(vk.size() == cpu.size());
  REQUIRE(vk.size() % columns == 0);
  std::vector<double> worst(columns, 0.0);
  int shown = 0;
  for (std::size_t k = 0; k < vk.size(); ++k) {
    const std::size_t c = k % columns;
    if (skip(k / columns, c)) continue;
    const double e = ulps(vk[k], cpu[k]);
    worst[c] = std::max(worst[c], e);
    if (e > bounds[c] && ++shown <= 12) {
      CAPTURE(c);
      CAPTURE(k / columns);
      CAPTURE(inputs[k / columns]);
      CAPTURE(e);
      CHECK(std::bit_cast<std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>(vk[k]) ==
            std::bit_cast<std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>(cpu[k]));
    }
  }
  return worst;
}

// The bounds, in ulps, the emitted math is held to against the CPU's <cmath> (docs/backends.md).
template <class T>
std::vector<double> math_bounds() {
  // math_more's columns: tan asin acos atan2 rsqrt log2 exp2 (held to a bound), then round,
  // trunc, fmod, fract, sign, clamp, mix, step, smoothstep, //, %, isnan, isinf, isfinite:
  // exact operations, or arithmetic both backends do one rounded operation at a time.
  const double f = std::is_same_v<T, float> ? 1 : 2;
  std::vector<double> b(21, 0.0);
  for (std::size_t c = 0; c <= 6; ++c) b[c] = f;
  b[4] = 0;  // rsqrt is 1 / sqrt(x): exact
  return b;
}

// math_more<T> over edge values: 0, -0, the extremes, denormals, infinities, NaN.
template <class T>
std::vector<T> math_inputs(std::vector<T>& ys, std::vector<T>& zs) {
  using lim = std::numeric_limits<T>;
  const std::vector<T> as = {T(0),
                             T(-0.0),
                             T(0.5),
                             T(-0.5),
                             T(1.5),
                             T(2.5),
                             T(-2.5),
                             T(3.75),
                             T(-7.25),
                             T(1e-3),
                             T(123.456),
                             T(-1e6),
                             T(1e30),
                             T(-3e-20),
                             lim::infinity(),
                             -lim::infinity(),
                             lim::quiet_NaN(),
                             T(6),
                             lim::max(),
                             lim::lowest(),
                             lim::min(),
                             lim::denorm_min(),
                             -lim::denorm_min(),
                             T(12345.678),
                             T(0.49999997),
                             T(-1.4999999),
                             T(88.7),
                             T(-101.5),
                             T(1024.5),
                             T(3.1415926)};
  const std::vector<T> bs = {T(1),
                             T(-1),
                             T(0.75),
                             T(-3),
                             T(2),
                             T(0.1),
                             T(0),
                             T(-0.0),
                             T(4),
                             T(-2.5),
                             lim::infinity(),
                             -lim::infinity(),
                             lim::denorm_min(),
                             T(1e-30),
                             T(7e20)};
  std::vector<T> xs;
  for (std::size_t i = 0; i < as.size(); ++i)
    for (std::size_t j = 0; j < bs.size(); ++j) {
      xs.push_back(as[i]), ys.push_back(bs[j]);
      zs.push_back(T(-1) + T(2) * static_cast<T>((i * 7 + j * 3) % 23) / T(22));  // -1 and 1 included
    }
  return xs;
}

template <class T>
void math_like_cpu() {
  std::vector<T> ys, zs;
  const std::vector<T> xs = math_inputs<T>(ys, zs);
  const auto n = static_cast<std::int64_t>(xs.size());
  auto [cpu, vk] = on_cpu_and_vulkan([&](outputs& out) {
    qd::ndarray<T, 1> x(n), y(n), z(n);
    qd::ndarray<T, 2> o({n, 21});
    x.from_host(xs), y.from_host(ys), z.from_host(zs);
    qd_test::kernels::math_more<T>()(x, y, z, o);
    keep(out, o);
  });
  // f64 tan past 2.1e8, where its argument reduction is no longer exact (as sin and cos):
  // not compared (docs/backends.md).
  auto far = [&](std::size_t row, std::size_t col) {
    return col == 0 && std::is_same_v<T, double> && std::isfinite(xs[row]) && std::abs(xs[row]) > T(2.1e8);
  };
  const auto worst = compare_columns(as<T>(vk[0]), as<T>(cpu[0]), math_bounds<T>(), xs, far);
  MESSAGE(qd::name(qd::dtype_of<T>) << " worst ulps against the CPU: tan " << worst[0] << " asin " << worst[1]
                                    << " acos " << worst[2] << " atan2 " << worst[3] << " log2 " << worst[5] << " exp2 "
                                    << worst[6]);
}

// integer_functions<T> (floordiv, floormod, sign, clamp, popcnt, clz, ffs) over the type's
// edges, bitwise against the CPU.
template <class T>
void integer_functions_like_cpu() {
  using lim = std::numeric_limits<T>;
  std::vector<T> values = {T(0), T(1), T(2), T(3), T(7), T(13), T(100), lim::max(), T(lim::max() - 1), lim::min()};
  if constexpr (std::is_signed_v<T>)
    for (T v : {T(-1), T(-2), T(-3), T(-7), T(-100), T(lim::min() + 1)}) values.push_back(v);
  std::vector<T> xs, ys;
  for (T a : values)
    for (T b : values) xs.push_back(a), ys.push_back(b);
  const auto n = static_cast<std::int64_t>(xs.size());
  same_as_cpu([&](outputs& out) {
    qd::ndarray<T, 1> x(n), y(n);
    qd::ndarray<T, 2> o({n, 4});
    qd::ndarray<std::int32_t, 2> bits({n, 3});
    x.from_host(xs), y.from_host(ys);
    qd_test::kernels::integer_functions<T>()(x, y, o, bits);
    keep(out, o), keep(out, bits);
  });
}

}  // namespace

TEST_CASE(
    "vulkan: range loops, ndrange, atomics (f32 add native, CAS loops for the rest), reductions and random "
    "numbers give the CPU's results, split and whole") {
  if (!have_vulkan()) return;
  auto loops = [](outputs& out) {
    auto k = kernels::ndranges();
    qd::ndarray<std::int32_t, 2> a2({5, 7});
    qd::ndarray<std::int32_t, 3> a3({3, 4, 5});
    qd::ndarray<std::int32_t, 4> a4({2, 3, 4, 5});
    a2.fill(0), a3.fill(0), a4.fill(0);
    k(a2, a3, a4);
    keep(out, a2), keep(out, a3), keep(out, a4);
    auto r = kernels::ranges();
    qd::ndarray<std::int32_t, 1> hits(40), values(40), fixed(7);
    qd::ndarray<float, 2> m({6, 9});
    qd::ndarray<std::int32_t, 0> count;
    hits.fill(0), values.fill(-1), fixed.fill(0), count.fill(0);
    r(hits, values, 3, std::int64_t{31}, m, count, 4, 5, fixed);
    r(hits, values, 10, std::int64_t{5}, m, count, 0, 3, fixed);  // empty extents
    keep(out, hits), keep(out, values), keep(out, m), keep(out, count), keep(out, fixed);
  };
  auto atomics = [](outputs& out) {
    auto k = kernels::atomics_parallel();
    std::vector<std::int32_t> xs;
    for (int i = 0; i < 3000; ++i) xs.push_back((i * 7919) % 2001 - 1000);
    qd::ndarray<std::int32_t, 1> x(3000), acc(4), tops(4), mine(3000);
    qd::ndarray<std::int32_t, 2> olds({3000, 2});
    qd::ndarray<float, 1> facc(3);
    x.from_host(xs);
    acc.from_host(std::vector<std::int32_t>{0, 0, 1 << 30, -(1 << 30)});
    facc.from_host(std::vector<float>{0.0f, 1e30f, -1e30f});
    k(x, acc, olds, facc, tops, mine);
    keep(out, acc), keep(out, facc), keep(out, tops), keep(out, mine);
    auto h = kernels::histogram<float>();  // f32 +=, -= and min/max on arrays and variables
    qd::ndarray<std::int32_t, 1> keys(2000);
    std::vector<std::int32_t> ks;
    for (int i = 0; i < 2000; ++i) ks.push_back((i * 104729) % 10007);
    keys.from_host(ks);
    qd::ndarray<float, 1> up(16), down(16), extremes(4);
    qd::ndarray<float, 0> all;
    up.fill(0.0f), down.fill(0.0f), all.fill(0.0f);
    extremes.from_host(std::vector<float>{1e30f, -1e30f, 0.0f, 0.0f});
    h(keys, up, down, all, extremes);
    keep(out, up), keep(out, down), keep(out, all), keep(out, extremes);
    auto t = kernels::running_total();  // reductions read by later loops
    qd::ndarray<std::int32_t, 1> xi(1000), oi(10);
    qd::ndarray<float, 1> xf(1000), of(3);
    std::vector<std::int32_t> vi;
    std::vector<float> vf;
    for (int i = 0; i < 1000; ++i) vi.push_back(i % 17 - 8), vf.push_back(static_cast<float>(i % 9) * 0.25f);
    xi.from_host(vi), xf.from_host(vf);
    t(xi, oi, xf, of);
    keep(out, oi), keep(out, of);
  };
  auto draws = [](outputs& out) {
    auto k = kernels::uniforms();
    qd::ndarray<float, 1> f(300);
    qd::ndarray<double, 1> d(300);
    qd::ndarray<std::uint32_t, 1> u(300);
    qd::ndarray<std::int32_t, 1> s(300);
    qd::ndarray<float, 0> serial;
    qd::ndarray<float, 2> grid({8, 9});
    k(f, d, u, s, serial, grid);
    k(f, d, u, s, serial, grid);  // a second launch draws other numbers, alike on both
    keep(out, f), keep(out, d), keep(out, u), keep(out, s), keep(out, serial), keep(out, grid);
  };
  for (auto mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
    CAPTURE(mode);
    same_as_cpu(loops, mode);
    same_as_cpu(atomics, mode);
    same_as_cpu(draws, mode);
  }
}

TEST_CASE("vulkan: graph kernels (do_while read on the host) and qd::concurrent (one queue) give the CPU's results") {
  if (!have_vulkan()) return;
  auto graphs = [](outputs& out) {
    auto loops = kernels::graph_loops();
    auto regions = kernels::concurrent_regions();
    qd::ndarray<float, 1> x(6), rows(4), a(9), b(5);
    qd::ndarray<std::int32_t, 0> r, count, inner, outer;
    x.from_host(std::vector<float>{0, 1, 2, 0, 1, 2});
    r.fill(0);
    loops(x, rows, r, count, inner, outer);
    regions(a, b);
    keep(out, rows), keep(out, r), keep(out, a), keep(out, b);
  };
  same_as_cpu(graphs, qd::per_offload_mode::off);
  same_as_cpu(graphs, qd::per_offload_mode::on);
}

// Device graphs on Vulkan: a graph kernel's launches are recorded once into command
// buffers and resubmitted; a task that prints ends a command buffer, so each replay
// prints its lines in order, between the loops that run before and after them.
TEST_CASE("vulkan: a graph kernel is recorded once, replayed, and its prints come between its loops") {
  if (!have_vulkan()) return;
  for (qd::per_offload_mode mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
    CAPTURE(qd::name(mode));
    REQUIRE(start(qd::arch::vulkan, {.per_offload = mode}));
    auto k = qd::kernel("graph_prints", {"x", "s"}, qd::graph::on, [](qd::types::ndarray<float, 1> x, qd::f32 s) {
      qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] + s; });
      qd::print("first", x[0]);
      qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * 2.0f; });
      qd::print("second", x[3]);
    });
    qd::ndarray<float, 1> x(4), y(4);
    x.from_host({1, 2, 3, 4});
    y.from_host({0, 0, 0, 0});
    const std::string text = captured_stdout([&] {
      for (int launch = 0; launch < 3; ++launch) k(x, 1.0f);
      k(y, 0.5f);  // other arguments of the same shapes: updated in place
    });
    CHECK(text == "first 2\nsecond 10\nfirst 5\nsecond 22\nfirst 11\nsecond 46\nfirst 0.5\nsecond 1\n");
    CHECK(x.to_host() == std::vector<float>{22, 30, 38, 46});
    CHECK(y.to_host() == std::vector<float>{1, 1, 1, 1});
    const auto o = k.per_offload_cache_observations();
    CHECK(o.device_graph_builds == 1);
    CHECK(o.device_graph_replays == 3);
    CHECK(o.device_graph_updates == 1);
    qd::reset();
  }
}

TEST_CASE("vulkan: the split is the default, return values arrive, and a bounds check names the parameter") {
  if (!have_vulkan()) return;
  REQUIRE(start(qd::arch::vulkan, {.check_out_of_bound = true}));
  kernels::check_returns();

  auto t = kernels::running_total();  // splits: per-offload is the default on Vulkan
  qd::ndarray<std::int32_t, 1> xi(100), oi(4);
  qd::ndarray<float, 1> xf(100), of(2);
  xi.fill(1), xf.fill(0.5f);
  t(xi, oi, xf, of);
  CHECK(t.per_offload_cache_observations().fallback == qd::fallback_reason::none);
  CHECK(t.per_offload_cache_observations().frontend_constructs_total >= 4);  // one per loop at least
  CHECK(oi.to_host() == std::vector<std::int32_t>{100, 101, 102, 103});
  CHECK(of.to_host() == std::vector<float>{50.0f, 50.0f});

  auto oob = kernels::out_of_bounds();
  qd::ndarray<float, 1> small(8);
  try {
    oob(small, 9);
    FAIL("an out-of-range index did not fail the launch");
  } catch (const qd::error& e) {
    CHECK(std::string(e.what()).find("'x'") != std::string::npos);
  }
  oob(small, 8);  // the device stays usable
  CHECK(small.to_host() == std::vector<float>(8, 1.0f));
  qd::reset();
}

// Found by the fuzzer's Vulkan batch: a kernel whose every statement is dead has no task,
// which compile() refused ("the generated GLSL marks no task").
TEST_CASE("vulkan: a kernel with nothing left to run (dead code only) runs, whole and split, and writes nothing") {
  if (!have_vulkan()) return;
  for (qd::per_offload_mode mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
    CAPTURE(qd::name(mode));
    REQUIRE(start(qd::arch::vulkan, {.per_offload = mode}));
    auto idle = qd::kernel("idle", {"x"}, [](qd::types::ndarray<float, 1> x) {
      qd::range_for(x.shape(0), [&](qd::i32 i) {
        qd::f32 unused = x(i) * 2.0f;
        (void)unused;
      });
    });
    qd::ndarray<float, 1> x(4);
    x.from_host({1.0f, -2.0f, 3.5f, 0.25f});
    idle(x);
    CHECK(x.to_host() == std::vector<float>{1.0f, -2.0f, 3.5f, 0.25f});
    qd::reset();
  }
}

// Found by the fuzzer's Vulkan batch (seed 3,200,006): on lavapipe, an invocation in a
// workgroup narrower than the driver's SIMD width ran a counted loop once when a loop
// before it had a condition comparing two loaded values and a store in its body (the
// workgroup's missing lanes took part in the first loop's exit). Serial tasks, and
// parallel tasks whose block_dim is not a multiple of 32, now run in a workgroup of
// whole lanes (see glsl_emitter).
TEST_CASE("vulkan: a counted loop after a while_ runs every iteration, serial and with a narrow block_dim") {
  if (!have_vulkan()) return;
  using a32 = qd::types::ndarray<std::int32_t, 1>;
  for (qd::per_offload_mode mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
    CAPTURE(qd::name(mode));
    REQUIRE(start(qd::arch::vulkan, {.per_offload = mode}));
    auto serial = qd::kernel("loop_after_while", {"x", "m", "y"}, [](a32 x, a32 m, a32 y) {
      qd::while_([&] { return x[0] >= x[1]; }, [&] { x[2] = 0; });
      qd::range_for(0, m[0], qd::loop_config{.serialize = true}, [&](qd::i32) { y[0] -= 5; });
    });
    for (std::int32_t block : {1, 3, 40}) {
      CAPTURE(block);
      auto narrow = qd::kernel("loop_after_while_narrow", {"x", "m", "y"}, [block](a32 x, a32 m, a32 y) {
        qd::range_for(y.shape(0), qd::loop_config{.block_dim = block}, [&](qd::i32 i) {
          qd::while_([&] { return x[0] >= x[1]; }, [&] { x[2] = 0; });
          qd::var<std::int32_t> acc = 0;
          qd::range_for(0, m[0] + i, [&](qd::i32) { acc += 5; });
          y(i) = acc;
        });
      });
      qd::ndarray<std::int32_t, 1> x(3), m(1), y(50);
      x.from_host({6, 7, 9});
      m.from_host({11});
      narrow(x, m, y);
      std::vector<std::int32_t> want(50);
      for (std::int32_t i = 0; i < 50; ++i) want[static_cast<std::size_t>(i)] = 5 * (11 + i);
      CHECK(y.to_host() == want);
      CHECK(x.to_host() == std::vector<std::int32_t>{6, 7, 9});
    }
    qd::ndarray<std::int32_t, 1> x(3), m(1), y(2);
    x.from_host({6, 7, 9});
    m.from_host({11});
    serial(x, m, y);
    CHECK(y.to_host() == std::vector<std::int32_t>{-55, 0});
    CHECK(x.to_host() == std::vector<std::int32_t>{6, 7, 9});
    qd::reset();
  }
}

// Found by the fuzzer's Vulkan batch (seeds 3,000,004 and 3,300,003): lavapipe's LLVM
// aborted the process ("Cannot select") compiling an atomic whose operand is a float the
// shader computed, reinterpreted as bits: a float atomic_cas's expected value, a float
// atomic_exchange, an integer atomic of a qd::bit_cast. On a CPU driver atomics' operands
// now pass through qd_opaque (glsl_target::lavapipe_workarounds).
TEST_CASE("vulkan: atomics whose operands are computed floats' bits compile and give the CPU's results") {
  if (!have_vulkan()) return;
  auto check = [](auto one) {
    using T = decltype(one);
    using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    CAPTURE(sizeof(T));
    auto k = qd::kernel("atomic_bits", {"x", "y", "olds", "swapped", "bits"},
                        [](qd::types::ndarray<T, 1> x, qd::types::ndarray<T, 1> y, qd::types::ndarray<T, 1> olds,
                           qd::types::ndarray<T, 1> swapped, qd::types::ndarray<U, 1> bits) {
                          qd::range_for(x.shape(0), [&](qd::i32 i) {
                            // x[i] holds y[i] * 3 for even i: those swap to -i.
                            olds[i] = qd::atomic_cas(x[i], y[i] * T(3), -qd::cast<T>(i));
                            qd::atomic_exchange(swapped[i], y[i] * T(5));
                            qd::atomic_add(bits[i], qd::bit_cast<U>(y[i] * T(7)));
                            qd::atomic_xor(bits[i], qd::bit_cast<U>(y[i] / T(3)));
                          });
                          qd::atomic_cas(x[0], y[1] / T(7), T(42));  // serial, never equal
                        });
    const std::int64_t n = 6;
    const auto size = static_cast<std::size_t>(n);
    std::vector<T> hy(size), hx(size), want_swapped(size);
    std::vector<U> want_bits(size, U(12345));
    for (std::size_t i = 0; i < size; ++i) {
      hy[i] = T(0.1) * T(i + 1);
      hx[i] = i % 2 == 0 ? hy[i] * T(3) : T(5);
      want_swapped[i] = hy[i] * T(5);
      want_bits[i] = U(want_bits[i] + std::bit_cast<U>(T(hy[i] * T(7)))) ^ std::bit_cast<U>(T(hy[i] / T(3)));
    }
    std::vector<T> want_x = hx, want_olds = hx;
    for (std::size_t i = 0; i < size; ++i)
      if (hx[i] == hy[i] * T(3)) want_x[i] = -T(i);
    qd::ndarray<T, 1> x(n), y(n), olds(n), swapped(n);
    qd::ndarray<U, 1> bits(n);
    x.from_host(hx);
    y.from_host(hy);
    bits.fill(U(12345));
    k(x, y, olds, swapped, bits);
    CHECK(x.to_host() == want_x);
    CHECK(olds.to_host() == want_olds);
    CHECK(swapped.to_host() == want_swapped);
    CHECK(bits.to_host() == want_bits);
  };
  REQUIRE(start(qd::arch::vulkan));
  check(1.0f);
  check(1.0);
  qd::reset();
}

// Found by the fuzzer's Vulkan batch (seeds 3,300,404 and 3,300,451): GLSL's abs(-0.0)
// may be -0.0 (its abs is "x if x >= 0"; the serial constant below failed before), and
// lavapipe turned x * float(b) into b ? x : 0, so -1 * float(false) came out +0 (only in
// the shape of the fuzzer's case, tests/fuzz/gpu_regressions/vulkan_mul_by_float_of_bool;
// the forms below check the semantics).
TEST_CASE("vulkan: abs of -0 is +0, and x times a float made from a bool keeps IEEE's sign and NaNs") {
  if (!have_vulkan()) return;
  auto check = [](auto zero) {
    using T = decltype(zero);
    CAPTURE(sizeof(T));
    auto k = qd::kernel(
        "abs_and_bool", {"x", "flags", "out"},
        [](qd::types::ndarray<T, 1> x, qd::types::ndarray<std::int32_t, 1> flags, qd::types::ndarray<T, 2> out) {
          qd::range_for(x.shape(0), [&](qd::i32 i) {
            out(0, i) = qd::abs(x[i]);
            out(1, i) = x[i] * qd::cast<T>(flags[i] != 0);
            out(2, i) = x[i] * qd::cast<T>(false);
          });
          // Serial, where the driver sees the constants (the fuzzer's cases).
          out(3, 0) = qd::abs(qd::cast<T>(-0.0));
          qd::var<std::int32_t> k = 0;
          qd::while_([&] { return k < 1; },
                     [&] {
                       k += 1;
                       out(3, 1) = x[2] * qd::cast<T>(false);
                       out(3, 2) = x[4] * qd::cast<T>(false);
                     });
        });
    const T inf = std::numeric_limits<T>::infinity();
    const std::vector<T> in = {T(-0.0), T(0), T(-1), T(2.5), inf, -inf};
    const std::vector<std::int32_t> fl = {0, 1, 0, 1, 0, 1};
    const auto n = static_cast<std::int64_t>(in.size());
    qd::ndarray<T, 1> x(n);
    qd::ndarray<std::int32_t, 1> flags(n);
    qd::ndarray<T, 2> out({4, n});
    x.from_host(in);
    flags.from_host(fl);
    k(x, flags, out);
    const std::vector<T> got = out.to_host();
    for (std::size_t i = 0; i < in.size(); ++i) {
      CAPTURE(in[i]);
      const volatile T one = T(1), nothing = T(0);  // multiplied at run time by the host
      const T want[3] = {std::fabs(in[i]), in[i] * (fl[i] != 0 ? one : nothing), in[i] * nothing};
      for (std::size_t r = 0; r < 3; ++r) {
        const T g = got[r * in.size() + i];
        CAPTURE(r);
        CHECK(((std::isnan(want[r]) && std::isnan(g)) || std::memcmp(&want[r], &g, sizeof(T)) == 0));
      }
    }
    const T plus_zero = got[3 * in.size()], minus_one_by_zero = got[3 * in.size() + 1],
            inf_by_zero = got[3 * in.size() + 2];
    CHECK(!std::signbit(plus_zero));
    CHECK(plus_zero == T(0));
    CHECK(std::signbit(minus_one_by_zero));  // -1 * 0 is -0
    CHECK(minus_one_by_zero == T(0));
    CHECK(std::isnan(inf_by_zero));
  };
  REQUIRE(start(qd::arch::vulkan));
  check(0.0f);
  check(0.0);
  qd::reset();
}

// Found by the fuzzer's Vulkan batch: lavapipe folded 0 / x to +0 (0 / -2.5 is -0), also
// where the 0 is an expression it folded.
TEST_CASE("vulkan: ±0 / x of f32 and f64 keeps IEEE's sign and NaNs, as plain C++") {
  if (!have_vulkan()) return;
  REQUIRE(start(qd::arch::vulkan));
  auto check = [](auto zero) {
    using T = decltype(zero);
    CAPTURE(sizeof(T));
    auto k = qd::kernel("zero_over", {"x", "plus", "minus"},
                        [](qd::types::ndarray<T, 1> x, qd::types::ndarray<T, 1> plus, qd::types::ndarray<T, 1> minus) {
                          qd::range_for(x.shape(0), [&](qd::i32 i) {
                            plus(i) = T(0) / x(i);
                            minus(i) = (T(-0.0) + T(-0.0)) / x(i);  // a zero the driver folds
                          });
                        });
    const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
    const std::vector<T> in = {T(-2.5), T(2.5), inf, -inf, T(0), T(-0.0), nan, std::numeric_limits<T>::denorm_min()};
    qd::ndarray<T, 1> x(static_cast<std::int64_t>(in.size())), plus(x.shape(0)), minus(x.shape(0));
    x.from_host(in);
    k(x, plus, minus);
    const std::vector<T> p = plus.to_host(), m = minus.to_host();
    for (std::size_t e = 0; e < in.size(); ++e) {
      CAPTURE(in[e]);
      const volatile T z = T(0);  // divided at run time by the host
      const T want_p = z / in[e], want_m = -z / in[e];
      CHECK(((std::isnan(want_p) && std::isnan(p[e])) || std::memcmp(&want_p, &p[e], sizeof(T)) == 0));
      CHECK(((std::isnan(want_m) && std::isnan(m[e])) || std::memcmp(&want_m, &m[e], sizeof(T)) == 0));
    }
  };
  check(0.0f);
  check(0.0);
  qd::reset();
}

TEST_CASE("vulkan: qd::print writes the CPU's lines") {
  if (!have_vulkan()) return;
  auto capture = [](qd::arch a) {
    REQUIRE(start(a));
    auto k = kernels::print_serial();
    qd::ndarray<float, 1> x(1);
    x.fill(1.5f);
    const std::string text =
        captured_stdout([&] { k(x, 7, std::int64_t{-5000000000}, 4000000000u, std::uint8_t{200}, true, 0.125); });
    qd::reset();
    return text;
  };
  const std::string cpu = capture(qd::arch::cpu), vk = capture(qd::arch::vulkan);
  CHECK(cpu.find("x0 = 1.5 n = 7 100% done") != std::string::npos);
  CHECK(vk == cpu);
}

TEST_CASE(
    "vulkan: tan, asin, acos, atan2, rsqrt, log2, exp2, round, trunc, fmod, // and %, isnan/isinf/isfinite give the CPU's results") {
  if (!have_vulkan()) return;
  math_like_cpu<float>();
  math_like_cpu<double>();
  REQUIRE(start(qd::arch::vulkan));
  qd_test::math_checks::check_math_more<float>(2);  // and against <cmath> directly
  qd_test::math_checks::check_math_more<double>(2);
  qd_test::math_checks::check_vec_math();
  qd::reset();
}

TEST_CASE("vulkan: floordiv, floormod, popcnt, clz, ffs and bit_cast of every integer type give the CPU's results") {
  if (!have_vulkan()) return;
  integer_functions_like_cpu<std::int8_t>();
  integer_functions_like_cpu<std::int16_t>();
  integer_functions_like_cpu<std::int32_t>();
  integer_functions_like_cpu<std::int64_t>();
  integer_functions_like_cpu<std::uint8_t>();
  integer_functions_like_cpu<std::uint16_t>();
  integer_functions_like_cpu<std::uint32_t>();
  integer_functions_like_cpu<std::uint64_t>();
  REQUIRE(start(qd::arch::vulkan));  // and against plain C++ (bit casts against std::bit_cast)
  qd_test::math_checks::check_integer_functions<std::int8_t>({0, 1, -1, 2, -2, 7, -7, 13, 100, 127, -128});
  qd_test::math_checks::check_integer_functions<std::uint64_t>(qd_test::interesting_values<std::uint64_t>());
  qd_test::math_checks::check_bit_casts();
  qd::reset();
}

TEST_CASE("vulkan: atomic mul, and, or, xor, exchange and cas of every type give the CPU's results, contended too") {
  if (!have_vulkan()) return;
  auto serial = []<class T>(T) {
    same_as_cpu([](outputs& out) {
      std::vector<T> x, v;
      for (int k = 0; k < 12; ++k) x.push_back(static_cast<T>(k * 7 + 3));
      for (int k = 0; k < 18; ++k) v.push_back(static_cast<T>(k % 5 + 2));
      x[5] = v[5], x[6] = static_cast<T>(v[7] + static_cast<T>(1));  // cas: one swaps, one does not
      qd::ndarray<T, 1> dx(12), dv(18), olds(18);
      dx.from_host(x), dv.from_host(v), olds.fill(T{});
      qd_test::kernels::atomics_more<T>()(dx, dv, olds);
      keep(out, dx), keep(out, olds);
    });
  };
  serial(std::int8_t{}), serial(std::int16_t{}), serial(std::uint16_t{}), serial(std::uint8_t{});
  serial(std::int32_t{}), serial(std::uint32_t{}), serial(std::int64_t{}), serial(std::uint64_t{});
  serial(float{}), serial(double{}), serial(qd::half{});
  REQUIRE(start(qd::arch::vulkan));  // and against plain C++, with the contended ones
  qd_test::math_checks::check_atomics_more<std::int32_t>();
  qd_test::math_checks::check_atomics_more<std::uint64_t>();
  qd_test::math_checks::check_atomics_more<double>();
  qd_test::math_checks::check_atomics_more<std::int8_t>();
  qd_test::math_checks::check_atomics_more<std::uint16_t>();
  qd_test::math_checks::check_atomics_more<qd::half>();
  qd_test::math_checks::check_vec_atomics();
  qd_test::math_checks::check_float_cas_compares_bits_and_minmax_nan<float>();
  qd_test::math_checks::check_float_cas_compares_bits_and_minmax_nan<double>();
  qd_test::math_checks::check_atomic_contention();
  qd::reset();
}

TEST_CASE(
    "vulkan: i8, i16, u16, u64 and f16 arrays, scalars, variables, casts, atomics and printing give the CPU's results") {
  if (!have_vulkan()) return;
  REQUIRE(start(qd::arch::vulkan));  // against plain C++ (f16 rounding against _Float16)
  qd_test::math_checks::check_narrow_types();
  qd_test::math_checks::check_f16_rounding();
  qd::reset();
  same_as_cpu([](outputs& out) {
    // Bit patterns of every kind: the first rows each type's edges, the rest mixed bits.
    const std::int64_t n = 48;
    std::vector<std::int8_t> a8;
    std::vector<std::int16_t> a16;
    std::vector<std::uint16_t> au16;
    std::vector<std::uint64_t> a64;
    std::vector<qd::half> h;
    const std::uint64_t edges[] = {0,
                                   ~0ull,
                                   0x8000800080008000ull,
                                   0x7fff7fff7fff7fffull,
                                   0x0001000100010001ull,
                                   0x7c00fc007bff03ffull,
                                   0x7e0084017c01fbffull};
    std::uint64_t z = 0x243f6a8885a308d3ull;
    for (std::int64_t i = 0; i < n; ++i) {
      z = z * 6364136223846793005ull + 1442695040888963407ull;
      const std::uint64_t bits = i < 7 ? edges[i] : z ^ (z >> 29);
      a8.push_back(static_cast<std::int8_t>(bits)), a16.push_back(static_cast<std::int16_t>(bits >> 16));
      au16.push_back(static_cast<std::uint16_t>(bits >> 32)), a64.push_back(bits);
      h.push_back(std::bit_cast<qd::half>(static_cast<std::uint16_t>(bits >> 48)));
    }
    qd::ndarray<std::int8_t, 1> d8(n), o8(n);
    qd::ndarray<std::int16_t, 1> d16(n), o16(n);
    qd::ndarray<std::uint16_t, 1> du16(n), ou16(n);
    qd::ndarray<std::uint64_t, 1> d64(n), o64(n);
    qd::ndarray<qd::half, 1> dh(n), oh(n);
    qd::ndarray<double, 2> o({n, 15});
    d8.from_host(a8), d16.from_host(a16), du16.from_host(au16), d64.from_host(a64), dh.from_host(h);
    for (auto [s8, s16, su16, s64] :
         {std::tuple<std::int8_t, std::int16_t, std::uint16_t, std::uint64_t>{std::int8_t{-128}, std::int16_t{32767},
                                                                              std::uint16_t{65535}, ~0ull},
          {std::int8_t{100}, std::int16_t{-3}, std::uint16_t{40000}, 0x8000000000000001ull}}) {
      qd_test::kernels::narrow_types()(d8, d16, du16, d64, dh, s8, s16, su16, s64, qd::half(1.0f / 3.0f), o, o8, o16,
                                       ou16, o64, oh);
      keep(out, o), keep(out, o8), keep(out, o16), keep(out, ou16), keep(out, o64), keep(out, oh);
    }
  });
  same_as_cpu([](outputs& out) {  // qd::random of each type: the CPU's streams
    auto k = qd::kernel("narrow_draws", {"a", "b", "c", "d", "e"},
                        [](qd::types::ndarray<std::int8_t, 1> a, qd::types::ndarray<std::int16_t, 1> b,
                           qd::types::ndarray<std::uint16_t, 1> c, qd::types::ndarray<std::uint64_t, 1> d,
                           qd::types::ndarray<qd::half, 1> e) {
                          qd::range_for(a.shape(0), [&](qd::i32 i) {
                            a[i] = qd::random<std::int8_t>(), b[i] = qd::random<std::int16_t>();
                            c[i] = qd::random<std::uint16_t>(), d[i] = qd::random<std::uint64_t>();
                            e[i] = qd::random<qd::half>();
                          });
                        });
    qd::ndarray<std::int8_t, 1> a(200);
    qd::ndarray<std::int16_t, 1> b(200);
    qd::ndarray<std::uint16_t, 1> c(200);
    qd::ndarray<std::uint64_t, 1> d(200);
    qd::ndarray<qd::half, 1> e(200);
    k(a, b, c, d, e);
    keep(out, a), keep(out, b), keep(out, c), keep(out, d), keep(out, e);
  });
  // qd::print of each type: the CPU's text.
  auto printed = [](qd::arch a) {
    REQUIRE(start(a));
    auto k = qd::kernel("print_narrow", {"a", "b", "c", "d", "e"},
                        [](qd::i8 a, qd::i16 b, qd::u16 c, qd::u64 d, qd::f16 e) { qd::print(a, b, c, d, e); });
    const std::string text = qd_test::capture_stdout(
        [&] { k(std::int8_t{-128}, std::int16_t{-32768}, std::uint16_t{65535}, ~0ull, qd::half(-2.5f)); });
    qd::reset();
    return text;
  };
  const std::string cpu = printed(qd::arch::cpu);
  CHECK(cpu == "-128 -32768 65535 18446744073709551615 -2.5\n");
  CHECK(printed(qd::arch::vulkan) == cpu);
}

TEST_CASE("vulkan: a failed qd::assert_ reports the CPU's message") {
  if (!have_vulkan()) return;
  auto message = [](qd::arch a) {
    REQUIRE(start(a, {.debug = true}));
    auto k = qd_test::kernels::checked_sqrt();
    qd::ndarray<float, 1> x(3);
    x.from_host(std::vector<float>{4.0f, 9.0f, 0.25f});
    k(x);
    CHECK(x.to_host() == std::vector<float>{2.0f, 3.0f, 0.5f});
    x.from_host(std::vector<float>{4.0f, -9.0f, 0.25f});
    std::string text;
    try {
      k(x);
      FAIL("a failed assertion did not fail the launch");
    } catch (const qd::user_error& e) {
      text = e.what();
    }
    x.from_host(std::vector<float>{1.0f, 1.0f, 1.0f});
    k(x);  // the device stays usable
    CHECK(x.to_host() == std::vector<float>(3, 1.0f));
    qd::reset();
    return text;
  };
  const std::string cpu = message(qd::arch::cpu);
  CHECK(cpu.find("kernel 'checked_sqrt': assertion failed at ") != std::string::npos);
  CHECK(cpu.find("x must not be negative") != std::string::npos);
  CHECK(message(qd::arch::vulkan) == cpu);
}

TEST_CASE("vulkan: what a device lacks is a qd::user_error naming the kernel, the type and the feature") {
  if (!have_vulkan()) return;
  auto vk = qd_test::open_vulkan();
  REQUIRE(vk);
  // lavapipe has f64, 64-bit atomics and 8- and 16-bit storage: a device without them is
  // simulated by emitting for a reduced target.
  qd::codegen::glsl_target reduced = vk->glsl_target();
  reduced.f64 = reduced.i64_atomics = reduced.f64_atomic_add = false;
  reduced.int8_storage = reduced.int16_storage = false;
  qd_test::run_options o;
  o.target = reduced;
  auto refused = [&](const qd::ir::function& fn, std::vector<qd_test::kernel_arg> args,
                     const std::vector<std::string>& words) {
    try {
      qd_test::run_kernel(*vk, fn, args, o);
      FAIL("a kernel needing a missing feature ran");
    } catch (const qd::user_error& e) {
      const std::string m = e.what();
      CAPTURE(m);
      CHECK(m.find("kernel 'test'") != std::string::npos);
      for (const std::string& w : words) CHECK(m.find(w) != std::string::npos);
    }
  };
  refused(qd_test::trace_kernel_ir([](qd::types::ndarray<std::uint64_t, 1> a) {
            qd::range_for(a.shape(0), [&](qd::i32 i) { qd::atomic_or(a[0], qd::cast<std::uint64_t>(i)); });
          }),
          {qd_test::kernel_arg::array(std::vector<std::uint64_t>(4))},
          {"u64 atomics need the Vulkan device feature shaderBufferInt64Atomics"});
  refused(qd_test::trace_kernel_ir([](qd::types::ndarray<float, 1> a) {
            qd::range_for(a.shape(0), [&](qd::i32 i) { a[i] = qd::atan2(a[i], 2.0f); });
          }),
          {qd_test::kernel_arg::array(std::vector<float>(4))},
          {"qd::atan2 of f32 values (computed in f64) need the Vulkan device feature shaderFloat64"});
  refused(qd_test::trace_kernel_ir([](qd::types::ndarray<qd::half, 1> a, qd::f64 d) {
            qd::range_for(a.shape(0), [&](qd::i32 i) { a[i] = qd::cast<qd::half>(d); });
          }),
          {qd_test::kernel_arg::array(std::vector<qd::half>(4)), qd_test::kernel_arg::scalar(0.5)},
          {"f64 values need the Vulkan device feature shaderFloat64", "use f32"});
  // What the reduced device has runs, with the reference's results: i8, i16 and f16
  // elements through 32-bit words, f16 and i8 atomics as word compare-and-swap loops.
  auto narrow =
      qd_test::trace_kernel_ir([](qd::types::ndarray<qd::half, 1> h, qd::types::ndarray<std::int8_t, 1> b,
                                  qd::types::ndarray<std::int16_t, 1> s, qd::types::ndarray<std::int8_t, 1> m) {
        qd::range_for(b.shape(0), [&](qd::i32 i) {
          qd::atomic_add(h[i % 3], qd::cast<qd::half>(b[i] % 16));
          qd::atomic_max(m[i % 5], qd::cast<std::int8_t>(i * 7));
          s[i] = qd::cast<std::int16_t>(s[i] * 3 + b[i]);
        });
      });
  std::vector<std::int8_t> bytes;
  std::vector<std::int16_t> shorts;
  for (int i = 0; i < 37; ++i)
    bytes.push_back(static_cast<std::int8_t>(i * 29 - 100)),
        shorts.push_back(static_cast<std::int16_t>(i * 3001 - 20000));
  std::vector<qd_test::kernel_arg> args = {qd_test::kernel_arg::array(std::vector<qd::half>(4, qd::half(0.5f))),
                                           qd_test::kernel_arg::array(bytes), qd_test::kernel_arg::array(shorts),
                                           qd_test::kernel_arg::array(std::vector<std::int8_t>(5, std::int8_t{-128}))};
  auto want = args;
  auto reference = qd::backend::reference::make_device();
  qd_test::run_kernel(*reference, narrow, want);
  qd_test::run_kernel(*vk, narrow, args, o);
  for (std::size_t k = 0; k < 4; ++k) CHECK(args[k].bytes == want[k].bytes);  // the f16 sums are exact in any order
}

TEST_CASE("vulkan: compile_only stores SPIR-V without a device, and a program with the device loads it") {
  if (!have_vulkan()) return;
  qd_test::fresh_dir cache("vulkan-compile-only");
  qd::config c{.offline_cache_file_path = cache.str(), .compile_only = true};
  REQUIRE(start(qd::arch::vulkan, c));
  int constructs = 0;
  {
    auto t = kernels::running_total();
    t.compile();
    constructs = t.per_offload_cache_observations().frontend_constructs_total;
    CHECK(constructs >= 4);
    CHECK(t.per_offload_cache_observations().constructs_compiled == constructs);
    // Nothing can be allocated or run without a device.
    CHECK_THROWS_AS((qd::ndarray<float, 1>(4)), qd::user_error);
  }
  const auto stored = qd::offline_cache_statistics();
  CHECK(stored.stores >= static_cast<std::uint64_t>(constructs) + 1);  // a record and a SPIR-V module per construct
  qd::reset();

  c.compile_only = false;
  REQUIRE(start(qd::arch::vulkan, c));
  auto t = kernels::running_total();
  qd::ndarray<std::int32_t, 1> xi(10), oi(3);
  qd::ndarray<float, 1> xf(10), of(1);
  xi.fill(2), xf.fill(0.25f);
  t(xi, oi, xf, of);
  CHECK(qd::offline_cache_statistics().compiles == 0);
  CHECK(t.per_offload_cache_observations().constructs_loaded == constructs);
  CHECK(oi.to_host() == std::vector<std::int32_t>{20, 21, 22});
  CHECK(of.to_host() == std::vector<float>{2.5f});
  qd::reset();

  // Every stored entry corrupted in its middle: each is a miss, rebuilt, never loaded.
  int corrupted = 0;
  for (const auto& f : std::filesystem::recursive_directory_iterator(cache.path())) {
    if (!f.is_regular_file() || f.file_size() < 16) continue;
    std::fstream io(f.path(), std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(static_cast<std::streamoff>(f.file_size() / 2));
    char byte = 0;
    io.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x5a);
    io.seekp(static_cast<std::streamoff>(f.file_size() / 2));
    io.write(&byte, 1);
    ++corrupted;
  }
  CHECK(corrupted >= constructs + 1);
  REQUIRE(start(qd::arch::vulkan, c));
  auto again = kernels::running_total();
  qd::ndarray<std::int32_t, 1> xi2(10), oi2(3);
  qd::ndarray<float, 1> xf2(10), of2(1);
  xi2.fill(2), xf2.fill(0.25f);
  again(xi2, oi2, xf2, of2);
  CHECK(oi2.to_host() == std::vector<std::int32_t>{20, 21, 22});
  CHECK(again.per_offload_cache_observations().constructs_loaded == 0);
  CHECK(qd::offline_cache_statistics().compiles > 0);
  qd::reset();
}

TEST_CASE("vulkan: without a Vulkan loader, arch = vulkan falls back to the CPU with one warning") {
  // The loader is opened once per process, so the check runs in a fresh one: this test
  // binary again, with QD_VULKAN_PATH naming no library, running only this test.
  if (std::getenv("QD_TEST_NO_VULKAN_LOADER")) {
    int warnings = 0;
    std::string text;
    qd::set_log_sink([&](qd::log_level level, std::string_view m) {
      if (level == qd::log_level::warn) ++warnings, text = m;
    });
    qd::init({.arch = qd::arch::vulkan});
    CHECK(qd::current_settings().arch == qd::arch::cpu);
    CHECK(warnings == 1);
    CHECK(text.find("falling back to arch = cpu") != std::string::npos);
    CHECK(text.find("QD_VULKAN_PATH") != std::string::npos);
    auto t = kernels::running_total();
    qd::ndarray<std::int32_t, 1> xi(3), oi(1);
    qd::ndarray<float, 1> xf(3), of(1);
    xi.fill(1), xf.fill(1.0f);
    t(xi, oi, xf, of);
    CHECK(oi.to_host()[0] == 3);
    qd::reset();
    return;
  }
  std::fflush(nullptr);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::setenv("QD_VULKAN_PATH", "/nonexistent/libvulkan.so.1", 1);
    ::setenv("QD_TEST_NO_VULKAN_LOADER", "1", 1);
    ::execl("/proc/self/exe", "vulkan_runtime_test", "--test-case=vulkan: without a Vulkan loader*", "--no-version",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
