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

// Split, every value recomputed: nothing in the persisted buffer.
constexpr bool recomputes(const ir::function& fn) {
  auto d = split_of(fn);
  return d.reason == fallback_reason::none && d.plan.temps.empty();
}
// Split, with values or variables handed on through the persisted buffer.
constexpr bool persists(const ir::function& fn) {
  auto d = split_of(fn);
  return d.reason == fallback_reason::none && !d.plan.temps.empty();
}

// The seed's running_total splits: a serial task initialises `total` in the buffer,
// loop 1 reduces into it, loop 2 reads it.
constexpr bool running_total_splits() {
  const ir::function fn = test::running_total_ir();
  const auto d = split_of(fn);
  const auto& t = d.plan.tasks;
  return d.reason == fallback_reason::none && t.size() == 3 && !t[0].parallel && t[0].construct == -1 &&
         t[0].run == 1 && t[1].construct == 0 && t[2].construct == 1 && d.plan.temps.size() == 1 &&
         fn.at(d.plan.temps[0].node).code == ir::op::local_decl && d.pairs.empty();
}
QD_CONSTEXPR_CHECK(running_total_splits());

// The seed's stale_snapshot splits: a serial task takes the snapshot before loop 1
// overwrites a, and loop 2 reads it from the buffer.
constexpr bool stale_snapshot_splits(std::uint8_t flags) {
  const ir::function fn = test::stale_snapshot_ir(flags);
  const auto d = split_of(fn);
  const auto& t = d.plan.tasks;
  return d.reason == fallback_reason::none && t.size() == 3 && t[0].construct == -1 && t[1].construct == 0 &&
         t[2].construct == 1 && d.plan.temps.size() == 1 && fn.at(d.plan.temps[0].node).code == ir::op::global_load &&
         std::find(t[2].statements.begin(), t[2].statements.end(), 1) == t[2].statements.end();  // not recomputed
}
QD_CONSTEXPR_CHECK(stale_snapshot_splits(0));
QD_CONSTEXPR_CHECK(stale_snapshot_splits(ir::access::clamp), "a clamped re-read counts as possibly written: persisted");

constexpr ir::function gradient_kernel() {
  ir::function fn = test::stale_snapshot_ir();
  fn.is_gradient = true;
  return fn;
}
QD_CONSTEXPR_CHECK(reason_of(gradient_kernel()) == fallback_reason::autodiff);

// The seed's grad_snapshot: a.grad[0] read, b.grad written, the snapshot used.
constexpr ir::function grad_snapshot_ir(bool read_grad, bool write_grad, std::int32_t written = 1) {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::f32, 1, true});   // a
  b.add_param({true, dtype::f32, 1, true});   // b
  b.add_param({true, dtype::f32, 1, false});  // out
  std::array<ir::id, 1> zero{b.constant_int(dtype::i32, 0)};
  ir::id g = b.global_load(0, read_grad ? ir::access::grad : 0, zero);
  ir::id loop1 = b.range_for(b.constant_int(dtype::i32, 0), b.shape(written, 0));
  b.push_block(fn.at(loop1).block0);
  std::array<ir::id, 1> i{b.loop_index_of(loop1)};
  b.global_store(written, write_grad ? ir::access::grad : 0, i, b.constant_float(dtype::f32, 0.0));
  b.pop_block();
  test::fill_loop(fn, b, 2, g);
  return fn;
}
// Gradient buffers of qd::ndarrays have known extents: the pair is checked at launch
// like any other (the seed's "Advanced" narrow case).
constexpr bool grad_pairs(bool read_grad, bool write_grad, std::int32_t written, analysis::disjoint_pair first) {
  auto d = split_of(grad_snapshot_ir(read_grad, write_grad, written));
  return recomputes(grad_snapshot_ir(read_grad, write_grad, written)) && d.pairs.size() == 2 && d.pairs[0] == first &&
         d.pairs[1] == analysis::disjoint_pair{0, 2, read_grad, false} && d.plan.tasks.size() == 2;
}
QD_CONSTEXPR_CHECK(grad_pairs(true, true, 1, {0, 1, true, true}));
QD_CONSTEXPR_CHECK(grad_pairs(true, false, 1, {0, 1, true, false}));
QD_CONSTEXPR_CHECK(grad_pairs(false, true, 1, {0, 1, false, true}));
QD_CONSTEXPR_CHECK(grad_pairs(false, true, 0, {0, 0, false, true}), "a against its own gradient buffer");
QD_CONSTEXPR_CHECK(grad_pairs(true, false, 0, {0, 0, false, true}), "a.grad against a: ordered data first");

