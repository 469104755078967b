// Implementation of codegen/lower.hpp.
#pragma once

#include "quadrants/base/error.hpp"
#include "quadrants/codegen/lower.hpp"
#include "quadrants/detail/format.hpp"
#include "quadrants/ir/builder.hpp"
#include "quadrants/ir/verify.hpp"
#include "quadrants/ir/walk.hpp"
#include "quadrants/ir/nesting.hpp"

namespace qd::codegen {
namespace detail {

class lowering {
 public:
  lowering(const ir::function& kernel, const analysis::kernel_structure& s, const analysis::task_plan& plan)
      : k_(kernel), s_(s), plan_(plan), b_(out_.fn), map_(kernel.nodes.size(), ir::none),
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

  void clone_block(std::int32_t block, std::size_t skip = 0) {
    const auto& stmts = k_.block(block);
    for (std::size_t j = skip; j < stmts.size(); ++j) clone(stmts[j]);
  }

  void clone(ir::id i) {
    if (map_[static_cast<std::size_t>(i)] != ir::none) return;  // already recomputed
    b_.set_location(k_.location(i));
    const ir::node& n = k_.at(i);
    std::int64_t var_slot = (n.code == ir::op::local_load || n.code == ir::op::local_store ||
                             n.code == ir::op::local_atomic)
                                ? plan_.slot_of(n.a)
                                : -1;
    ir::id result = ir::none;
    switch (n.code) {
      case ir::op::local_decl: {
        std::int64_t slot = plan_.slot_of(i);
        if (slot >= 0) {
          b_.temp_store(n.type, slot, operand(n.a));
          result = i;  // marks the declaration as done; never used as an operand
        } else {
          result = b_.local_decl(n.type, operand(n.a));
        }
        break;
      }
      case ir::op::local_load:
        result = var_slot >= 0 ? b_.temp_load(n.type, var_slot) : b_.local_load(operand(n.a));
        break;
      case ir::op::local_store:
        if (var_slot >= 0)
          b_.temp_store(n.type, var_slot, operand(n.b));
        else
          b_.local_store(operand(n.a), operand(n.b));
        result = i;
        break;
      case ir::op::local_atomic:
        result = var_slot >= 0
                     ? b_.temp_atomic(static_cast<ir::atomic_op>(n.sub), n.type, var_slot, operand(n.b), operand(n.c))
                     : b_.local_atomic(static_cast<ir::atomic_op>(n.sub), operand(n.a), operand(n.b), operand(n.c));
        break;
      case ir::op::range_for: {
        if (n.imm == 1) {
          result = b_.range_for(operand(n.a), operand(n.b));
        } else {
          std::vector<ir::id> extents;
          for (std::int32_t d = 0; d < n.list_size; ++d) extents.push_back(operand(k_.list(n, d)));
          result = b_.range_for_nd(extents);
        }
        out_.fn.at(result).flags = n.flags;  // qd::loop_config
        out_.fn.at(result).param = n.param;
        map_[static_cast<std::size_t>(i)] = result;
        for (std::int32_t d = 0; d < static_cast<std::int32_t>(n.imm); ++d)
          map_[static_cast<std::size_t>(k_.block(n.block0)[static_cast<std::size_t>(d)])] = b_.loop_index_of(result, d);
        b_.push_block(out_.fn.at(result).block0);
        clone_block(n.block0, static_cast<std::size_t>(n.imm));
        b_.pop_block();
        break;
      }
      case ir::op::if_: {
        result = b_.if_(operand(n.a));
        map_[static_cast<std::size_t>(i)] = result;
        b_.push_block(out_.fn.at(result).block0);
        clone_block(n.block0);
        b_.pop_block();
        b_.push_block(out_.fn.at(result).block1);
        clone_block(n.block1);
        b_.pop_block();
        break;
      }
      case ir::op::graph_mark: throw internal_error("lowering: a graph mark inside a task (marks are in no task)");
      case ir::op::while_: {
        result = b_.while_();
        map_[static_cast<std::size_t>(i)] = result;
        b_.push_block(out_.fn.at(result).block0);
        clone_block(n.block0);
        b_.pop_block();
        out_.fn.at(result).a = operand(n.a);
        b_.push_block(out_.fn.at(result).block1);
        clone_block(n.block1);
        b_.pop_block();
        break;
      }
      case ir::op::arg:
      case ir::op::binary:
      case ir::op::bound:
      case ir::op::break_:
      case ir::op::continue_:
      case ir::op::cast:
      case ir::op::constant:
      case ir::op::fma:
      case ir::op::global_atomic:
      case ir::op::global_load:
      case ir::op::global_store:
      case ir::op::loop_index:
      case ir::op::print:
      case ir::op::random:
      case ir::op::select:
      case ir::op::shape:
      case ir::op::temp_atomic:
      case ir::op::temp_load:
      case ir::op::temp_store:
      case ir::op::unary: {
        ir::node copy = n;
        copy.a = operand(n.a);
        copy.b = operand(n.b);
        copy.c = operand(n.c);
        if (n.param >= 0) copy.param = param(n.param);
        if (n.list_size > 0) {
          std::vector<std::int32_t> items;
          for (std::int32_t j = 0; j < n.list_size; ++j) {
            std::int32_t item = k_.list(n, j);
            items.push_back(ir::is_text(item)
                                ? b_.add_string(k_.strings[static_cast<std::size_t>(ir::text_index(item))])
                                : operand(item));
          }
          copy.list_begin = b_.add_list(items.begin(), items.end());
        }
        result = b_.emit(copy);
        break;
      }
    }
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
    throw internal_error(fmt::format("IR verifier: node {} {}; the lowered task is malformed (a bug in Quadrants; "
                                     "please report it with the kernel)",
                                     i, what));
  };
  if (top.empty() || t.fn.at(top.back()).code != ir::op::range_for)
    fail(top.empty() ? ir::none : top.back(), "ends a parallel task that must end with its loop");
  // The prologue runs once per thread on a GPU: a draw there would differ by thread.
  for (std::size_t k = 0; k + 1 < top.size(); ++k) {
    auto no_random = [&](ir::id i) {
      if (t.fn.at(i).code == ir::op::random) fail(i, "draws a random number in a parallel task's prologue");
    };
    no_random(top[k]);
    const ir::node& n = t.fn.at(top[k]);
    if (n.block0 >= 0) ir::walk(t.fn, n.block0, [&](ir::id i, int) { no_random(i); });
    if (n.block1 >= 0) ir::walk(t.fn, n.block1, [&](ir::id i, int) { no_random(i); });
  }
}

}  // namespace qd::codegen
