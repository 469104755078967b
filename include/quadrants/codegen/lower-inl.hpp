// Implementation of codegen/lower.hpp.
#pragma once

#include "quadrants/base/error.hpp"
#include "quadrants/codegen/lower.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/ir/copy.hpp"
#include "quadrants/ir/nesting.hpp"
#include "quadrants/ir/verify.hpp"
#include "quadrants/ir/visit.hpp"

namespace qd::inline v0::codegen {
namespace detail {

class lowering {
 public:
  lowering(const ir::function& kernel, const analysis::kernel_structure& s, const analysis::task_plan& plan)
      : k_(kernel),
        s_(s),
        plan_(plan),
        b_(out_.fn),
        map_(kernel.nodes.size(), ir::none),
        param_remap_(kernel.params.size(), -1) {
    out_.fn.is_gradient = kernel.is_gradient;
  }

  lowered_task run(const analysis::task& t) {
    out_.parallel = t.parallel;
    out_.construct = t.construct;
    in_task_.assign(s_.statements.size(), false);
    for (std::int32_t st : t.statements) in_task_[static_cast<std::size_t>(st)] = true;
    // Values from outside the task, at its start: loads from temporaries, or
    // recomputed invariant arithmetic.
    for (std::int32_t st : t.statements)
      for (ir::id u : s_.statements[static_cast<std::size_t>(st)].uses) bring_in(u);
    for (std::int32_t st : t.statements) clone(s_.statements[static_cast<std::size_t>(st)].node);
    return std::move(out_);
  }

 private:
  [[noreturn]] static void fail(const std::string& what) {
    throw internal_error("lowering: " + what + " (a bug in Quadrants; please report it with the kernel)");
  }

  std::int32_t param(std::int32_t p) {
    auto& r = param_remap_[static_cast<std::size_t>(p)];
    if (r < 0) {
      r = b_.add_param(k_.params[static_cast<std::size_t>(p)]);
      out_.param_map.push_back(p);
    }
    return r;
  }

  ir::id operand(ir::id old) {
    if (old == ir::none) return ir::none;
    ir::id m = map_[static_cast<std::size_t>(old)];
    if (m == ir::none) fail(fmt::format("operand %{} is not available in the task", old));
    return m;
  }

  void bring_in(ir::id v) {
    if (map_[static_cast<std::size_t>(v)] != ir::none) return;
    std::int32_t st = s_.statement_of[static_cast<std::size_t>(v)];
    if (st >= 0 && in_task_[static_cast<std::size_t>(st)]) return;  // computed by the task itself, in order
    if (st >= 0 && s_.statements[static_cast<std::size_t>(st)].invariant) {
      ir::for_each_operand(k_, k_.at(v), [&](ir::id o) { bring_in(o); });
      clone(v);
      return;
    }
    std::int64_t slot = plan_.slot_of(v);
    if (slot < 0) fail(fmt::format("top-level value %{} has neither a temporary slot nor a definition in the task", v));
    map_[static_cast<std::size_t>(v)] = b_.temp_load(k_.at(v).type, slot);
  }

  // Copies node i into the task; a control op's blocks statement by statement. Only the
  // local-variable ops differ from a plain copy: a variable that lives in a temporary
  // slot is read and written there.
  void clone(ir::id i) {
    if (map_[static_cast<std::size_t>(i)] != ir::none) return;  // already recomputed
    b_.set_location(k_.location(i));
    const ir::node& n = k_.at(i);
    using ir::op;
    const ir::id result = ir::match<ir::id>(
        k_, i,
        [&](ir::view<op::local_decl> d) {
          const std::int64_t slot = plan_.slot_of(i);
          if (slot < 0) return b_.local_decl(n.type, operand(d.initial_value()));
          b_.temp_store(n.type, slot, operand(d.initial_value()));
          return i;  // marks the declaration as done; never used as an operand
        },
        [&](ir::view<op::local_load> l) {
          const std::int64_t slot = plan_.slot_of(l.variable());
          return slot >= 0 ? b_.temp_load(n.type, slot) : b_.local_load(operand(l.variable()));
        },
        [&](ir::view<op::local_store> s) {
          if (const std::int64_t slot = plan_.slot_of(s.variable()); slot >= 0)
            b_.temp_store(n.type, slot, operand(s.value()));
          else
            b_.local_store(operand(s.variable()), operand(s.value()));
          return i;
        },
        [&](ir::view<op::local_atomic> u) {
          const std::int64_t slot = plan_.slot_of(u.variable());
          return slot >= 0 ? b_.temp_atomic(u.op(), n.type, slot, operand(u.value()), operand(u.expected()))
                           : b_.local_atomic(u.op(), operand(u.variable()), operand(u.value()), operand(u.expected()));
        },
        [&](ir::view<op::graph_mark>) -> ir::id {
          throw internal_error("lowering: a graph mark inside a task (marks are in no task)");
        },
        [&](ir::node_view) {
          return ir::copy_node(
              b_, k_, i, map_, [&](std::int32_t p) { return param(p); }, [&](ir::id j) { clone(j); });
        });
    map_[static_cast<std::size_t>(i)] = result;
    // A value other tasks need is published to its slot as soon as it exists.
    if (k_.is_top_level(i) && n.code != ir::op::local_decl && ir::has_value(n.code)) {
      std::int64_t slot = plan_.slot_of(i);
      if (slot >= 0) b_.temp_store(n.type, slot, result);
    }
  }

  const ir::function& k_;
  const analysis::kernel_structure& s_;
  const analysis::task_plan& plan_;
  lowered_task out_;
  ir::builder b_;
  std::vector<ir::id> map_;
  std::vector<std::int32_t> param_remap_;
  std::vector<bool> in_task_;
};

}  // namespace detail

QD_FUNC lowered_task lower_task(const ir::function& kernel, const analysis::kernel_structure& s,
                                const analysis::task& t, const analysis::task_plan& plan) {
  // The tracer refuses deeper kernels; IR built otherwise must not take the recursive
  // passes below (lowering, emitter, interpreter) deeper than they are meant to go.
  if (int depth = ir::nesting_depth(kernel); depth > ir::max_nesting_depth)
    throw internal_error(fmt::format("lowering: the kernel nests {} levels, over the limit of {} that tracing enforces",
                                     depth, ir::max_nesting_depth));
  return detail::lowering(kernel, s, plan).run(t);
}

QD_FUNC void verify(const lowered_task& t) {
  ir::verify(t.fn, ir::stage::lowered);
  if (!t.parallel) return;
  const auto& top = t.fn.block(0);
  auto fail = [](ir::id i, std::string_view what) {
    throw internal_error(
        fmt::format("IR verifier: node {} {}; the lowered task is malformed (a bug in Quadrants; "
                    "please report it with the kernel)",
                    i, what));
  };
  if (top.empty() || t.fn.at(top.back()).code != ir::op::range_for)
    fail(top.empty() ? ir::none : top.back(), "ends a parallel task that must end with its loop");
  // The prologue runs once per thread on a GPU: a draw there would differ by thread.
  for (std::size_t k = 0; k + 1 < top.size(); ++k)
    ir::visit_statement(t.fn, top[k], [&](ir::view<ir::op::random> r) {
      fail(r.self(), "draws a random number in a parallel task's prologue");
    });
}

}  // namespace qd::inline v0::codegen