// Two plain parameters: the split is taken and the pair is checked at launch.
constexpr bool plain_pair_is_checked() {
  auto d = split_of(grad_snapshot_ir(false, false));
  // a[0] is re-read by construct 2; construct 1 writes b and construct 2 itself writes out.
  return d.reason == fallback_reason::none && d.pairs.size() == 2 && d.pairs[0].a == 0 && d.pairs[0].b == 1 &&
         d.pairs[1].a == 0 && d.pairs[1].b == 2 && d.plan.tasks.size() == 2 && d.plan.temps.empty();
}
QD_CONSTEXPR_CHECK(plain_pair_is_checked());

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
QD_CONSTEXPR_CHECK(slice_is_recomputed());

// A random draw or a volatile read is taken once, by a serial task, and handed on.
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
constexpr bool drawn_once(bool volatile_read) {
  const ir::function fn = draw_then_use(volatile_read);
  const auto d = split_of(fn);
  const std::int32_t draw = volatile_read ? 1 : 0;  // the statement that draws or reads
  return persists(fn) && d.plan.tasks.size() == 2 && d.plan.tasks[0].construct == -1 && d.plan.tasks[0].run == draw &&
         d.plan.tasks[1].statements.front() != draw;
}
QD_CONSTEXPR_CHECK(drawn_once(false));
QD_CONSTEXPR_CHECK(drawn_once(true));

// The unchecked plan (for the fuzzer's precision figures): every value without an effect
// of its own recomputed -- the same tasks as the decision's plan when nothing is
// persisted, and for stale_snapshot a second task that recomputes the (stale) snapshot
// a[0]; a loop's reduction is still handed on through the buffer.
constexpr bool unchecked_plan_is_the_split() {
  const ir::function fn = grad_snapshot_ir(false, false);
  const auto s = analysis::analyze_structure(fn);
  const auto d = analysis::plan_split(fn, s);
  const auto u = analysis::plan_split_unchecked(fn, s);
  if (d.reason != fallback_reason::none || u.tasks.size() != d.plan.tasks.size()) return false;
  for (std::size_t t = 0; t < u.tasks.size(); ++t)
    if (u.tasks[t].statements != d.plan.tasks[t].statements || u.tasks[t].construct != d.plan.tasks[t].construct)
      return false;
  return true;
}
QD_CONSTEXPR_CHECK(unchecked_plan_is_the_split());

constexpr bool unchecked_plan_recomputes_the_snapshot() {
  const ir::function fn = test::stale_snapshot_ir();
  const auto s = analysis::analyze_structure(fn);
  const auto u = analysis::plan_split_unchecked(fn, s);
  const std::int32_t snapshot = s.statement_of[1];  // node 1: the load of a[0]
  const auto& second = u.tasks[1].statements;
  return u.tasks.size() == 2 && u.tasks[1].parallel &&
         std::find(second.begin(), second.end(), snapshot) != second.end() &&
         s.constructs[1].statements.back() == second.back();
}
QD_CONSTEXPR_CHECK(unchecked_plan_recomputes_the_snapshot());
constexpr bool unchecked_plan_persists_a_reduction() {
  const ir::function fn = test::running_total_ir();
  const auto u = analysis::plan_split_unchecked(fn, analysis::analyze_structure(fn));
  return u.tasks.size() == 3 && u.temps.size() == 1 && u.slot_of(1) >= 0;
}
QD_CONSTEXPR_CHECK(unchecked_plan_persists_a_reduction());

