// The reference backend (arch::reference): selectable like any arch, computes bitwise
// what the CPU backend computes (edge cases of every operation, random draws, reductions,
// prints), runs the split, is deterministic, checks every index, and rejects malformed IR.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <quadrants/backend/reference/interpreter.hpp>

#include "ir/ir_fixtures.hpp"
#include "runtime/runtime_test_support.hpp"

using doctest::Contains;

namespace {

void init_arch(qd::arch a, qd::per_offload_mode mode = qd::per_offload_mode::automatic) {
  qd::init({.arch = a, .offline_cache = mode == qd::per_offload_mode::on, .per_offload = mode});
}

template <class T>
std::vector<std::uint64_t> bits_of(const std::vector<T>& v) {
  std::vector<std::uint64_t> out;
  for (const T& x : v) {
    std::uint64_t b = 0;
    std::memcpy(&b, &x, sizeof(T));
    out.push_back(b);
  }
  return out;
}

// Runs `run` (which creates its arrays, launches, and returns the results) on the
// CPU and on the reference backend and checks that the results are bitwise equal.
template <class Run>
void check_same_on_cpu_and_reference(Run run) {
  init_arch(qd::arch::cpu);
  auto cpu = bits_of(run());
  init_arch(qd::arch::reference);
  auto reference = bits_of(run());
  REQUIRE(cpu.size() == reference.size());
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    INFO("element " << i);
    CHECK(cpu[i] == reference[i]);
  }
}

const std::vector<std::int32_t> edge_i32 = {
    0, 1, -1, 2, -7, 31, 33, 100, std::numeric_limits<std::int32_t>::max(), std::numeric_limits<std::int32_t>::min()};
const std::vector<std::int64_t> edge_i64 = {
    0, 1, -1, 3, -9, 63, 65, std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min()};
const std::vector<std::uint32_t> edge_u32 = {0, 1, 2, 31, 33, 0x80000000u, 0xffffffffu, 12345};
const std::vector<float> edge_f32 = {0.0f,
                                     -0.0f,
                                     1.5f,
                                     -2.25f,
                                     1e30f,
                                     -1e-30f,
                                     std::numeric_limits<float>::infinity(),
                                     -std::numeric_limits<float>::infinity(),
                                     std::numeric_limits<float>::quiet_NaN(),
                                     3.0f,
                                     0.1f,
                                     1e-45f};

template <class T>
auto integer_kernel() {
  return qd::kernel("integer_edges", {"x", "out"}, [](qd::types::ndarray<T, 1> x, qd::types::ndarray<T, 2> out) {
    qd::range_for(qd::ndrange(x.shape(0), x.shape(0)), [&](qd::i32 i, qd::i32 j) {
      qd::expr<T> a = x[i];
      qd::expr<T> b = x[j];
      qd::i32 r = i * x.shape(0) + j;
      int c = 0;
      auto put = [&](const qd::expr<T>& v) { out(r, c++) = v; };
      put(a + b), put(a - b), put(a * b), put(a / b), put(a % b), put(a << b), put(a >> b);
      put(a & b), put(a | b), put(a ^ b), put(qd::min(a, b)), put(qd::max(a, b));
      put(qd::cast<T>(-a)), put(~a), put(qd::abs(a));
      put(qd::cast<T>(a < b)), put(qd::cast<T>(a == b)), put(qd::cast<T>(a != 0 && b != 0));
      put(qd::select(a > b, a, b));
    });
  });
}

template <class T>
std::vector<T> run_integer_kernel(const std::vector<T>& values) {
  auto k = integer_kernel<T>();
  const auto n = static_cast<std::int64_t>(values.size());
  qd::ndarray<T, 1> x(n);
  qd::ndarray<T, 2> out({n * n, 19});
  x.from_host(values);
  k(x, out);
  return out.to_host();
}

}  // namespace

TEST_CASE("arch reference is selected by name or QD_ARCH, and always checks bounds") {
  CHECK(qd::name(qd::arch::reference) == "reference");
  {
    qd_test::scoped_env arch("QD_ARCH", "reference");
    qd::init();
    CHECK(qd::current_settings().arch == qd::arch::reference);
    CHECK(qd::current_settings().check_out_of_bound);
  }
  init_arch(qd::arch::reference);
  CHECK(qd::current_settings().arch == qd::arch::reference);
  qd::reset();
}

