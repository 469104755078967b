// Expressions of the third wave (SPEC §13.4) against plain C++, on the CPU and the
// reference backend: short-circuit && and ||, the C++ type of operations on C++ values
// only, qd::assert_ under config.debug, random draws in source order whatever the
// compiler's evaluation order, vector indices and brace assignment.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "quadrants/analysis/split.hpp"
#include "quadrants/analysis/task_plan.hpp"
#include "quadrants/codegen/lower.hpp"
#include "quadrants/ir/verify.hpp"
#include "quadrants/runtime/pipeline/kernel_state.hpp"
#include "runtime/runtime_test_support.hpp"
#include "support/fresh_dir.hpp"

using doctest::Contains;

namespace {

using qd_test::init_arch;
constexpr auto& arches = qd_test::cpu_and_reference;

// qd::select of two C++ values takes their C++ type; with a traced operand, the traced type.
static_assert(std::is_same_v<decltype(qd::select(std::declval<qd::boolean>(), -9.8, 0.1)), qd::f64>);
static_assert(std::is_same_v<decltype(qd::select(std::declval<qd::boolean>(), 1, 2)), qd::i32>);
static_assert(std::is_same_v<decltype(qd::select(std::declval<qd::boolean>(), 1.0f, 2.0f)), qd::f32>);
static_assert(std::is_same_v<decltype(qd::select(std::declval<qd::boolean>(), 1, 2.5)), qd::f64>);
static_assert(std::is_same_v<decltype(qd::select(std::declval<qd::boolean>(), 1u, 2)), qd::u32>);
static_assert(std::is_same_v<decltype(qd::select(std::declval<qd::boolean>(), true, false)), qd::boolean>);
static_assert(std::is_same_v<decltype(qd::select(std::declval<qd::boolean>(), std::declval<qd::f32>(), 0.1)), qd::f32>);
static_assert(std::is_same_v<decltype(std::declval<qd::f32>() * 0.1), qd::f32>);

}  // namespace

TEST_CASE("&& and || skip their right operand: i < n && x[i] > 0 never reads x[n], with bounds checks on") {
  for (qd::arch a : arches) {
    CAPTURE(a);
    init_arch(a, {.check_out_of_bound = true});
    const int count = 37;
    auto k = qd::kernel("guarded", {"x", "out", "hits"},
                        [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 2> out,
                           qd::types::ndarray<std::int32_t, 1> hits) {
                          qd::range_for(x.shape(0) + 3, [&](qd::i32 i) {
                            const qd::i32 n = x.shape(0);  // NOLINT
                            out(i, 0) = qd::select(i < n && x[i] > 0.0f, 1, 0);
                            out(i, 1) = qd::select(i >= n || x[i] > 0.0f, 1, 0);
                            // The right operand's atomic runs only where the left one is true.
                            out(i, 2) = qd::select(i < n && qd::atomic_add(hits[0], 1) >= 0, 1, 0);
                            // Chains and nesting: each load guarded by the operands before it.
                            out(i, 3) = qd::select(i < n && x[i] > 0.0f && x[i] < 2.0f, 1, 0);
                            out(i, 4) = qd::select(i >= n || (x[i] < 0.0f && (x[i] < -1.0f || x[i] > -0.5f)), 1, 0);
                            // C++ bools on either side, a qd::var on the left.
                            qd::var<bool> inside = i < n;
                            out(i, 5) = qd::select(inside && x[qd::min(i, n - 1)] > 0.0f && true, 1, 0);
                            out(i, 6) = qd::select(false || (inside && x[qd::min(i, n - 1)] > 0.0f), 1, 0);
                          });
                        });
    const int n = count;
    std::vector<float> h(n);
    for (int i = 0; i < n; ++i) h[static_cast<std::size_t>(i)] = static_cast<float>((i * 7) % 11) * 0.5f - 2.0f;
    qd::ndarray<float, 1> x(n);
    x.from_host(h);
    qd::ndarray<std::int32_t, 2> out({n + 3, 7});
    qd::ndarray<std::int32_t, 1> hits(1);
    CHECK_NOTHROW(k(x, out, hits));  // no out-of-range index reported
    const auto got = out.to_host();
    int want_hits = 0;
    for (int i = 0; i < n + 3; ++i) {
      CAPTURE(i);
      const bool in = i < n;
      const float v = in ? h[static_cast<std::size_t>(i)] : 0.0f;
      const int want[7] = {in && v > 0.0f,
                           !in || v > 0.0f,
                           in,
                           in && v > 0.0f && v < 2.0f,
                           !in || (v < 0.0f && (v < -1.0f || v > -0.5f)),
                           in && v > 0.0f,
                           in && v > 0.0f};
      want_hits += in;
      for (int c = 0; c < 7; ++c) {
        CAPTURE(c);
        CHECK(got[static_cast<std::size_t>(i * 7 + c)] == want[c]);
      }
    }
    CHECK(hits.to_host()[0] == want_hits);
    qd::reset();
  }
}

