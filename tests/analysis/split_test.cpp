// The split analysis (SPEC §4), checked with static_assert on hand-built IR; the
// same cases run traced through the runtime in tests/runtime/per_offload_test.cpp.
#include <doctest/doctest.h>

#include "ir/ir_fixtures.hpp"
#include "quadrants/analysis/split.hpp"

using namespace qd;

namespace {

constexpr analysis::split_decision split_of(const ir::function& fn) {
  return analysis::plan_split(fn, analysis::analyze_structure(fn));
}

constexpr fallback_reason reason_of(const ir::function& fn) { return split_of(fn).reason; }

static_assert(reason_of(test::running_total_ir()) == fallback_reason::carried_value);
static_assert(reason_of(test::stale_snapshot_ir()) == fallback_reason::stale_reread);
static_assert(reason_of(test::stale_snapshot_ir(ir::access::clamp)) == fallback_reason::stale_reread,
              "a clamped re-read counts as possibly written");

constexpr ir::function gradient_kernel() {
  ir::function fn = test::stale_snapshot_ir();
  fn.is_gradient = true;
  return fn;
}
static_assert(reason_of(gradient_kernel()) == fallback_reason::autodiff);

// The seed's grad_snapshot: a.grad[0] read, b.grad written, the snapshot used.
constexpr ir::function grad_snapshot_ir(bool read_grad, bool write_grad) {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::f32, 1, true});   // a
  b.add_param({true, dtype::f32, 1, true});   // b
  b.add_param({true, dtype::f32, 1, false});  // out
  std::array<ir::id, 1> zero{b.constant_int(dtype::i32, 0)};
  ir::id g = b.global_load(0, read_grad ? ir::access::grad : 0, zero);
  ir::id loop1 = b.range_for(b.constant_int(dtype::i32, 0), b.shape(1, 0));
  b.push_block(fn.at(loop1).block0);
  std::array<ir::id, 1> i{b.loop_index_of(loop1)};
  b.global_store(1, write_grad ? ir::access::grad : 0, i, b.constant_float(dtype::f32, 0.0));
  b.pop_block();
  ir::id loop2 = b.range_for(b.constant_int(dtype::i32, 0), b.shape(2, 0));
  b.push_block(fn.at(loop2).block0);
  std::array<ir::id, 1> j{b.loop_index_of(loop2)};
  b.global_store(2, 0, j, g);
  b.pop_block();
  return fn;
}
static_assert(reason_of(grad_snapshot_ir(true, true)) == fallback_reason::aliasing_gradient);
static_assert(reason_of(grad_snapshot_ir(true, false)) == fallback_reason::aliasing_gradient);
static_assert(reason_of(grad_snapshot_ir(false, true)) == fallback_reason::aliasing_gradient);

// Two plain parameters: the split is taken and the pair is checked at launch.
constexpr bool plain_pair_is_checked() {
  auto d = split_of(grad_snapshot_ir(false, false));
  // a[0] is re-read by construct 2; construct 1 writes b and construct 2 itself writes out.
  return d.reason == fallback_reason::none && d.pairs.size() == 2 && d.pairs[0].a == 0 && d.pairs[0].b == 1 &&
         d.pairs[1].a == 0 && d.pairs[1].b == 2 &&
         d.plan.tasks.size() == 2 && d.plan.temps.empty();
}
static_assert(plain_pair_is_checked());

// A read of a value nothing overwrites is recomputed freely: the task of the
// second loop holds the slice (index constant, load) before its loop.
constexpr bool slice_is_recomputed() {
  auto fn = test::stale_snapshot_ir();
  fn.at(fn.block(fn.at(fn.block(0)[4]).block0)[2]).param = 1;  // loop 1 now writes `out`, not `a`
  auto d = split_of(fn);
  if (d.reason != fallback_reason::none || d.plan.tasks.size() != 2) return false;
  const auto& second = d.plan.tasks[1].statements;
  return second.size() >= 3 && second.front() == 0 && second[1] == 1;  // constant 0 and the load of a[0]
}
static_assert(slice_is_recomputed());

