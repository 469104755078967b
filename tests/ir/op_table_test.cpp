// The op table is the one place an IR op's properties are decided: checked for
// consistency at compile time, and every op it lists must be produced by the tracer,
// the lowering or the adjoint (so a new op that none emits fails here; one the
// emitter or the interpreter forgets fails to compile: their switches list every op).
#include <doctest/doctest.h>

#include <set>

#include "quadrants/analysis/task_plan.hpp"
#include "quadrants/autodiff/adjoint.hpp"
#include "quadrants/codegen/lower.hpp"
#include "quadrants/ir/dce.hpp"
#include "quadrants/ir/node.hpp"
#include "quadrants/ir/walk.hpp"
#include "quadrants/lang/kernel_signature.hpp"
#include "quadrants/quadrants.hpp"

using namespace qd;

constexpr bool table_is_consistent() {
  for (std::size_t k = 0; k < ir::op_count; ++k) {
    const ir::op_properties& p = ir::op_table[k];
    if (ir::name(static_cast<ir::op>(k)) != p.name) return false;
    if (p.invariant && p.effect != ir::effect::compute) return false;  // invariant values are pure arithmetic
    if (p.effect == ir::effect::control && p.has_value) return false;  // loops and branches yield nothing
    if ((p.effect == ir::effect::global_write || p.effect == ir::effect::temp_write) && p.has_value) return false;
  }
  return true;
}
static_assert(table_is_consistent(), "the op table contradicts itself");
static_assert(ir::is_liveness_root(ir::node{.code = ir::op::global_store}) &&
              !ir::is_liveness_root(ir::node{.code = ir::op::random}) &&
              ir::is_pure(ir::node{.code = ir::op::global_load}) &&
              !ir::is_pure(ir::node{.code = ir::op::global_load, .flags = ir::access::is_volatile}) &&
              ir::is_liveness_root(ir::node{.code = ir::op::global_load, .flags = ir::access::is_volatile}));

TEST_CASE("every op of the table is produced by the tracer, by lowering or by the adjoint") {
  auto body = [](qd::types::ndarray<float, 1> x, qd::types::ndarray<std::int32_t, 1> n, qd::f32 a,
                 qd::types::ndarray<std::int32_t, 0> again) {
    qd::var<float> total = 0.0f;                // local_decl
    qd::range_for(x.shape(0), [&](qd::i32 i) {  // range_for, shape, loop_index
      total += x[i];                            // local_atomic (a reduction), global_load
    });
    qd::var<std::int32_t> k = n[0];
    qd::while_([&] { return k > 0; }, [&] {  // while_, local_load, local_store
      k -= 1;
      qd::if_(k == 7, [&] { qd::continue_(); });  // continue_
      qd::if_(k == 3, [&] { qd::break_(); });     // break_
    });
    qd::if_(k == 0, [&] { n[1] = qd::atomic_add(n[2], 1); });     // if_, global_atomic, global_store
    qd::range_for(qd::cast<std::int64_t>(n[3]), [&](qd::i32 i) {  // cast, bound
      x[i] = qd::select(x[i] > a, qd::fma(x[i], a, total), -x[i]) + qd::random<float>();  // select fma unary random arg
    });
    qd::range_for(1, [&](qd::i32) { qd::print("k", k, qd::volatile_load(x[0])); });        // print, constant
    qd::graph::do_while(again, [&] { qd::range_for(1, [&](qd::i32) { again() = 0; }); });  // graph_mark
  };
  detail::tracer t("every_op", {});
  t.graph_kernel = true;  // a graph kernel: qd::graph::do_while is allowed
  detail::trace_kernel(body, t);
  ir::eliminate_dead_code(t.fn);
  std::set<ir::op> seen;
  ir::walk(t.fn, 0, [&](ir::id i, int) { seen.insert(t.fn.at(i).code); });
  // The whole-kernel lowering adds the global temporaries.
  analysis::kernel_structure s = analysis::analyze_structure(t.fn);
  analysis::task_plan plan = analysis::plan_whole_kernel(t.fn, s);
  for (const auto& task : plan.tasks) {
    codegen::lowered_task lowered = codegen::lower_task(t.fn, s, task, plan);
    ir::walk(lowered.fn, 0, [&](ir::id i, int) { seen.insert(lowered.fn.at(i).code); });
  }
  {  // The adjoint of a serial loop carrying a variable adds the per-thread arrays (its value stacks).
    auto carry = [](qd::types::ndarray<double, 1, qd::needs_grad> x, qd::types::ndarray<double, 1, qd::needs_grad> y) {
      qd::range_for(y.shape(0), [&](qd::i32 i) {
        qd::var<double> p = 1.0;
        qd::range_for(x.shape(0), [&](qd::i32 j) { p = p * x[j] + 0.5; });  // local_array, array_store, array_load
        y[i] = p;
      });
    };
    detail::tracer c("carry", {});
    detail::trace_kernel(carry, c);
    ir::eliminate_dead_code(c.fn);
    const ir::function adjoint = autodiff::make_adjoint(c.fn, {.kernel = "carry", .params = {}});
    ir::walk(adjoint, 0, [&](ir::id i, int) { seen.insert(adjoint.at(i).code); });
  }
  for (std::size_t k = 0; k < ir::op_count; ++k) {
    const auto o = static_cast<ir::op>(k);
    CHECK_MESSAGE(seen.count(o) == 1,
                  "op '" << ir::name(o)
                         << "' is produced neither by these kernels' traces nor by their lowering or adjoint: "
                            "teach the tracer the new op and use it in this kernel");
  }
}