TEST_CASE("integer operations match the CPU bitwise at their edges (division by 0, MIN / -1, wide shifts)") {
  SUBCASE("i32") {
    check_same_on_cpu_and_reference([] { return run_integer_kernel<std::int32_t>(edge_i32); });
  }
  SUBCASE("i64") {
    check_same_on_cpu_and_reference([] { return run_integer_kernel<std::int64_t>(edge_i64); });
  }
  SUBCASE("u32") {
    check_same_on_cpu_and_reference([] { return run_integer_kernel<std::uint32_t>(edge_u32); });
  }
}

TEST_CASE("float operations, math functions and conversions match the CPU bitwise (NaN, -0, infinities)") {
  check_same_on_cpu_and_reference([] {
    auto k = qd::kernel(
        "float_edges", {"x", "out", "ints"},
        [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 2> out, qd::types::ndarray<std::int32_t, 2> ints) {
          qd::range_for(qd::ndrange(x.shape(0), x.shape(0)), [&](qd::i32 i, qd::i32 j) {
            qd::f32 a = x[i];
            qd::f32 b = x[j];
            qd::i32 r = i * x.shape(0) + j;
            int c = 0;
            auto put = [&](const qd::f32& v) { out(r, c++) = v; };
            put(a + b), put(a - b), put(a * b), put(a / b), put(-a), put(qd::min(a, b));
            put(qd::max(a, b)), put(qd::sqrt(a)), put(qd::exp(a)), put(qd::log(a)), put(qd::sin(a));
            put(qd::cos(a)), put(qd::tanh(a)), put(qd::floor(a)), put(qd::ceil(a)), put(qd::abs(a));
            put(qd::pow(a, b)), put(qd::fma(a, b, a)), put(qd::cast<float>(qd::cast<double>(a) * 3.0));
            put(qd::cast<float>(a < b)), put(qd::cast<float>(a != 0.0f));
            // In-range conversions only: C++ leaves the others undefined.
            qd::f32 clamped = qd::select(a != a, 0.0f, qd::min(qd::max(a, -1e9f), 1e9f));
            ints(r, 0) = qd::cast<std::int32_t>(clamped);
            ints(r, 1) = qd::cast<std::int32_t>(qd::cast<std::uint8_t>(qd::abs(clamped) * 0.0f + 200.7f));
          });
        });
    const auto n = static_cast<std::int64_t>(edge_f32.size());
    qd::ndarray<float, 1> x(n);
    qd::ndarray<float, 2> out({n * n, 21});
    qd::ndarray<std::int32_t, 2> ints({n * n, 2});
    x.from_host(edge_f32);
    k(x, out, ints);
    std::vector<float> all = out.to_host();
    for (std::int32_t v : ints.to_host()) all.push_back(std::bit_cast<float>(v));
    return all;
  });
}

TEST_CASE("random draws, 3-D loops, serial loops, while loops and float reductions match the CPU bitwise") {
  check_same_on_cpu_and_reference([] {
    auto k = qd::kernel("mixed", {"grid", "sums", "n"},
                        [](qd::types::ndarray<float, 3> grid, qd::types::ndarray<double, 1> sums, qd::i32 n) {
                          qd::var<double> total = 0.0;
                          qd::var<float> low = 1.0f;
                          qd::range_for(qd::ndrange(grid.shape(0), grid.shape(1), grid.shape(2)),
                                        [&](qd::i32 i, qd::i32 j, qd::i32 k) {
                                          qd::f32 r = qd::random<float>();
                                          grid(i, j, k) = r + qd::cast<float>(qd::random<std::int32_t>() % 7);
                                          total += qd::cast<double>(r);
                                          qd::atomic_min(low, r);
                                        });
                          qd::range_for(3, [&](qd::i32 i) {
                            qd::var<std::int32_t> steps = 0;
                            qd::while_([&] { return steps < n + i; }, [&] { steps += 1; });
                            qd::range_for(0, steps, [&](qd::i32 s) { sums[i] += qd::cast<double>(s) * 0.5; });
                          });
                          sums[3] = total;
                          sums[4] = qd::cast<double>(low);
                          sums[5] = qd::cast<double>(qd::random<double>());
                        });
    qd::ndarray<float, 3> grid({3, 4, 5});
    qd::ndarray<double, 1> sums(6);
    k(grid, sums, 4);
    std::vector<double> all = sums.to_host();
    for (float f : grid.to_host()) all.push_back(static_cast<double>(f));
    return all;
  });
}