// A random draw or a volatile read in a slice would be repeated.
constexpr ir::function draw_then_use(bool volatile_read) {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::f32, 1, false});
  ir::id r = ir::none;
  if (volatile_read) {
    std::array<ir::id, 1> zero{b.constant_int(dtype::i32, 0)};
    r = b.global_load(0, ir::access::is_volatile, zero);
  } else {
    r = b.random(dtype::f32);
  }
  ir::id loop = b.range_for(b.constant_int(dtype::i32, 0), b.shape(0, 0));
  b.push_block(fn.at(loop).block0);
  std::array<ir::id, 1> i{b.loop_index_of(loop)};
  b.global_store(0, 0, i, r);
  b.pop_block();
  return fn;
}
static_assert(reason_of(draw_then_use(false)) == fallback_reason::side_effect);
static_assert(reason_of(draw_then_use(true)) == fallback_reason::side_effect);

// The unchecked plan (for the fuzzer's precision figures): the split's tasks whatever
// the decision -- the same tasks as the decision's plan when the split is taken, and
// for stale_snapshot a second task that recomputes the (stale) snapshot a[0].
constexpr bool unchecked_plan_is_the_split() {
  const ir::function fn = grad_snapshot_ir(false, false);
  const auto s = analysis::analyze_structure(fn);
  const auto d = analysis::plan_split(fn, s);
  const auto u = analysis::plan_split_unchecked(s);
  if (d.reason != fallback_reason::none || u.tasks.size() != d.plan.tasks.size()) return false;
  for (std::size_t t = 0; t < u.tasks.size(); ++t)
    if (u.tasks[t].statements != d.plan.tasks[t].statements || u.tasks[t].construct != d.plan.tasks[t].construct)
      return false;
  return true;
}
static_assert(unchecked_plan_is_the_split());

constexpr bool unchecked_plan_recomputes_the_snapshot() {
  const ir::function fn = test::stale_snapshot_ir();
  const auto s = analysis::analyze_structure(fn);
  const auto u = analysis::plan_split_unchecked(s);
  const std::int32_t snapshot = s.statement_of[1];  // node 1: the load of a[0]
  const auto& second = u.tasks[1].statements;
  return u.tasks.size() == 2 && u.tasks[1].parallel &&
         std::find(second.begin(), second.end(), snapshot) != second.end() &&
         s.constructs[1].statements.back() == second.back();
}
static_assert(unchecked_plan_recomputes_the_snapshot());

// first = a[0]; a loop writes out; then a construct overwrites a[0] with first + 1. A
// serial construct recomputes first before its own statements run, so its own write is
// no stale re-read; a loop's may be (a GPU thread may recompute first after another
// iteration wrote a[0]).
constexpr ir::function snapshot_then_write(bool serial) {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::f32, 1, false});  // a
  b.add_param({true, dtype::f32, 1, false});  // out
  std::array<ir::id, 1> zero{b.constant_int(dtype::i32, 0)};
  ir::id first = b.global_load(0, 0, zero);
  ir::id between = b.range_for(b.constant_int(dtype::i32, 0), b.shape(1, 0));
  b.push_block(fn.at(between).block0);
  std::array<ir::id, 1> j{b.loop_index_of(between)};
  b.global_store(1, 0, j, b.constant_float(dtype::f32, 0.0));
  b.pop_block();
  ir::id one = b.constant_float(dtype::f32, 1.0);
  if (serial) {
    b.global_store(0, 0, zero, b.binary(ir::binary_op::add, dtype::f32, first, one));
  } else {
    ir::id loop = b.range_for(b.constant_int(dtype::i32, 0), b.shape(0, 0));
    b.push_block(fn.at(loop).block0);
    std::array<ir::id, 1> i{b.loop_index_of(loop)};
    b.global_store(0, 0, i, b.binary(ir::binary_op::add, dtype::f32, first, one));
    b.pop_block();
  }
  return fn;
}
static_assert(reason_of(snapshot_then_write(true)) == fallback_reason::none);
static_assert(split_of(snapshot_then_write(true)).pairs.size() == 1, "a and out: the loop between writes out");
static_assert(reason_of(snapshot_then_write(false)) == fallback_reason::stale_reread);

}  // namespace

TEST_CASE("the constexpr split analysis gives the same answers at run time") {
  CHECK(reason_of(test::running_total_ir()) == fallback_reason::carried_value);
  CHECK(reason_of(test::stale_snapshot_ir()) == fallback_reason::stale_reread);
  CHECK(reason_of(grad_snapshot_ir(true, true)) == fallback_reason::aliasing_gradient);
  CHECK(plain_pair_is_checked());
  CHECK(slice_is_recomputed());
  auto d = split_of(test::stale_snapshot_ir());
  CHECK(d.construct == 1);        // the second loop re-reads ...
  CHECK(d.other_construct == 0);  // ... what the first writes
}