// first = a[0]; a loop writes out; then a construct overwrites a[0] with first + 1. A
// serial construct recomputes first before its own statements run, so its own write is
// no stale re-read; a loop's may be (a GPU thread may recompute first after another
// iteration wrote a[0]), so there the snapshot is persisted.
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
QD_CONSTEXPR_CHECK(recomputes(snapshot_then_write(true)));
QD_CONSTEXPR_CHECK(split_of(snapshot_then_write(true)).pairs.size() == 1, "a and out: the loop between writes out");
QD_CONSTEXPR_CHECK(persists(snapshot_then_write(false)));
QD_CONSTEXPR_CHECK(split_of(snapshot_then_write(false)).pairs.empty(), "a persisted snapshot needs no check");

// first = a[k]; a loop over [begin, end) writes a[i + offset]; a second loop uses
// first. Whether the re-read element can be one the loop writes is decided from the
// index ranges: disjoint ones recompute the snapshot, overlapping or unknown ones
// persist it.
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
QD_CONSTEXPR_CHECK(recomputes(snapshot_vs_loop(0, 1, -1, 0)), "a[0] against a[i], i in [1, n)");
QD_CONSTEXPR_CHECK(recomputes(snapshot_vs_loop(0, 0, -1, 1)), "a[0] against a[i + 1], i in [0, n)");
QD_CONSTEXPR_CHECK(recomputes(snapshot_vs_loop(0, 0, -1, 1, 0, dtype::i64)), "the same through i64 indices");
QD_CONSTEXPR_CHECK(recomputes(snapshot_vs_loop(5, 0, 5, 0)), "a[5] against a[i], i in [0, 5)");
QD_CONSTEXPR_CHECK(recomputes(snapshot_vs_loop(3, 0, 5, -3)), "a[3] against a[i - 3], i in [0, 5)");
QD_CONSTEXPR_CHECK(persists(snapshot_vs_loop(0, 0, -1, 0)), "the seed's stale_snapshot");
QD_CONSTEXPR_CHECK(persists(snapshot_vs_loop(0, 1, -1, -1)), "a[0] against a[i - 1], i in [1, n)");
QD_CONSTEXPR_CHECK(persists(snapshot_vs_loop(4, 0, 5, 0)), "a[4] against a[i], i in [0, 5)");
QD_CONSTEXPR_CHECK(persists(snapshot_vs_loop(7, 1, -1, 0)), "a[7] against a[i], i in [1, n): n unknown");
QD_CONSTEXPR_CHECK(persists(snapshot_vs_loop(0, 1, -1, 0, ir::access::clamp)), "a clamped re-read");
QD_CONSTEXPR_CHECK(persists(snapshot_vs_loop(0, 2, 5, -1, ir::access::clamp)));
QD_CONSTEXPR_CHECK(recomputes(snapshot_vs_loop(0, 3, 3, 0)), "a loop over [3, 3) writes nothing");
QD_CONSTEXPR_CHECK(recomputes(snapshot_vs_loop(0, 5, 2, 0, ir::access::clamp)), "nor one over [5, 2)");

