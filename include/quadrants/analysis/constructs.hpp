// The top-level structure of a kernel: per top-level statement what it
// reads, writes and uses; parallel constructs, serial runs and serial constructs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "quadrants/ir/view.hpp"
#include "quadrants/ir/walk.hpp"

namespace qd::inline v0::analysis {

// One global-memory access inside a top-level statement.
struct array_access {
  std::int32_t param = -1;
  bool grad = false;
  bool clamp = false;
  ir::id node = ir::none;
};

struct statement_info {
  ir::id node = ir::none;
  bool parallel = false;   // a top-level range_for
  bool mark = false;       // a graph mark (ir/graph_mark.hpp): ends a serial run, in no construct
  bool invariant = false;  // pure arithmetic over constants, scalar args and shapes
  bool has_global_store = false;
  bool has_atomic = false;  // an atomic on an array element
  bool has_print = false;
  bool has_random = false;
  bool has_volatile = false;
  std::vector<ir::id> uses;         // top-level values used inside (their defining nodes), deduplicated
  std::vector<ir::id> reads_vars;   // top-level variables read (local_decl ids)
  std::vector<ir::id> writes_vars;  // top-level variables written, the declaration included
  std::vector<array_access> reads;
  std::vector<array_access> writes;  // stores and atomics

  // A global store, an atomic or a print: the statement makes a serial run a construct.
  constexpr bool has_effect() const { return has_global_store || has_atomic || has_print; }
  // Recomputing the statement would repeat something observable or draw again.
  constexpr bool unsafe_to_recompute() const { return has_effect() || has_random || has_volatile; }
};

enum class construct_kind : std::uint8_t { parallel, serial };

struct construct {
  construct_kind kind = construct_kind::parallel;
  std::vector<std::int32_t> statements;  // indices into kernel_structure::statements, in order
};

struct kernel_structure {
  std::vector<statement_info> statements;  // the top-level statements, in program order
  std::vector<construct> constructs;
  std::vector<std::int32_t> construct_of;  // per statement: its construct, or -1 (a top-level value)
  std::vector<std::int32_t> statement_of;  // per node: the index of its top-level statement, or -1
};

namespace detail {

constexpr void add_unique(std::vector<ir::id>& v, ir::id x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

}  // namespace detail

constexpr kernel_structure analyze_structure(const ir::function& fn) {
  kernel_structure s;
  s.statement_of.assign(fn.nodes.size(), -1);
  const auto& top = fn.block(0);
  for (std::size_t k = 0; k < top.size(); ++k) {
    ir::id root = top[k];
    statement_info info;
    info.node = root;
    // A top-level loop with qd::loop_config{.serialize = true} runs in order, like a while_.
    info.parallel = fn.at(root).code == ir::op::range_for && (fn.at(root).flags & ir::loop::serialize) == 0;
    info.mark = fn.at(root).code == ir::op::graph_mark;
    auto visit = [&](ir::id i) {
      s.statement_of[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(k);
      const ir::node& n = fn.at(i);
      // Operands defined at the top level by another statement are uses.
      ir::for_each_operand(fn, n, [&](ir::id operand) {
        if (fn.is_top_level(operand) && operand != root) detail::add_unique(info.uses, operand);
      });
      const array_access access{n.param, (n.flags & ir::access::grad) != 0, (n.flags & ir::access::clamp) != 0, i};
      // A declaration is its own variable; the other local nodes name it (ir/view.hpp).
      const ir::id variable = ir::layout_of(n.code).a == ir::operand_use::variable ? n.a : i;
      switch (ir::properties(n.code).effect) {
        case ir::effect::global_read:
          info.reads.push_back(access);
          if (n.flags & ir::access::is_volatile) info.has_volatile = true;
          break;
        case ir::effect::global_write:
          info.writes.push_back(access);
          info.has_global_store = true;
          break;
        case ir::effect::global_update:
          info.reads.push_back(access);
          info.writes.push_back(access);
          info.has_atomic = true;
          break;
        case ir::effect::output: info.has_print = true; break;
        case ir::effect::random_draw: info.has_random = true; break;
        case ir::effect::local_read:
          if (fn.is_top_level(variable)) detail::add_unique(info.reads_vars, variable);
          break;
        case ir::effect::local_write:
          if (fn.is_top_level(variable)) detail::add_unique(info.writes_vars, variable);
          break;
        case ir::effect::local_update:
          if (fn.is_top_level(variable)) {
            detail::add_unique(info.reads_vars, variable);
            detail::add_unique(info.writes_vars, variable);
          }
          break;
        case ir::effect::temp_read:  // global temporaries exist only after lowering
        case ir::effect::temp_write:
        case ir::effect::temp_update:
        case ir::effect::compute:
        case ir::effect::control: break;
      }
    };
    ir::walk_statement(fn, root, [&](ir::id i, int) { visit(i); });
    // The variable a top-level local_load reads is a use, through reads_vars; the
    // declaration operand itself is not a value.
    std::erase_if(info.uses, [&](ir::id u) { return fn.at(u).code == ir::op::local_decl; });
    s.statements.push_back(std::move(info));
  }
  // Invariance: a pure arithmetic top-level statement whose operands are invariant.
  for (auto& info : s.statements) {
    const ir::node& n = fn.at(info.node);
    if (!ir::is_invariant(n.code)) continue;
    bool all = true;
    ir::for_each_operand(fn, n, [&](ir::id operand) {
      std::int32_t st = s.statement_of[static_cast<std::size_t>(operand)];
      if (st < 0 || !s.statements[static_cast<std::size_t>(st)].invariant) all = false;
    });
    info.invariant = all;
  }
  // Constructs: each top-level loop; each run of consecutive non-loop statements
  // that contains an effect. Graph marks end runs and belong to no construct.
  s.construct_of.assign(s.statements.size(), -1);
  std::size_t k = 0;
  while (k < s.statements.size()) {
    if (s.statements[k].parallel) {
      s.construct_of[k] = static_cast<std::int32_t>(s.constructs.size());
      s.constructs.push_back({construct_kind::parallel, {static_cast<std::int32_t>(k)}});
      ++k;
      continue;
    }
    if (s.statements[k].mark) {
      ++k;
      continue;
    }
    std::size_t end = k;
    bool effect = false;
    while (end < s.statements.size() && !s.statements[end].parallel && !s.statements[end].mark)
      effect |= s.statements[end++].has_effect();
    if (effect) {
      construct c{construct_kind::serial, {}};
      for (std::size_t j = k; j < end; ++j) {
        c.statements.push_back(static_cast<std::int32_t>(j));
        s.construct_of[j] = static_cast<std::int32_t>(s.constructs.size());
      }
      s.constructs.push_back(std::move(c));
    }
    k = end;
  }
  return s;
}

}  // namespace qd::inline v0::analysis
