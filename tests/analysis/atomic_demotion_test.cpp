// Atomic demotion (SPEC §11.4): which `x[i] += v` become plain updates, checked at
// compile time on hand-built IR and on traced kernels (the IR text says "owned"),
// and, on the CPU (threads) and the reference backend (which checks the claim),
// results equal to plain C++ for demoted and atomic updates alike.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "quadrants/analysis/atomic_demotion.hpp"
#include "quadrants/analysis/task_plan.hpp"
#include "quadrants/backend/reference/interpreter.hpp"
#include "quadrants/codegen/cpp_emitter.hpp"
#include "quadrants/ir/dce.hpp"
#include "quadrants/lang/kernel_signature.hpp"
#include "quadrants/ir/builder.hpp"
#include "backend/suite_kernels_vec.hpp"
#include "fuzz/kernel_generator.hpp"
#include "runtime/runtime_test_support.hpp"
#include "support/constexpr_check.hpp"

using namespace qd;

namespace {

// One loop over param 0 doing x[index(i)] += 1.0f; returns the number demoted.
template <class Index>
constexpr int demoted_in(Index&& index, std::uint8_t flags = ir::access::compound) {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::f32, 1, false});
  b.add_param({false, dtype::i32, 0, false});
  ir::id loop = b.range_for(b.constant_int(dtype::i32, 0), b.shape(0, 0));
  b.push_block(fn.at(loop).block0);
  ir::id i = b.loop_index_of(loop);
  std::array<ir::id, 1> at{index(b, i)};
  b.global_atomic(ir::atomic_op::add, 0, flags, at, b.constant_float(dtype::f32, 1.0));
  b.pop_block();
  return analysis::demote_owned_updates(fn);
}

constexpr ir::id c(ir::builder& b, std::int64_t v) { return b.constant_int(dtype::i32, v); }
using ir::binary_op;

QD_CONSTEXPR_CHECK(demoted_in([](ir::builder&, ir::id i) { return i; }) == 1, "the loop index owns its element");
QD_CONSTEXPR_CHECK(demoted_in([](ir::builder& b, ir::id i) {
                     return b.binary(binary_op::add, dtype::i32, b.binary(binary_op::mul, dtype::i32, i, c(b, 3)),
                                     c(b, 1));
                   }) == 1,
                   "3 * i + 1 is injective");
QD_CONSTEXPR_CHECK(demoted_in([](ir::builder& b, ir::id i) {
                     return b.binary(binary_op::sub, dtype::i32,
                                     b.binary(binary_op::sub, dtype::i32, b.shape(0, 0), c(b, 1)), i);
                   }) == 1,
                   "n - 1 - i is injective");
QD_CONSTEXPR_CHECK(demoted_in([](ir::builder& b, ir::id i) { return b.cast(dtype::i64, i); }) == 1, "a widened index");
QD_CONSTEXPR_CHECK(demoted_in([](ir::builder& b, ir::id) { return c(b, 0); }) == 0, "every iteration updates x[0]");
QD_CONSTEXPR_CHECK(demoted_in([](ir::builder& b, ir::id i) {
                     return b.binary(binary_op::div, dtype::i32, i, c(b, 2));
                   }) == 0,
                   "i / 2 is not injective");
QD_CONSTEXPR_CHECK(demoted_in([](ir::builder& b, ir::id i) {
                     return b.binary(binary_op::mul, dtype::i32, i, c(b, 0));
                   }) == 0,
                   "0 * i is constant");
QD_CONSTEXPR_CHECK(demoted_in([](ir::builder& b, ir::id i) {
                     return b.binary(binary_op::mul, dtype::i32, i, b.arg(1));
                   }) == 0,
                   "i * s, s a run-time scalar that may be 0");
QD_CONSTEXPR_CHECK(demoted_in([](ir::builder& b, ir::id i) { return b.binary(binary_op::sub, dtype::i32, i, i); }) == 0,
                   "i - i is constant");
QD_CONSTEXPR_CHECK(demoted_in([](ir::builder&, ir::id i) { return i; }, ir::access::compound | ir::access::clamp) == 0,
                   "a clamped index may meet another iteration's at the edge");
