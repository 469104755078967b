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
  test::fill_loop(fn, b, 2, g);
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

// first = a[k]; a loop over [begin, end) writes a[i + offset]; a second loop uses
// first. Whether the re-read element can be one the loop writes is decided from the
// index ranges: disjoint ones split, overlapping or unknown ones stay whole.
constexpr ir::function snapshot_vs_loop(std::int64_t k, std::int64_t begin, std::int64_t end, std::int64_t offset,
                                        std::uint8_t read_flags = 0, dtype index_type = dtype::i32) {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::f32, 1, false});  // a
  b.add_param({true, dtype::f32, 1, false});  // out
  std::array<ir::id, 1> at{b.constant_int(index_type, k)};
  ir::id first = b.global_load(0, read_flags, at);
  ir::id end_node = end < 0 ? b.shape(0, 0) : b.constant_int(dtype::i32, end);  // end < 0: a run-time extent
  ir::id loop1 = b.range_for(b.constant_int(dtype::i32, begin), end_node);
  b.push_block(fn.at(loop1).block0);
  ir::id i = b.loop_index_of(loop1);
  if (index_type == dtype::i64) i = b.cast(dtype::i64, i);
  if (offset > 0) i = b.binary(ir::binary_op::add, index_type, i, b.constant_int(index_type, offset));
  if (offset < 0) i = b.binary(ir::binary_op::sub, index_type, i, b.constant_int(index_type, -offset));
  std::array<ir::id, 1> w{i};
  b.global_store(0, 0, w, b.constant_float(dtype::f32, 0.0));
  b.pop_block();
  test::fill_loop(fn, b, 1, first);
  return fn;
}
constexpr auto none = fallback_reason::none;
constexpr auto stale = fallback_reason::stale_reread;
static_assert(reason_of(snapshot_vs_loop(0, 1, -1, 0)) == none, "a[0] against a[i], i in [1, n)");
static_assert(reason_of(snapshot_vs_loop(0, 0, -1, 1)) == none, "a[0] against a[i + 1], i in [0, n)");
static_assert(reason_of(snapshot_vs_loop(0, 0, -1, 1, 0, dtype::i64)) == none, "the same through i64 indices");
static_assert(reason_of(snapshot_vs_loop(5, 0, 5, 0)) == none, "a[5] against a[i], i in [0, 5)");
static_assert(reason_of(snapshot_vs_loop(3, 0, 5, -3)) == none, "a[3] against a[i - 3], i in [0, 5)");
static_assert(reason_of(snapshot_vs_loop(0, 0, -1, 0)) == stale, "the seed's stale_snapshot");
static_assert(reason_of(snapshot_vs_loop(0, 1, -1, -1)) == stale, "a[0] against a[i - 1], i in [1, n)");
static_assert(reason_of(snapshot_vs_loop(4, 0, 5, 0)) == stale, "a[4] against a[i], i in [0, 5)");
static_assert(reason_of(snapshot_vs_loop(7, 1, -1, 0)) == stale, "a[7] against a[i], i in [1, n): n unknown");
static_assert(reason_of(snapshot_vs_loop(0, 1, -1, 0, ir::access::clamp)) == stale, "a clamped re-read");
static_assert(reason_of(snapshot_vs_loop(0, 2, 5, -1, ir::access::clamp)) == stale);

// Index ranges through wrap-around: an i32 sum that may underflow wraps to a large
// positive index (possibly in range), so nothing is known of it; one that may only
// overflow wraps to a negative index, outside every array, so its lower bound holds.
constexpr analysis::detail::index_range range_of_sum(std::int64_t x, std::int64_t y, bool loop_x, dtype t) {
  ir::function fn;
  ir::builder b(fn);
  ir::id a = b.constant_int(t, x);
  if (loop_x) {  // x becomes the lower bound of a loop index with a run-time end
    b.add_param({false, dtype::i32, 0, false});
    ir::id loop = b.range_for(b.constant_int(dtype::i32, x), b.arg(0));
    b.push_block(fn.at(loop).block0);
    a = b.loop_index_of(loop);
    if (t == dtype::i64) a = b.cast(dtype::i64, a);
  }
  ir::id sum = b.binary(ir::binary_op::add, t, a, b.constant_int(t, y));
  if (loop_x) b.pop_block();
  return analysis::detail::range_of_index(fn, sum);
}
constexpr std::int64_t i32_min = -2147483647 - 1, i32_max = 2147483647;
static_assert(!range_of_sum(i32_min, i32_min, false, dtype::i32).has_lo);
static_assert(!range_of_sum(i32_min, i32_min, false, dtype::i32).has_hi, "-2^32 wraps to 0");
static_assert(range_of_sum(i32_min, i32_min, false, dtype::i64).lo == 2 * i32_min, "no wrap in i64");
static_assert(range_of_sum(i32_max, 1, false, dtype::i32).lo == i32_max + 1 &&
              !range_of_sum(i32_max, 1, false, dtype::i32).has_hi);
static_assert(range_of_sum(1, 5, true, dtype::i32).has_lo && range_of_sum(1, 5, true, dtype::i32).lo == 6 &&
              !range_of_sum(1, 5, true, dtype::i32).has_hi, "i + 5 for i in [1, n)");
static_assert(!range_of_sum(-5, i32_min, true, dtype::i32).has_lo, "i - 2^31 for i in [-5, n) may underflow");
static_assert(range_of_sum(-5, i32_min, true, dtype::i64).lo == -5 + i32_min);

// 2-D: m(2, 1) re-read, an ndrange loop writes m(i, 0): column 0 is never column 1.
constexpr ir::function snapshot_vs_column(std::int64_t column) {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::f32, 2, false});  // m
  b.add_param({true, dtype::f32, 1, false});  // out
  std::array<ir::id, 2> at{b.constant_int(dtype::i32, 2), b.constant_int(dtype::i32, 1)};
  ir::id first = b.global_load(0, 0, at);
  std::array<ir::id, 2> extents{b.shape(0, 0), b.shape(0, 1)};
  ir::id loop1 = b.range_for_nd(extents);
  b.push_block(fn.at(loop1).block0);
  std::array<ir::id, 2> w{b.loop_index_of(loop1, 0), column < 0 ? b.loop_index_of(loop1, 1) : b.constant_int(dtype::i32, column)};
  b.global_store(0, 0, w, b.constant_float(dtype::f32, 0.0));
  b.pop_block();
  test::fill_loop(fn, b, 1, first);
  return fn;
}
static_assert(reason_of(snapshot_vs_column(0)) == none);
static_assert(reason_of(snapshot_vs_column(3)) == none);
static_assert(reason_of(snapshot_vs_column(1)) == stale);
static_assert(reason_of(snapshot_vs_column(-1)) == stale, "m(i, j) may be m(2, 1)");

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
  CHECK(reason_of(snapshot_vs_loop(0, 1, -1, 0)) == none);
  CHECK(reason_of(snapshot_vs_loop(4, 0, 5, 0)) == stale);
  CHECK(reason_of(snapshot_vs_column(0)) == none);
  CHECK(reason_of(snapshot_vs_column(-1)) == stale);
  // The split of a provably disjoint re-read recomputes the snapshot; the one pair left
  // to check at launch is a against out, which the second loop writes.
  auto disjoint = split_of(snapshot_vs_loop(0, 1, -1, 0));
  REQUIRE(disjoint.pairs.size() == 1);
  CHECK(disjoint.pairs[0] == analysis::disjoint_pair{0, 1});
  CHECK(disjoint.plan.tasks.size() == 2);
  CHECK(disjoint.plan.temps.empty());
}