// Symbolic bounds: first = a[n + k] with n a run-time value (the extent of a, or a
// scalar argument); a loop over [0, n + end) writes a[i + offset]. The element the
// loop would need to hit is i = n + k - offset; it is never `end` itself (whatever
// wraps), and with n an extent (in [0, 2^31)) nothing wraps, so order decides too.
constexpr ir::function symbolic_snapshot(std::int64_t k, std::int64_t end, std::int64_t offset, bool n_is_argument,
                                         std::int64_t begin = 0, bool begin_from_n = false) {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::f32, 1, false});   // a
  b.add_param({true, dtype::f32, 1, false});   // out
  b.add_param({false, dtype::i32, 0, false});  // n, when an argument
  auto n_plus = [&](std::int64_t c) {
    ir::id n = n_is_argument ? b.arg(2) : b.shape(0, 0);  // traced anew at each use, as the DSL does
    if (c == 0) return n;
    return b.binary(c > 0 ? ir::binary_op::add : ir::binary_op::sub, dtype::i32, n,
                    b.constant_int(dtype::i32, c > 0 ? c : -c));
  };
  std::array<ir::id, 1> at{n_plus(k)};
  ir::id first = b.global_load(0, 0, at);
  ir::id loop1 = b.range_for(begin_from_n ? n_plus(begin) : b.constant_int(dtype::i32, begin), n_plus(end));
  b.push_block(fn.at(loop1).block0);
  ir::id i = b.loop_index_of(loop1);
  if (offset != 0)
    i = b.binary(offset > 0 ? ir::binary_op::add : ir::binary_op::sub, dtype::i32, i,
                 b.constant_int(dtype::i32, offset > 0 ? offset : -offset));
  std::array<ir::id, 1> w{i};
  b.global_store(0, 0, w, b.constant_float(dtype::f32, 0.0));
  b.pop_block();
  test::fill_loop(fn, b, 1, first);
  return fn;
}
QD_CONSTEXPR_CHECK(recomputes(symbolic_snapshot(-1, -1, 0, false)), "a[n - 1] against a[i], i in [0, n - 1)");
QD_CONSTEXPR_CHECK(recomputes(symbolic_snapshot(-1, -1, 0, true)), "the same with n an argument");
QD_CONSTEXPR_CHECK(recomputes(symbolic_snapshot(-1, -2, 1, true)), "a[n - 1] against a[i + 1], i in [0, n - 2)");
QD_CONSTEXPR_CHECK(recomputes(symbolic_snapshot(0, -1, 1, false)), "a[n] against a[i + 1], i in [0, n - 1)");
QD_CONSTEXPR_CHECK(recomputes(symbolic_snapshot(-1, -3, 0, false)), "a[n - 1] against a[i], i in [0, n - 3): ordered");
QD_CONSTEXPR_CHECK(persists(symbolic_snapshot(-1, -3, 0, true)), "... but an argument n - 3 may wrap");
QD_CONSTEXPR_CHECK(persists(symbolic_snapshot(-1, 0, 0, false)), "a[n - 1] against a[i], i in [0, n)");
QD_CONSTEXPR_CHECK(persists(symbolic_snapshot(-1, -1, 1, false)), "a[n - 1] against a[i + 1], i in [0, n - 1)");
QD_CONSTEXPR_CHECK(persists(symbolic_snapshot(-2, -1, 0, false)), "a[n - 2] against a[i], i in [0, n - 1)");
QD_CONSTEXPR_CHECK(recomputes(symbolic_snapshot(-3, -1, 0, false, -2, true)),
                   "a[n - 3] against a[i], i in [n - 2, n - 1)");
QD_CONSTEXPR_CHECK(recomputes(symbolic_snapshot(-3, 0, 0, true, -2, true)), "a[n - 3] against a[i], i in [n - 2, n)");
QD_CONSTEXPR_CHECK(recomputes(symbolic_snapshot(-5, 0, 0, false, -2, true)),
                   "a[n - 5] against a[i], i in [n - 2, n): ordered");
QD_CONSTEXPR_CHECK(persists(symbolic_snapshot(-2, 0, 0, false, -2, true)), "a[n - 2] against a[i], i in [n - 2, n)");

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
QD_CONSTEXPR_CHECK(!range_of_sum(i32_min, i32_min, false, dtype::i32).has_lo);
QD_CONSTEXPR_CHECK(!range_of_sum(i32_min, i32_min, false, dtype::i32).has_hi, "-2^32 wraps to 0");
QD_CONSTEXPR_CHECK(range_of_sum(i32_min, i32_min, false, dtype::i64).lo == 2 * i32_min, "no wrap in i64");
QD_CONSTEXPR_CHECK(range_of_sum(i32_max, 1, false, dtype::i32).lo == i32_max + 1 &&
                   !range_of_sum(i32_max, 1, false, dtype::i32).has_hi);