QD_CONSTEXPR_CHECK(demoted_in([](ir::builder&, ir::id i) { return i; }, 0) == 0,
                   "an explicit qd::atomic_add stays atomic");

int owned_count(const std::string& ir_text) {
  int n = 0;
  for (std::size_t at = ir_text.find(" owned"); at != std::string::npos; at = ir_text.find(" owned", at + 1)) ++n;
  return n;
}
int atomic_count(const std::string& ir_text) {
  int n = 0;
  for (std::size_t at = ir_text.find("global_atomic"); at != std::string::npos;
       at = ir_text.find("global_atomic", at + 1))
    ++n;
  return n;
}

// The generated C++ of a kernel body's whole-kernel tasks, traced as the runtime does.
template <class F>
std::string generated_code(const F& body) {
  detail::tracer t("emitted", {});
  detail::trace_kernel(body, t);
  ir::eliminate_dead_code(t.fn);
  analysis::demote_owned_updates(t.fn);
  analysis::kernel_structure s = analysis::analyze_structure(t.fn);
  analysis::task_plan plan = analysis::plan_whole_kernel(t.fn, s);
  std::string out;
  for (const auto& task : plan.tasks) out += codegen::emit_task(codegen::lower_task(t.fn, s, task, plan), "task", {});
  return out;
}

struct on_cpu {
  static constexpr qd::arch arch = qd::arch::cpu;
};
struct on_reference {
  static constexpr qd::arch arch = qd::arch::reference;
};

}  // namespace

TEST_CASE("which traced updates are demoted") {
  qd_test::init_cpu();
  using arr = qd::types::ndarray<float, 1>;
  using iarr = qd::types::ndarray<std::int32_t, 1>;
  SUBCASE("y[i] += a * x[i] is a plain update") {
    auto k = qd::kernel(
        "axpy", [](arr x, arr y, qd::f32 a) { qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] += a * x[i]; }); });
    CHECK(owned_count(k.ir()) == 1);
  }
  SUBCASE("an affine index read and updated, inside a nested serial loop") {
    auto k = qd::kernel("strided", [](arr x, arr y) {
      qd::range_for(y.shape(0) / 2, [&](qd::i32 i) {
        qd::range_for(4, [&](qd::i32 j) { y[2 * i + 1] += x[j] * y[2 * i + 1]; });
        y[2 * i + 1] -= 1.0f;
      });
    });
    CHECK(owned_count(k.ir()) == 2);
  }
  SUBCASE("both orders of a 2-D index over a 2-D loop") {
    auto k = qd::kernel("grid", [](qd::types::ndarray<float, 2> z, qd::types::ndarray<float, 2> w) {
      qd::range_for(qd::ndrange(z.shape(0), z.shape(1)), [&](qd::i32 i, qd::i32 j) {
        z(i, j) += 1.0f;
        w(j, i) += 2.0f;
      });
    });
    CHECK(owned_count(k.ir()) == 2);
  }
  SUBCASE("every component of a vector element") {
    auto k = qd::kernel("drift", [](qd::types::ndarray<qd::vec3f, 1> p, qd::types::ndarray<qd::vec3f, 1> v) {
      qd::range_for(p.shape(0), [&](qd::i32 i) {
        p[i] += v[i] * 0.5f;
        p[i][1] += 1.0f;
      });
    });
    CHECK(owned_count(k.ir()) == 4);
  }
  SUBCASE("a scatter with computed indices stays atomic") {
    auto k = qd::kernel("histogram",
                        [](iarr idx, iarr h) { qd::range_for(idx.shape(0), [&](qd::i32 i) { h[idx[i]] += 1; }); });
    CHECK(owned_count(k.ir()) == 0);
    CHECK(atomic_count(k.ir()) == 1);
  }
  SUBCASE("another index of the same array in the construct keeps the atomic") {
    auto k =
        qd::kernel("neighbour", [](arr y) { qd::range_for(y.shape(0) - 1, [&](qd::i32 i) { y[i] += y[i + 1]; }); });
    CHECK(owned_count(k.ir()) == 0);
  }
  SUBCASE("an index that covers only one dimension of a 2-D loop keeps the atomic") {
    auto k = qd::kernel("rows", [](qd::types::ndarray<float, 2> z, arr s) {
      qd::range_for(qd::ndrange(z.shape(0), z.shape(1)), [&](qd::i32 i, qd::i32 j) { s[i] += z(i, j); });
    });
    CHECK(owned_count(k.ir()) == 0);
  }
  SUBCASE("a reduction into one element, a stride from a parameter, qd::atomic_add and clamping stay atomic") {
    auto k = qd::kernel("atomic_kinds", [](arr x, arr y, arr z, arr w, qd::i32 s) {
      qd::range_for(x.shape(0), [&](qd::i32 i) {
        y[0] += x[i];
        z[i * s] += 1.0f;
        qd::atomic_add(x[i], 1.0f);
        w.at(i, qd::boundary::clamp) += 1.0f;
      });
    });
    CHECK(owned_count(k.ir()) == 0);
    CHECK(atomic_count(k.ir()) == 4);
  }
}

