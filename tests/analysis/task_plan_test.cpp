// The whole-kernel task plan: tasks, values crossing tasks in global
// temporaries, and slots assigned from content.
#include <doctest/doctest.h>

#include "ir/ir_fixtures.hpp"
#include "quadrants/analysis/split.hpp"
#include "quadrants/analysis/task_plan.hpp"

using namespace qd;

namespace {
constexpr analysis::task_plan plan_of(const ir::function& fn) {
  return analysis::plan_whole_kernel(fn, analysis::analyze_structure(fn));
}

constexpr bool running_total_plan() {
  auto fn = test::running_total_ir();
  auto p = plan_of(fn);
  // A serial task declares the variable; two loops. The variable lives in a slot.
  return p.tasks.size() == 3 && !p.tasks[0].parallel && p.tasks[1].parallel && p.tasks[2].parallel &&
         p.temps.size() == 1 && fn.at(p.temps[0].node).code == ir::op::local_decl && p.tasks[0].construct == -1 &&
         p.tasks[1].construct == 0 && p.tasks[2].construct == 1;
}
QD_CONSTEXPR_CHECK(running_total_plan());

constexpr bool stale_snapshot_plan() {
  auto fn = test::stale_snapshot_ir();
  auto p = plan_of(fn);
  return p.tasks.size() == 3 && p.temps.size() == 1 && fn.at(p.temps[0].node).code == ir::op::global_load;
}
QD_CONSTEXPR_CHECK(stale_snapshot_plan(), "the snapshot is taken by a serial task and kept in a slot");

// A slot depends on the value's content, not on what else the kernel holds.
constexpr std::int64_t snapshot_slot(bool extra_statement_first) {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::f32, 1, false});
  b.add_param({true, dtype::f32, 1, false});
  if (extra_statement_first) {
    std::array<ir::id, 1> one{b.constant_int(dtype::i32, 1)};
    ir::id other = b.global_load(1, 0, one);
    ir::id loop = b.range_for(b.constant_int(dtype::i32, 0), b.shape(1, 0));
    b.push_block(fn.at(loop).block0);
    std::array<ir::id, 1> i{b.loop_index_of(loop)};
    b.global_store(1, 0, i, other);
    b.pop_block();
  }
  std::array<ir::id, 1> zero{b.constant_int(dtype::i32, 0)};
  ir::id first = b.global_load(0, 0, zero);
  ir::id loop = b.range_for(b.constant_int(dtype::i32, 0), b.shape(0, 0));
  b.push_block(fn.at(loop).block0);
  std::array<ir::id, 1> i{b.loop_index_of(loop)};
  b.global_store(0, 0, i, first);
  b.pop_block();
  auto p = plan_of(fn);
  return p.slot_of(first);
}
QD_CONSTEXPR_CHECK(snapshot_slot(false) >= 0);
QD_CONSTEXPR_CHECK(snapshot_slot(false) == snapshot_slot(true), "an edit elsewhere does not move the slot");

// Two variables declared alike (same type, same initial value), a and b, reduced from
// x and y; layouts add an unrelated variable u first, or between them, or swap the
// declarations. Each variable's slot comes from its declaration and its updates, so
// none of that moves a's or b's slot (it used to follow the declaration order).
struct two_slots {
  std::int64_t a = -1, b = -1;
  friend constexpr bool operator==(const two_slots&, const two_slots&) = default;
};
enum class layout { a_b, u_a_b, a_u_b, b_a };
constexpr two_slots reduction_slots(layout l, bool split) {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::f32, 1, false});  // x
  b.add_param({true, dtype::f32, 1, false});  // y
  b.add_param({true, dtype::f32, 1, false});  // out
  auto declare = [&] { return b.local_decl(dtype::f32, b.constant_float(dtype::f32, 0.0)); };
  ir::id va = ir::none, vb = ir::none, vu = ir::none;
  switch (l) {
    case layout::a_b: va = declare(), vb = declare(); break;
    case layout::u_a_b: vu = declare(), va = declare(), vb = declare(); break;
    case layout::a_u_b: va = declare(), vu = declare(), vb = declare(); break;
    case layout::b_a: vb = declare(), va = declare(); break;
  }
  ir::id loop = b.range_for(b.constant_int(dtype::i32, 0), b.shape(0, 0));
  b.push_block(fn.at(loop).block0);
  std::array<ir::id, 1> i{b.loop_index_of(loop)};
  ir::id xi = b.global_load(0, 0, i), yi = b.global_load(1, 0, i);
  b.local_atomic(ir::atomic_op::add, va, xi);
  b.local_atomic(ir::atomic_op::add, vb, yi);
  if (vu != ir::none) b.local_atomic(ir::atomic_op::max, vu, xi);
  b.pop_block();
  ir::id sum = b.binary(ir::binary_op::add, dtype::f32, b.local_load(va), b.local_load(vb));
  if (vu != ir::none) sum = b.binary(ir::binary_op::add, dtype::f32, sum, b.local_load(vu));
  test::fill_loop(fn, b, 2, sum);
  const auto s = analysis::analyze_structure(fn);
  if (split) {
    const analysis::split_decision d = analysis::plan_split(fn, s);
    return {d.plan.slot_of(va), d.plan.slot_of(vb)};
  }
  const analysis::task_plan p = analysis::plan_whole_kernel(fn, s);
  return {p.slot_of(va), p.slot_of(vb)};
}
constexpr bool slots_follow_content(bool split) {
  const two_slots base = reduction_slots(layout::a_b, split);
  return base.a >= 0 && base.b >= 0 && base.a != base.b && reduction_slots(layout::u_a_b, split) == base &&
         reduction_slots(layout::a_u_b, split) == base && reduction_slots(layout::b_a, split) == base;
}
QD_CONSTEXPR_CHECK(slots_follow_content(false), "whole kernel: global temporaries");
QD_CONSTEXPR_CHECK(slots_follow_content(true), "split: the persisted buffer");
QD_CONSTEXPR_CHECK(reduction_slots(layout::a_b, false) == reduction_slots(layout::a_b, true),
                   "one assignment for both");

}  // namespace

TEST_CASE("a variable's slot follows its content, not the declarations around it") {
  CHECK(slots_follow_content(false));
  CHECK(slots_follow_content(true));
}

TEST_CASE("identical values get distinct slots by probing") {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::f32, 1, false});
  ir::id v1 = b.local_decl(dtype::f32, b.constant_float(dtype::f32, 0.0));
  ir::id v2 = b.local_decl(dtype::f32, b.constant_float(dtype::f32, 0.0));
  ir::id loop = b.range_for(b.constant_int(dtype::i32, 0), b.shape(0, 0));
  b.push_block(fn.at(loop).block0);
  std::array<ir::id, 1> i{b.loop_index_of(loop)};
  ir::id x = b.global_load(0, 0, i);
  b.local_atomic(ir::atomic_op::add, v1, x);
  b.local_atomic(ir::atomic_op::max, v2, x);
  b.pop_block();
  auto p = plan_of(fn);
  REQUIRE(p.temps.size() == 2);
  CHECK(p.slot_of(v1) != p.slot_of(v2));
  CHECK(p.slot_of(v1) >= 0);
  CHECK(p.slot_of(v2) < analysis::temp_slot_count);
}