TEST_CASE("prints give the CPU's text") {
  auto k = qd::kernel("printer", {"x"}, [](qd::types::ndarray<float, 1> x) {
    qd::range_for(x.shape(0),
                  [&](qd::i32 i) { qd::print("x[", i, "] =", x[i], "100%", qd::cast<std::int64_t>(i) - 5); });
    qd::print("done", qd::cast<std::uint32_t>(x.shape(0)), x.shape(0) > 2);
  });
  std::string text[2];
  int a = 0;
  for (qd::arch arch : {qd::arch::cpu, qd::arch::reference}) {
    init_arch(arch);
    qd::ndarray<float, 1> x(4);
    x.from_host(std::vector<float>{0.5f, -1e20f, 3.0f, std::numeric_limits<float>::quiet_NaN()});
    text[a++] = qd_test::capture_stdout([&] { k(x); });
  }
  CHECK(text[0] == text[1]);
  CHECK(text[1].find("x[ 1 ] = -1e+20 100% -4\n") != std::string::npos);
  CHECK(text[1].find("done 4 1\n") != std::string::npos);
}

TEST_CASE("the split runs on the reference backend and gives the whole kernel's results") {
  auto k = qd::kernel("two_loops", {"x", "out"}, [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out) {
    qd::f32 scale = qd::cast<float>(x.shape(0)) * 0.5f;
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * scale; });
    qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = x[i] + scale; });
  });
  std::vector<float> results[2];
  int a = 0;
  for (auto mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
    init_arch(qd::arch::reference, mode);  // ctest gives each test a private cache directory
    qd::ndarray<float, 1> x(8), out(8);
    x.fill(2.0f);
    k(x, out);
    results[a++] = out.to_host();
    auto obs = k.per_offload_cache_observations();
    CHECK(obs.frontend_constructs_total == (mode == qd::per_offload_mode::on ? 2 : -1));
  }
  CHECK(results[0] == results[1]);
  CHECK(results[1][0] == 8.0f + 4.0f);
}

TEST_CASE("the reference backend is deterministic: the same launches give the same bits") {
  auto k = qd::kernel("racy", {"x"}, [](qd::types::ndarray<float, 1> x) {
    qd::range_for(64, [&](qd::i32 i) { x[i % 4] = x[(i + 1) % 4] * 0.5f + qd::random<float>(); });
  });
  std::vector<float> first;
  for (int run = 0; run < 2; ++run) {
    init_arch(qd::arch::reference);
    qd::ndarray<float, 1> x(4);
    x.fill(1.0f);
    k(x);
    if (run == 0)
      first = x.to_host();
    else
      CHECK(x.to_host() == first);
  }
}

TEST_CASE("an out-of-range index is a user_error naming kernel, parameter, dimension, index and extent") {
  init_arch(qd::arch::reference);
  auto k =
      qd::kernel("overrun", {"src", "dst"}, [](qd::types::ndarray<float, 2> src, qd::types::ndarray<float, 1> dst) {
        qd::range_for(dst.shape(0), [&](qd::i32 i) { dst[i] = src(i, i + 3) + 1.0f; });
      });
  qd::ndarray<float, 2> src({4, 5});
  qd::ndarray<float, 1> dst(4);
  src.fill(1.0f);
  CHECK_THROWS_WITH_AS(k(src, dst), Contains("kernel 'overrun', parameter 'src' (#0"), qd::user_error);
  CHECK_THROWS_WITH_AS(k(src, dst), Contains("index 5 is out of range for dimension 1 (extent 5)"), qd::user_error);
  // The access was skipped (a load gives 0); the in-range iterations ran.
  CHECK(dst.to_host() == std::vector<float>{2.0f, 2.0f, 1.0f, 1.0f});
}