TEST_CASE("the generated code of a demoted update has no atomic; a scatter's keeps it") {
  auto axpy = generated_code([](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y, qd::f32 a) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] += a * x[i]; });
  });
  CHECK(axpy.find("qd_atomic") == std::string::npos);
  auto scatter = generated_code([](qd::types::ndarray<std::int32_t, 1> idx, qd::types::ndarray<float, 1> h) {
    qd::range_for(idx.shape(0), [&](qd::i32 i) { h[idx[i]] += 1.0f; });
  });
  CHECK(scatter.find("qd_atomic_add") != std::string::npos);
}

TEST_CASE_TEMPLATE("demoted and atomic updates both give plain C++'s results", A, on_cpu, on_reference) {
  qd::init({.arch = A::arch});
  std::string text = qd_test::kernels::mixed_updates().ir();
  CHECK(owned_count(text) == 2);
  CHECK(atomic_count(text) == 4);
  qd_test::vec_checks::check_mixed_updates();
}

TEST_CASE("the reference interpreter refuses a demotion that two iterations contradict") {
  // Hand-made IR claiming that each iteration owns x[0] (the analysis never would).
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::f32, 1, false});
  ir::id loop = b.range_for(b.constant_int(dtype::i32, 0), b.constant_int(dtype::i32, 4));
  b.push_block(fn.at(loop).block0);
  b.loop_index_of(loop);
  std::array<ir::id, 1> zero{b.constant_int(dtype::i32, 0)};
  b.global_atomic(ir::atomic_op::add, 0, ir::access::compound | ir::access::owned, zero,
                  b.constant_float(dtype::f32, 1.0));
  b.pop_block();
  qd::backend::reference::task_interpreter interpreter(qd::codegen::lowered_task{fn, true, 0, {0}});
  std::vector<float> a(4, 0.0f);
  qd::backend::array_abi arrays[1] = {{a.data(), nullptr, {4, 0, 0, 0}}};
  std::uint64_t scalars[1] = {0};
  std::int64_t error[5] = {0, 0, 0, 0, 0};
  CHECK_THROWS_WITH_AS(interpreter.run({arrays, scalars, 1, nullptr, 0, error, true}),
                       doctest::Contains("iterations 0 and 1 both update one element"), qd::internal_error);
}

TEST_CASE("the fuzzer's generated kernels contain demoted and atomic compound updates") {
  // The differential batch (tests/fuzz) then runs both kinds on the reference backend,
  // which checks every demotion, and on the CPU.
  int demoted = 0, kept = 0;
  for (std::uint64_t seed = 1; seed <= 2000; ++seed) {
    ir::function fn = qd_fuzz::generate(seed).fn;
    ir::eliminate_dead_code(fn);
    demoted += analysis::demote_owned_updates(fn);
    for (const ir::node& n : fn.nodes)
      if (n.code == ir::op::global_atomic && (n.flags & ir::access::compound) && !(n.flags & ir::access::owned)) ++kept;
  }
  MESSAGE("seeds 1..2000: " << demoted << " compound updates demoted, " << kept << " kept atomic");
  // Random kernels seldom touch a buffer through one index only: few demotions, but some.
  CHECK(demoted >= 1);
  CHECK(kept >= 20);
}