TEST_CASE("a short circuit in a qd::while_ condition and under qd::if_ / .else_ guards its loads") {
  for (qd::arch a : arches) {
    CAPTURE(a);
    init_arch(a, {.check_out_of_bound = true});
    auto k = qd::kernel("scan", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 1> out) {
      qd::range_for(2, [&](qd::i32 r) {
        qd::var<std::int32_t> i = 0;
        qd::while_([&] { return i < x.shape(0) && x[i] > qd::cast<float>(r); }, [&] { i += 1; });
        qd::if_(i >= x.shape(0) || x[i] < 0.0f, [&] { out[r] = i; }).else_([&] { out[r] = -i; });
      });
    });
    qd::ndarray<float, 1> x(5);
    x.from_host(std::vector<float>{3.0f, 0.5f, 4.0f, 5.0f, 6.0f});
    qd::ndarray<std::int32_t, 1> out(2);
    CHECK_NOTHROW(k(x, out));  // r = 0 runs off the end: x[5] is never read
    CHECK(out.to_host() == std::vector<std::int32_t>{5, -1});
    x.from_host(std::vector<float>{3.0f, -2.0f, 4.0f, 5.0f, 6.0f});
    k(x, out);
    CHECK(out.to_host() == std::vector<std::int32_t>{1, 1});
    qd::reset();
  }
}

TEST_CASE("a short circuit at the top level guards a load, and splits like any top-level value") {
  for (auto mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
    CAPTURE(mode);
    init_arch(qd::arch::cpu, {.per_offload = mode, .check_out_of_bound = true});
    auto k = qd::kernel("top_guard", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out) {
      qd::boolean ok = x.shape(0) > 4 && x[4] > 0.0f;  // x may have 4 elements
      qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = qd::select(ok, 1.0f, -1.0f); });
    });
    qd::ndarray<float, 1> small(4), big(5), out(3);
    small.fill(1.0f);
    big.fill(1.0f);
    CHECK_NOTHROW(k(small, out));
    CHECK(out.to_host() == std::vector<float>{-1.0f, -1.0f, -1.0f});
    k(big, out);
    CHECK(out.to_host() == std::vector<float>{1.0f, 1.0f, 1.0f});
    qd::reset();
  }
}

TEST_CASE("a right operand of pure arithmetic needs no branch; one that reads memory is one qd::if_") {
  qd_test::init_cpu();
  auto pure = qd::kernel("pure_and", [](qd::types::ndarray<std::int32_t, 1> out) {
    qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = qd::select(i > 2 && i < 5, 1, 0); });
  });
  auto loads = qd::kernel("load_and", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 1> out) {
    qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = qd::select(i < x.shape(0) && x[i] > 0.0f, 1, 0); });
  });
  CHECK(pure.ir().find("if_") == std::string::npos);
  CHECK(pure.ir().find("logical_and") != std::string::npos);
  const std::string guarded = loads.ir();
  const auto branch = guarded.find("if_");
  REQUIRE(branch != std::string::npos);
  CHECK(guarded.find("global_load", branch) != std::string::npos);  // the load is inside the branch
  CHECK(guarded.find("global_load") > branch);
  qd::ndarray<std::int32_t, 1> out(8);
  pure(out);
  CHECK(out.to_host() == std::vector<std::int32_t>{0, 0, 0, 1, 1, 0, 0, 0});
  qd::reset();
}