TEST_CASE("the interpreter, used directly: the prologue runs per iteration, and malformed IR is an internal error") {
  // stale_snapshot's second loop as the split would lower it: the prologue re-reads
  // a[0] in every iteration, so a loop writing a[0] is visible to later iterations.
  qd::ir::function fn;
  qd::ir::builder b(fn);
  b.add_param({true, qd::dtype::f32, 1, false});
  std::array<qd::ir::id, 1> zero{b.constant_int(qd::dtype::i32, 0)};
  qd::ir::id first = b.global_load(0, 0, zero);
  qd::ir::id loop = b.range_for(b.constant_int(qd::dtype::i32, 0), b.shape(0, 0));
  b.push_block(fn.at(loop).block0);
  std::array<qd::ir::id, 1> i{b.loop_index_of(loop)};
  b.global_store(0, 0, i,
                 b.binary(qd::ir::binary_op::add, qd::dtype::f32, first, b.constant_float(qd::dtype::f32, 1.0)));
  b.pop_block();
  qd::codegen::lowered_task task{fn, true, 0, {0}};
  qd::backend::reference::task_interpreter interpreter(task);
  std::vector<float> a(4, 0.0f);
  qd::backend::array_abi arrays[1] = {{a.data(), nullptr, {4, 0, 0, 0}}};
  std::uint64_t scalars[1] = {0};
  std::int64_t error[5] = {0, 0, 0, 0, 0};
  interpreter.run({arrays, scalars, 1, nullptr, 0, error, true});
  CHECK(a == std::vector<float>{1.0f, 2.0f, 2.0f, 2.0f});  // once before the loop: all 1

  SUBCASE("an out-of-range index without the error record throws at once") {
    std::array<qd::ir::id, 1> far{b.constant_int(qd::dtype::i32, 9)};
    b.global_store(0, 0, far, first);
    qd::codegen::lowered_task serial{fn, false, 0, {0}};
    qd::backend::reference::task_interpreter bad(serial);
    CHECK_THROWS_WITH_AS(bad.run({arrays, scalars, 1, nullptr, 0, nullptr, false}),
                         Contains("index 9 is out of range for dimension 0 (extent 4)"), qd::user_error);
  }
  SUBCASE("ill-typed IR") {
    b.global_store(0, 0, zero, b.constant_int(qd::dtype::i32, 1));  // an i32 into an f32 array
    qd::codegen::lowered_task serial{fn, false, 0, {0}};
    CHECK_THROWS_WITH_AS(qd::backend::reference::task_interpreter{serial}, Contains("stored value of type i32"),
                         qd::internal_error);
  }
  SUBCASE("a parallel task must end with its loop") {
    b.print({b.add_string("after")});
    qd::codegen::lowered_task parallel{fn, true, 0, {0}};
    CHECK_THROWS_WITH_AS(qd::backend::reference::task_interpreter{parallel}, Contains("must end with its loop"),
                         qd::internal_error);
  }
}

// The reference is the oracle: its atomics must be atomic for real when launches run on
// several host threads and concurrent branches (a plain read-modify-write lost 4-25 % of
// these updates).
TEST_CASE("reference atomics lose no update to concurrent branches and concurrent host threads") {
  init_arch(qd::arch::reference);
  auto count = qd::kernel("contended", {"count", "n"}, [](qd::types::ndarray<std::int64_t, 1> c, qd::i32 n) {
    qd::concurrent([&] { qd::range_for(n, [&](qd::i32) { qd::atomic_add(c[0], 1); }); },
                   [&] { qd::range_for(n, [&](qd::i32) { c[0] += 1; }); });  // a compound update: atomic
  });
  auto others = qd::kernel("contended_kinds", {"sum", "cas", "bits", "n"},
                           [](qd::types::ndarray<double, 1> sum, qd::types::ndarray<std::int32_t, 1> cas,
                              qd::types::ndarray<std::uint32_t, 1> bits, qd::i32 n) {
                             auto body = [&](qd::i32 i) {
                               sum[0] += 0.5;
                               qd::atomic_xor(bits[0], qd::cast<std::uint32_t>(i) * 2654435761u);
                               qd::var<std::int32_t> seen = qd::volatile_load(cas[0]);
                               qd::var<std::int32_t> done = 0;
                               qd::while_([&] { return done == 0; },
                                          [&] {
                                            qd::i32 old = qd::atomic_cas(cas[0], seen, seen + 1);
                                            qd::if_(old == seen, [&] { done = 1; }).else_([&] { seen = old; });
                                          });
                             };
                             qd::concurrent([&] { qd::range_for(n, body); }, [&] { qd::range_for(n, body); });
                           });
  const std::int32_t n = 1638400;  // 2 host threads x 2 branches x n = 6,553,600 updates
  qd::ndarray<std::int64_t, 1> c(1);
  c.fill(0);
  count.compile();
  std::thread other([&] { count(c, n); });
  count(c, n);
  other.join();
  CHECK(c.to_host()[0] == 6553600);

  const std::int32_t m = 50000;
  qd::ndarray<double, 1> sum(1);
  qd::ndarray<std::int32_t, 1> cas(1);
  qd::ndarray<std::uint32_t, 1> bits(1);
  sum.fill(0.0), cas.fill(0), bits.fill(0u);
  others.compile();
  std::thread another([&] { others(sum, cas, bits, m); });
  others(sum, cas, bits, m);
  another.join();
  CHECK(sum.to_host()[0] == 0.5 * 4 * m);  // halves: every partial sum is exact
  CHECK(cas.to_host()[0] == 4 * m);
  CHECK(bits.to_host()[0] == 0u);  // each value xor-ed in an even number of times
}
