// The graph structure (SPEC §11.6, issue 13) on hand-built IR, with static_assert: graph
// marks end serial runs, the schedule orders tasks between marks, a do_while body's
// values and variables that a later pass could change are handed on rather than
// recomputed, forks stay whole, and provably conflicting branch writes are found.
#include <doctest/doctest.h>

#include <array>

#include "ir/ir_fixtures.hpp"
#include "quadrants/analysis/fork.hpp"
#include "quadrants/analysis/graph.hpp"
#include "quadrants/analysis/split.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/ir/dce.hpp"
#include "quadrants/ir/graph_mark.hpp"
#include "quadrants/ir/verify.hpp"
#include "quadrants/quadrants.hpp"

using namespace qd;

namespace {

constexpr std::int32_t x = 0, out = 1, flag = 2;

constexpr void add_params(ir::builder& b) {
  b.add_param({true, dtype::f32, 1, false});  // x
  b.add_param({true, dtype::f32, 1, false});  // out
  b.add_param({true, dtype::i32, 0, false});  // flag
}

// x[i] += 1 over x: a loop that writes x.
constexpr void bump_loop(ir::function& fn, ir::builder& b) {
  ir::id loop = b.range_for(b.constant_int(dtype::i32, 0), b.shape(x, 0));
  b.push_block(fn.at(loop).block0);
  std::array<ir::id, 1> i{b.loop_index_of(loop)};
  ir::id v = b.global_load(x, 0, i);
  b.global_store(x, 0, i, b.binary(ir::binary_op::add, dtype::f32, v, b.constant_float(dtype::f32, 1.0)));
  b.pop_block();
}

// v = x[0]; [do_while(flag) {] out[i] = v; x[i] += 1 [}]
constexpr ir::function snapshot_in_loop(bool loop) {
  ir::function fn;
  ir::builder b(fn);
  add_params(b);
  std::array<ir::id, 1> zero{b.constant_int(dtype::i32, 0)};
  ir::id v = b.global_load(x, 0, zero);
  if (loop) ir::emit_graph_mark(b, ir::graph_mark::loop_begin, flag);
  test::fill_loop(fn, b, out, v);
  bump_loop(fn, b);
  if (loop) ir::emit_graph_mark(b, ir::graph_mark::loop_end);
  return fn;
}

constexpr analysis::split_decision split_of(const ir::function& fn) {
  return analysis::plan_split(fn, analysis::analyze_structure(fn));
}

// Without a loop, out[i] = x[0] recomputes x[0] before x is written; in a loop the next
// pass would see x written by the previous one, so the value is taken once and handed on.
QD_CONSTEXPR_CHECK(split_of(snapshot_in_loop(false)).reason == fallback_reason::none &&
                   split_of(snapshot_in_loop(false)).plan.temps.empty());
QD_CONSTEXPR_CHECK(split_of(snapshot_in_loop(true)).reason == fallback_reason::none &&
                   split_of(snapshot_in_loop(true)).plan.temps.size() == 1);

// c = 0; [do_while(flag) {] c = c + 1; out[i] = c [}]: a variable a pass updates lives in
// the buffer (a later pass reads the earlier one's value).
constexpr ir::function counter(bool loop) {
  ir::function fn;
  ir::builder b(fn);
  add_params(b);
  ir::id c = b.local_decl(dtype::f32, b.constant_float(dtype::f32, 0.0));
  if (loop) ir::emit_graph_mark(b, ir::graph_mark::loop_begin, flag);
  b.local_store(c, b.binary(ir::binary_op::add, dtype::f32, b.local_load(c), b.constant_float(dtype::f32, 1.0)));
  test::fill_loop(fn, b, out, b.local_load(c));
  if (loop) ir::emit_graph_mark(b, ir::graph_mark::loop_end);
  return fn;
}
QD_CONSTEXPR_CHECK(split_of(counter(false)).plan.temps.empty());
QD_CONSTEXPR_CHECK(split_of(counter(true)).plan.temps.size() == 1);

// Marks end serial runs: out[0] = 1; do_while { out[1] = 2 } is two serial constructs.
constexpr ir::function two_serial_runs() {
  ir::function fn;
  ir::builder b(fn);
  add_params(b);
  std::array<ir::id, 1> zero{b.constant_int(dtype::i32, 0)}, one{b.constant_int(dtype::i32, 1)};
  b.global_store(out, 0, zero, b.constant_float(dtype::f32, 1.0));
  ir::emit_graph_mark(b, ir::graph_mark::loop_begin, flag);
  b.global_store(out, 0, one, b.constant_float(dtype::f32, 2.0));
  ir::emit_graph_mark(b, ir::graph_mark::loop_end);
  return fn;
}
QD_CONSTEXPR_CHECK(analysis::analyze_structure(two_serial_runs()).constructs.size() == 2);
QD_CONSTEXPR_CHECK(
    analysis::plan_whole_kernel(two_serial_runs(), analysis::analyze_structure(two_serial_runs())).tasks.size() == 2);

// The schedule: loop_begin, the two loops' tasks, loop_end jumping back to loop_begin.
constexpr bool schedule_loops_back() {
  const ir::function fn = snapshot_in_loop(true);
  const auto s = analysis::analyze_structure(fn);
  const auto plan = analysis::plan_whole_kernel(fn, s);
  const auto steps = analysis::build_schedule(fn, s, plan.tasks);
  // The snapshot's serial task, then the body.
  return steps.size() == 5 && steps[0].is_task && !steps[1].is_task && steps[1].mark == ir::graph_mark::loop_begin &&
         steps[1].jump == 4 && steps[2].is_task && steps[3].is_task && !steps[4].is_task &&
         steps[4].mark == ir::graph_mark::loop_end && steps[4].jump == 1 && steps[4].flag == flag;
}
QD_CONSTEXPR_CHECK(schedule_loops_back());
QD_CONSTEXPR_CHECK(
    analysis::build_schedule(snapshot_in_loop(false), analysis::analyze_structure(snapshot_in_loop(false)), {}).empty(),
    "a kernel without marks has no schedule: its tasks run in order");

// A fork of two branches, each a loop storing out[i + shift] over [begin, end).
constexpr ir::function fork_of(std::int64_t b1, std::int64_t e1, std::int64_t b2, std::int64_t e2,
                               std::int64_t shift2) {
  ir::function fn;
  ir::builder b(fn);
  add_params(b);
  auto store_loop = [&](std::int64_t begin, std::int64_t end, std::int64_t shift) {
    ir::id loop = b.range_for(b.constant_int(dtype::i32, begin), b.constant_int(dtype::i32, end));
    b.push_block(fn.at(loop).block0);
    ir::id i = b.loop_index_of(loop);
    std::array<ir::id, 1> at{b.binary(ir::binary_op::add, dtype::i32, i, b.constant_int(dtype::i32, shift))};
    b.global_store(out, 0, at, b.constant_float(dtype::f32, 1.0));
    b.pop_block();
  };
  ir::emit_graph_mark(b, ir::graph_mark::fork_begin, -1, 0);
  store_loop(b1, e1, 0);
  ir::emit_graph_mark(b, ir::graph_mark::fork_next);
  store_loop(b2, e2, shift2);
  ir::emit_graph_mark(b, ir::graph_mark::fork_end);
  return fn;
}

constexpr bool conflicts(const ir::function& fn) {
  const auto s = analysis::analyze_structure(fn);
  return analysis::find_fork_conflict(fn, s, analysis::graph_regions(fn, s)).has_value();
}
QD_CONSTEXPR_CHECK(conflicts(fork_of(0, 4, 0, 4, 0)));
QD_CONSTEXPR_CHECK(conflicts(fork_of(0, 4, 2, 6, 0)), "overlapping constant ranges");
QD_CONSTEXPR_CHECK(conflicts(fork_of(0, 4, 0, 4, 3)), "[0, 4) and [3, 7) share 3");
QD_CONSTEXPR_CHECK(!conflicts(fork_of(0, 4, 4, 8, 0)), "disjoint parts of one array");
QD_CONSTEXPR_CHECK(!conflicts(fork_of(0, 4, 0, 4, 4)));
QD_CONSTEXPR_CHECK(split_of(fork_of(0, 4, 4, 8, 0)).reason == fallback_reason::concurrent);

}  // namespace