TEST_CASE("an operation on C++ values only takes their C++ type: select(c, -9.8, 0.1) stores exactly -9.8") {
  for (qd::arch a : arches) {
    CAPTURE(a);
    init_arch(a);
    auto k = qd::kernel("literal_types", [](qd::types::ndarray<double, 1> d, qd::types::ndarray<std::int64_t, 1> big,
                                            qd::types::ndarray<float, 1> f) {
      qd::range_for(1, [&](qd::i32 i) {
        d[0] = qd::select(i == 0, -9.8, 0.1);
        d[1] = qd::select(i != 0, -9.8, 0.1);
        big[0] = qd::select(i == 0, std::int64_t{1} << 40, 2);
        f[0] = qd::select(i == 0, f[1], 0.1);  // a traced operand: f32, the literal rounded to it
        f[2] = qd::select(i != 0, f[1], 0.1);
      });
    });
    qd::ndarray<double, 1> d(2);
    qd::ndarray<std::int64_t, 1> big(1);
    qd::ndarray<float, 1> f(3);
    f.from_host(std::vector<float>{0.0f, 2.5f, 0.0f});
    k(d, big, f);
    CHECK(d.to_host() == std::vector<double>{-9.8, 0.1});
    CHECK(big.to_host()[0] == std::int64_t{1} << 40);
    CHECK(f.to_host() == std::vector<float>{2.5f, 2.5f, 0.1f});
    qd::reset();
  }
}

namespace {
auto checked_kernel() {
  return qd::kernel("checked", {"x"}, [](qd::types::ndarray<float, 1> x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      qd::assert_(x[i] >= 0.0f, "x must not be negative");
      x[i] = qd::sqrt(x[i]);
    });
  });
}
}  // namespace

TEST_CASE(
    "qd::assert_ fails the launch under debug, naming the kernel, the message and the line; off it is compiled out") {
  for (qd::arch a : arches) {
    CAPTURE(a);
    auto k = checked_kernel();
    qd_test::fresh_dir cache("expressions-assert");
    init_arch(a, {.offline_cache_file_path = cache.str(), .debug = true});
    CHECK(qd::current_settings().check_out_of_bound);  // debug turns bounds checks on
    qd::ndarray<float, 1> x(5);
    x.from_host(std::vector<float>{4.0f, 9.0f, 1.0f, 16.0f, 0.0f});
    CHECK_NOTHROW(k(x));
    CHECK(x.to_host() == std::vector<float>{2.0f, 3.0f, 1.0f, 4.0f, 0.0f});
    CHECK(k.ir().find("assertion #0 failed") != std::string::npos);
    x.from_host(std::vector<float>{4.0f, -9.0f, 1.0f, 16.0f, 0.0f});
    CHECK_THROWS_WITH_AS(k(x), Contains("kernel 'checked': assertion failed at "), qd::user_error);
    CHECK_THROWS_WITH_AS(k(x), Contains("expressions_test.cpp:"), qd::user_error);
    CHECK_THROWS_WITH_AS(k(x), Contains("x must not be negative"), qd::user_error);

    // The same kernel in a program without debug: traced again without the check, and
    // compiled under keys of its own (a debug build's code is never reused).
    init_arch(a, {.offline_cache_file_path = cache.str()});
    qd::ndarray<float, 1> y(5);
    y.from_host(std::vector<float>{4.0f, -9.0f, 1.0f, 16.0f, 0.0f});
    CHECK_NOTHROW(k(y));
    CHECK(k.ir().find("assertion") == std::string::npos);
    if (a == qd::arch::cpu) CHECK(k.per_offload_cache_observations().constructs_compiled == 1);
    qd::reset();
  }
}

TEST_CASE("QD_DEBUG=1 turns debug and bounds checks on") {
  qd_test::scoped_env debug("QD_DEBUG", "1");
  qd_test::init_cpu();
  CHECK(qd::current_settings().debug);
  CHECK(qd::current_settings().check_out_of_bound);
  auto k = checked_kernel();
  qd::ndarray<float, 1> x(1);
  x.fill(-1.0f);
  CHECK_THROWS_WITH_AS(k(x), Contains("x must not be negative"), qd::user_error);
  qd::reset();
}