QD_CONSTEXPR_CHECK(range_of_sum(1, 5, true, dtype::i32).has_lo&& range_of_sum(1, 5, true, dtype::i32).lo == 6 &&
                       !range_of_sum(1, 5, true, dtype::i32).has_hi,
                   "i + 5 for i in [1, n)");
QD_CONSTEXPR_CHECK(!range_of_sum(-5, i32_min, true, dtype::i32).has_lo, "i - 2^31 for i in [-5, n) may underflow");
QD_CONSTEXPR_CHECK(range_of_sum(-5, i32_min, true, dtype::i64).lo == -5 + i32_min);

// Affine forms modulo 2^32: (n - 1) + 3 is n + 2; casts keep the form; a product does not.
constexpr bool affine_forms() {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({false, dtype::i32, 0, false});
  ir::id n = b.arg(0);
  ir::id x = b.binary(ir::binary_op::add, dtype::i64,
                      b.cast(dtype::i64, b.binary(ir::binary_op::sub, dtype::i32, n, b.constant_int(dtype::i32, 1))),
                      b.constant_int(dtype::i64, 3));
  ir::id y = b.binary(ir::binary_op::mul, dtype::i32, n, b.constant_int(dtype::i32, 2));
  ir::id z = b.binary(ir::binary_op::sub, dtype::i32, b.constant_int(dtype::i32, 4), n);
  const auto fx = analysis::detail::affine_of(fn, x), fy = analysis::detail::affine_of(fn, y);
  const auto fz = analysis::detail::affine_of(fn, z);
  return fx.sym == n && fx.off == 2 && fy.sym == y && fy.off == 0 && fz.sym == z &&
         analysis::detail::same_value(fn, b.arg(0), n) && !analysis::detail::same_value(fn, y, z);
}
QD_CONSTEXPR_CHECK(affine_forms());

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
  std::array<ir::id, 2> w{b.loop_index_of(loop1, 0),
                          column < 0 ? b.loop_index_of(loop1, 1) : b.constant_int(dtype::i32, column)};
  b.global_store(0, 0, w, b.constant_float(dtype::f32, 0.0));
  b.pop_block();
  test::fill_loop(fn, b, 1, first);
  return fn;
}
QD_CONSTEXPR_CHECK(recomputes(snapshot_vs_column(0)));
QD_CONSTEXPR_CHECK(recomputes(snapshot_vs_column(3)));
QD_CONSTEXPR_CHECK(persists(snapshot_vs_column(1)));
QD_CONSTEXPR_CHECK(persists(snapshot_vs_column(-1)), "m(i, j) may be m(2, 1)");

// v = 1 at the top level; loop 1 updates v (a reduction); w = v + 1 reads v before
// loop 1 and loop 2 uses w: the load of v that w saw is persisted too, by the serial
// task that initialises v, and w is recomputed from it.
constexpr bool read_before_reduction_is_persisted() {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::f32, 1, false});  // x
  b.add_param({true, dtype::f32, 1, false});  // out
  ir::id v = b.local_decl(dtype::f32, b.constant_float(dtype::f32, 1.0));
  ir::id w = b.binary(ir::binary_op::add, dtype::f32, b.local_load(v), b.constant_float(dtype::f32, 1.0));
  ir::id loop1 = b.range_for(b.constant_int(dtype::i32, 0), b.shape(0, 0));
  b.push_block(fn.at(loop1).block0);
  std::array<ir::id, 1> i{b.loop_index_of(loop1)};
  b.local_atomic(ir::atomic_op::add, v, b.global_load(0, 0, i));
  b.pop_block();
  test::fill_loop(fn, b, 1, b.binary(ir::binary_op::add, dtype::f32, w, b.local_load(v)));
  const auto d = split_of(fn);
  return d.reason == fallback_reason::none && d.plan.tasks.size() == 3 && d.plan.tasks[0].construct == -1 &&
         d.plan.slot_of(v) >= 0 && d.plan.slot_of(fn.at(w).a) >= 0 && d.plan.temps.size() == 2;
}
QD_CONSTEXPR_CHECK(read_before_reduction_is_persisted());

