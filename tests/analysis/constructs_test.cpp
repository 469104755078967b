// The construct analysis, checked at compile time on hand-built IR
// (static_assert) and at run time on traced kernels (the same code).
#include <doctest/doctest.h>

#include "ir/ir_fixtures.hpp"
#include "quadrants/analysis/constructs.hpp"
#include "quadrants/quadrants.hpp"
#include "quadrants/runtime/pipeline/dispatch.hpp"
#include "quadrants/lang/trace.hpp"

using namespace qd;

namespace {

constexpr analysis::kernel_structure structure_of(const ir::function& fn) { return analysis::analyze_structure(fn); }

constexpr bool running_total_shape() {
  auto s = structure_of(test::running_total_ir());
  // decl, two constants and two shapes at the top level, two loops.
  if (s.constructs.size() != 2) return false;
  if (s.constructs[0].kind != analysis::construct_kind::parallel) return false;
  // The reduced variable is written by loop 1 and read by loop 2.
  const auto& loop1 = s.statements[static_cast<std::size_t>(s.constructs[0].statements[0])];
  const auto& loop2 = s.statements[static_cast<std::size_t>(s.constructs[1].statements[0])];
  return loop1.writes_vars.size() == 1 && loop1.reads_vars.size() == 1 && loop2.reads_vars == loop1.writes_vars &&
         loop2.writes_vars.empty() && !loop2.has_atomic && loop2.has_global_store;
}
static_assert(running_total_shape(), "running_total: two parallel constructs communicating through a variable");

constexpr bool stale_snapshot_shape() {
  auto fn = test::stale_snapshot_ir();
  auto s = structure_of(fn);
  if (s.constructs.size() != 2) return false;
  // The snapshot is a pure top-level value (not a construct) used by loop 2.
  const auto& loop2 = s.statements[static_cast<std::size_t>(s.constructs[1].statements[0])];
  bool uses_snapshot = false;
  for (ir::id u : loop2.uses)
    if (fn.at(u).code == ir::op::global_load) uses_snapshot = true;
  const auto& loop1 = s.statements[static_cast<std::size_t>(s.constructs[0].statements[0])];
  return uses_snapshot && loop1.writes.size() == 1 && loop1.writes[0].param == 0;
}
static_assert(stale_snapshot_shape(), "stale_snapshot: the snapshot is a top-level value, loop 1 writes a");

// Invariant arithmetic over shapes and constants is recognised.
constexpr bool invariants() {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::f32, 1, false});
  b.add_param({false, dtype::i32, 0, false});
  ir::id n = b.binary(ir::binary_op::mul, dtype::i32, b.shape(0, 0), b.arg(1));
  std::array<ir::id, 1> zero{b.constant_int(dtype::i32, 0)};
  ir::id loaded = b.global_load(0, 0, zero);
  ir::id mixed = b.binary(ir::binary_op::add, dtype::f32, loaded, b.constant_float(dtype::f32, 1.0));
  auto s = structure_of(fn);
  auto inv = [&](ir::id i) {
    return s.statements[static_cast<std::size_t>(s.statement_of[static_cast<std::size_t>(i)])].invariant;
  };
  return inv(n) && !inv(loaded) && !inv(mixed) && s.constructs.empty();
}
static_assert(invariants());

// Consecutive top-level statements with an effect form one serial construct.
constexpr bool serial_runs() {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::i32, 1, false});
  std::array<ir::id, 1> zero{b.constant_int(dtype::i32, 0)};
  ir::id v = b.global_load(0, 0, zero);  // pure
  b.global_store(0, 0, zero, b.binary(ir::binary_op::add, dtype::i32, v, b.constant_int(dtype::i32, 1)));
  b.print({v});
  ir::id loop = b.range_for(b.constant_int(dtype::i32, 0), b.shape(0, 0));
  b.push_block(fn.at(loop).block0);
  std::array<ir::id, 1> i{b.loop_index_of(loop)};
  b.global_store(0, 0, i, v);
  b.pop_block();
  b.constant_int(dtype::i32, 5);  // a pure tail: no construct
  // The run before the loop holds 8 statements, the loop bounds included.
  auto s = structure_of(fn);
  return s.constructs.size() == 2 && s.constructs[0].kind == analysis::construct_kind::serial &&
         s.constructs[0].statements.size() == 8 && s.constructs[1].kind == analysis::construct_kind::parallel &&
         s.construct_of.back() == -1;
}
static_assert(serial_runs());

}  // namespace

TEST_CASE("the same analysis runs on traced kernels") {
  qd::detail::tracer t("running_total", {});
  qd::detail::trace_kernel(
      [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out) {
        qd::var<float> total = 0.0f;
        qd::range_for(x.shape(0), [&](qd::i32 i) { total += x[i]; });
        qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = total; });
      },
      t);
  auto s = analysis::analyze_structure(t.fn);
  REQUIRE(s.constructs.size() == 2);
  const auto& loop1 = s.statements[static_cast<std::size_t>(s.constructs[0].statements[0])];
  const auto& loop2 = s.statements[static_cast<std::size_t>(s.constructs[1].statements[0])];
  CHECK(loop1.writes_vars.size() == 1);
  CHECK(loop2.reads_vars == loop1.writes_vars);
  CHECK(running_total_shape());  // and the constexpr function agrees at run time
}

TEST_CASE("effects, random draws and volatile reads are recorded per statement") {
  qd::detail::tracer t("effects", {});
  qd::detail::trace_kernel(
      [](qd::types::ndarray<float, 1> x) {
        qd::f32 r = qd::random<float>();
        qd::f32 v = qd::volatile_load(x[0]);
        qd::range_for(x.shape(0), [&](qd::i32 i) { qd::atomic_add(x[i], r + v); });
        qd::print("done");
      },
      t);
  auto s = analysis::analyze_structure(t.fn);
  bool random = false, volatile_read = false, atomic = false, print = false;
  for (const auto& st : s.statements) {
    random |= st.has_random;
    volatile_read |= st.has_volatile;
    atomic |= st.has_atomic;
    print |= st.has_print;
  }
  CHECK(random);
  CHECK(volatile_read);
  CHECK(atomic);
  CHECK(print);
  CHECK(s.constructs.size() == 2);  // the loop, and the print as a serial construct
}