namespace {
// Two draws written at l1 and l2, traced in the order given.
std::vector<float> two_draws(bool l1_first, qd::source_location l1, qd::source_location l2) {
  qd_test::init_cpu({.random_seed = 11});
  auto k = qd::kernel("two_draws", [=](qd::types::ndarray<float, 2> out) {
    qd::range_for(out.shape(0), [&](qd::i32 i) {
      if (l1_first) {
        qd::f32 a = qd::random<float>(l1);
        qd::f32 b = qd::random<float>(l2);
        out(i, 0) = a, out(i, 1) = b;
      } else {
        qd::f32 b = qd::random<float>(l2);
        qd::f32 a = qd::random<float>(l1);
        out(i, 0) = a, out(i, 1) = b;
      }
    });
  });
  qd::ndarray<float, 2> out({4, 2});
  k(out);
  auto values = out.to_host();
  qd::reset();
  return values;
}
}  // namespace

TEST_CASE("draws of one expression take stream positions in source order, whatever order C++ evaluates them in") {
  // Two locations on one line: l1 is written before l2. Each draw is one statement, so
  // the order is forced: first l1 then l2, then l2 then l1. Both give each location the
  // same numbers, as g++ (arguments right to left) and clang++ (left to right) do.
  constexpr auto l1 = qd::source_location::current();
  constexpr auto l2 = qd::source_location::current();
  (void)l1;
  (void)l2;
  // Statements are sequenced, so the order between them is the order written: the
  // first draw comes first in the stream, wherever it is written.
  const auto forward = two_draws(true, l1, l2);
  const auto backward = two_draws(false, l1, l2);
  CHECK(forward[0] != backward[0]);  // separate statements keep their order
  // In one expression, the compiler's order does not matter.
  auto run = [&](auto body) {
    qd_test::init_cpu({.random_seed = 11});
    auto k = qd::kernel("one_expression", [&](qd::types::ndarray<float, 2> out) {
      qd::range_for(out.shape(0), [&](qd::i32 i) { body(out, i); });
    });
    qd::ndarray<float, 2> out({4, 2});
    k(out);
    auto values = out.to_host();
    qd::reset();
    return values;
  };
  // Braced initialization evaluates left to right, on every compiler: written l1, l2
  // and written l2, l1 give each location the numbers of the sequenced statements above.
  const auto left_to_right = run([&](auto& out, qd::i32 i) {
    std::array<qd::f32, 2> v{qd::random<float>(l1), qd::random<float>(l2)};
    out(i, 0) = v[0], out(i, 1) = v[1];
  });
  const auto right_to_left = run([&](auto& out, qd::i32 i) {
    std::array<qd::f32, 2> v{qd::random<float>(l2), qd::random<float>(l1)};  // l2 traced first
    out(i, 0) = v[1], out(i, 1) = v[0];
  });
  CHECK(left_to_right == forward);
  CHECK(right_to_left == forward);
  // The idiom of the issue: each compiler's own order, the same numbers.
  const auto vec2 = run([&](auto& out, qd::i32 i) {
    qd::vec2f v(qd::random<float>(), qd::random<float>());
    out(i, 0) = v[0], out(i, 1) = v[1];
  });
  const auto sequenced = run([&](auto& out, qd::i32 i) {
    qd::f32 a = qd::random<float>();
    qd::f32 b = qd::random<float>();
    out(i, 0) = a, out(i, 1) = b;
  });
  CHECK(vec2 == sequenced);
  for (float v : vec2) CHECK((v >= 0.0f && v < 1.0f));
}