TEST_CASE("graph analysis: checked at compile time") { CHECK(true); }

TEST_CASE("the verifier accepts traced graph kernels and refuses misplaced marks") {
  auto body = [](qd::types::ndarray<float, 1> xs, qd::types::ndarray<std::int32_t, 0> f,
                 qd::types::ndarray<std::int32_t, 0> g) {
    qd::graph::do_while(f, [&] {
      qd::graph::do_while(g, [&] { qd::range_for(xs.shape(0), [&](qd::i32 i) { xs[i] = 1.0f; }); });
      qd::graph::parallel([&] { xs[0] = 2.0f; }, [&] { xs[1] = 3.0f; });
    });
    qd::concurrent([&] { xs[2] = 1.0f; }, [&] { xs[3] = 1.0f; });
  };
  qd::detail::tracer t("verified", {});
  t.graph_kernel = true;
  qd::detail::trace_kernel(body, t);
  ir::eliminate_dead_code(t.fn);
  CHECK_NOTHROW(ir::verify(t.fn, ir::stage::traced));
  const auto s = analysis::analyze_structure(t.fn);
  const auto regions = analysis::graph_regions(t.fn, s);
  REQUIRE(regions.size() == 4);
  CHECK((regions[0].loop && regions[1].loop && !regions[2].loop && !regions[3].loop));
  CHECK(regions[1].parent == 0);
  CHECK(regions[2].parent == 0);
  CHECK(regions[3].parent == -1);
  CHECK(regions[2].fork == ir::fork_kind::graph_parallel);
  CHECK(regions[3].fork == ir::fork_kind::concurrent);
  CHECK(regions[3].branches.size() == 2);

  ir::function unbalanced;
  ir::builder b(unbalanced);
  add_params(b);
  ir::emit_graph_mark(b, ir::graph_mark::loop_end);
  CHECK_THROWS_AS(ir::verify(unbalanced, ir::stage::traced), qd::internal_error);
  ir::function unclosed;
  ir::builder ob(unclosed);
  add_params(ob);
  ir::emit_graph_mark(ob, ir::graph_mark::loop_begin, flag);
  CHECK_THROWS_AS(ir::verify(unclosed, ir::stage::traced), qd::internal_error);
  ir::function float_flag;
  ir::builder fb(float_flag);
  add_params(fb);
  ir::emit_graph_mark(fb, ir::graph_mark::loop_begin, x);
  ir::emit_graph_mark(fb, ir::graph_mark::loop_end);
  CHECK_THROWS_AS(ir::verify(float_flag, ir::stage::traced), qd::internal_error);
  ir::function balanced;
  ir::builder gb(balanced);
  add_params(gb);
  ir::emit_graph_mark(gb, ir::graph_mark::loop_begin, flag);
  ir::emit_graph_mark(gb, ir::graph_mark::loop_end);
  CHECK_NOTHROW(ir::verify(balanced, ir::stage::traced));
  CHECK_THROWS_AS(ir::verify(balanced, ir::stage::lowered), qd::internal_error);
}