// A kernel's result (language issue): one more slot, published by its home task.
constexpr bool result_gets_a_slot() {
  const ir::function fn = test::running_total_ir();
  const auto s = analysis::analyze_structure(fn);
  const ir::id total = 0 + 1;  // node 0: the constant 0.0, node 1: the declaration
  const auto split = analysis::plan_split(fn, s, {total});
  const auto whole = analysis::plan_whole_kernel(fn, s, {total});
  return fn.at(total).code == ir::op::local_decl && split.plan.slot_of(total) >= 0 && whole.slot_of(total) >= 0;
}
QD_CONSTEXPR_CHECK(result_gets_a_slot());

}  // namespace

TEST_CASE("the constexpr split analysis gives the same answers at run time") {
  CHECK(running_total_splits());
  CHECK(stale_snapshot_splits(0));
  CHECK(reason_of(gradient_kernel()) == fallback_reason::autodiff);
  CHECK(grad_pairs(true, true, 1, {0, 1, true, true}));
  CHECK(plain_pair_is_checked());
  CHECK(slice_is_recomputed());
  CHECK(drawn_once(false));
  CHECK(recomputes(snapshot_vs_loop(0, 1, -1, 0)));
  CHECK(persists(snapshot_vs_loop(4, 0, 5, 0)));
  CHECK(recomputes(symbolic_snapshot(-1, -1, 0, true)));
  CHECK(persists(symbolic_snapshot(-1, -1, 1, false)));
  CHECK(recomputes(snapshot_vs_column(0)));
  CHECK(persists(snapshot_vs_column(-1)));
  CHECK(read_before_reduction_is_persisted());
  CHECK(result_gets_a_slot());
  // The split of a provably disjoint re-read recomputes the snapshot; the one pair left
  // to check at launch is a against out, which the second loop writes.
  auto disjoint = split_of(snapshot_vs_loop(0, 1, -1, 0));
  REQUIRE(disjoint.pairs.size() == 1);
  CHECK(disjoint.pairs[0] == analysis::disjoint_pair{0, 1});
  CHECK(disjoint.plan.tasks.size() == 2);
  CHECK(disjoint.plan.temps.empty());
}

TEST_CASE("more persisted values than the buffer holds: carried_value, and the whole kernel needs none") {
  // One serial construct of 4,100 statements `if (c) { v = 1; a[0] = 2; }` each followed
  // by a[k] = v: the whole kernel runs it as one task with local variables; the split
  // would persist every v (written by a statement with an effect) and runs out of slots.
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::f32, 1, false});
  b.add_param({false, dtype::boolean, 0, false});
  const int count = 4100;
  for (int k = 0; k < count; ++k) {
    ir::id v = b.local_decl(dtype::f32, b.constant_float(dtype::f32, 0.0));
    ir::id branch = b.if_(b.arg(1));
    b.push_block(fn.at(branch).block0);
    b.local_store(v, b.constant_float(dtype::f32, 1.0));
    std::array<ir::id, 1> zero{b.constant_int(dtype::i32, 0)};
    b.global_store(0, 0, zero, b.constant_float(dtype::f32, 2.0));
    b.pop_block();
    std::array<ir::id, 1> at{b.constant_int(dtype::i32, k)};
    b.global_store(0, 0, at, b.local_load(v));
  }
  const auto s = analysis::analyze_structure(fn);
  const auto d = analysis::plan_split(fn, s);
  CHECK(d.reason == fallback_reason::carried_value);
  CHECK(d.construct == -1);
  CHECK(d.plan.temps_needed == static_cast<std::size_t>(count));
  CHECK(analysis::plan_whole_kernel(fn, s).temps_needed == 0);
}