TEST_CASE("an array of rank 2 is indexed with a qd::vec2i; a vector element takes a braced value") {
  for (qd::arch a : arches) {
    CAPTURE(a);
    init_arch(a);
    auto k = qd::kernel("vec_index", [](qd::types::ndarray<float, 2> grid, qd::types::ndarray<qd::vec2f, 2> v) {
      qd::range_for(qd::ndrange(grid.shape(0), grid.shape(1)), [&](qd::i32 i, qd::i32 j) {
        qd::vec2i p(i, j);
        grid[p] = qd::cast<float>(i * 10 + j);
        v[p] = {qd::cast<float>(j), -1.0f};
      });
    });
    qd::ndarray<float, 2> grid({3, 4});
    qd::ndarray<qd::vec2f, 2> v({3, 4});
    k(grid, v);
    const auto g = grid.to_host();
    const auto vh = v.to_host();
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) {
        CHECK(g[static_cast<std::size_t>(i * 4 + j)] == static_cast<float>(i * 10 + j));
        CHECK(vh[static_cast<std::size_t>(i * 4 + j)] == std::array<float, 2>{static_cast<float>(j), -1.0f});
      }
    qd::reset();
  }
}

TEST_CASE("kernel.ir() names named parameters") {
  qd_test::init_cpu();
  auto k = qd::kernel("named", {"src", "dst", "scale"},
                      [](qd::types::ndarray<float, 1> src, qd::types::ndarray<float, 1> dst, qd::f32 scale) {
                        qd::range_for(src.shape(0), [&](qd::i32 i) { dst[i] = src[i] * scale; });
                      });
  const std::string ir = k.ir();
  CHECK(ir.find("kernel(src: ndarray<f32, 1>, dst: ndarray<f32, 1>, scale: f32)") != std::string::npos);
  CHECK(ir.find("global_load f32 src[") != std::string::npos);
  CHECK(ir.find("global_store f32 dst[") != std::string::npos);
  CHECK(ir.find("arg f32 scale") != std::string::npos);
  qd::reset();
}

namespace {
// Traces `body` (in the running program's debug mode) and runs the IR verifier on the
// traced IR and on every task of the whole and the split variant, as checked builds do.
template <class F, class Values = std::tuple<>>
void verify_ir(F body, Values values = {}) {
  auto k = qd::detail::make_kernel_state(
      "verified", {}, qd::detail::parameter_descs<F>(),
      [body, values](qd::detail::tracer& t) { qd::detail::trace_kernel(body, t, values); });
  qd::detail::ensure_traced(*k);
  CHECK_NOTHROW(qd::ir::verify(k->ir, qd::ir::stage::traced));
  auto lower_all = [&](const qd::analysis::task_plan& plan) {
    for (const auto& t : plan.tasks)
      CHECK_NOTHROW(qd::codegen::verify(qd::codegen::lower_task(k->ir, k->structure, t, plan)));
  };
  lower_all(qd::analysis::plan_whole_kernel(k->ir, k->structure));
  const auto split = qd::analysis::plan_split(k->ir, k->structure);
  if (split.reason == qd::fallback_reason::none) lower_all(split.plan);
}
struct cell_k {
  qd::i32 n;
  qd::vec2f v;
  qd::mat2f m;
};
}  // namespace

TEST_CASE(
    "the IR of short circuits, assertions, reordered draws and element structs passes the verifier, traced and lowered") {
  qd_test::init_cpu({.debug = true});
  verify_ir([](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 1> out) {
    qd::boolean top = x.shape(0) > 2 && x[2] > 0.0f;  // at the top level
    qd::range_for(x.shape(0) + 1, [&](qd::i32 i) {
      out[qd::min(i, x.shape(0) - 1)] = qd::select(top && (i < x.shape(0) && (x[i] > 0.0f || i > 3)), 1, 0);
      qd::assert_(i >= 0 && i <= x.shape(0), "in range");
      qd::vec2f r(qd::random<float>() * 2.0f, qd::random<float>());
      qd::if_(i < x.shape(0) && r.x() > r.y(), [&] { x[i] = r.x(); });
    });
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = qd::select(top, x[i], 0.0f); });
  });
  verify_ir(
      [](qd::types::template_arg<int> n, qd::types::ndarray<cell_k, 2> c) {
        qd::range_for(qd::ndrange(c.shape(0), c.shape(1)), [&](qd::i32 i, qd::i32 j) {
          auto e = c[qd::vec2i(i, j)];
          e.n = e.n + n;
          e.v = {e.v.y(), e.m(0, 1)};
          qd::ref(c(i, 0).n) += 1;
        });
      },
      std::tuple<int>{3});
  qd::reset();
}
