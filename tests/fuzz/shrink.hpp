// Shrinking a fuzz case that shows a finding: greedy delta debugging over the IR
// (drop statements, inline branches, run loops once, replace values by constants or
// operands), keeping each edit after which the case still shows the same finding.
// The bodies under QD_FUZZ_IMPLEMENTATION are compiled once, in fuzz_support.cpp (the
// library qd_fuzz_support); other translation units see their declarations only.
#pragma once

#include <functional>
#include <set>
#include <vector>

#include <quadrants/ir/builder.hpp>
#include <quadrants/ir/copy.hpp>
#include <quadrants/ir/dce.hpp>
#include <quadrants/ir/walk.hpp>

#include "fuzz/fuzz_case.hpp"

namespace qd_fuzz {

struct edit {
  enum kind { none, drop, operand_a, operand_b, operand_c, inline_then, inline_else, loop_once } what = none;
  qd::ir::id node = qd::ir::none;
};

namespace detail {

// A copy of a function, reachable nodes only, with one edit applied.
class copier {
 public:
  copier(const qd::ir::function& in, edit e) : in_(in), e_(e), b_(out_), map_(in.nodes.size(), qd::ir::none) {
    out_.params = in.params;
    out_.is_gradient = in.is_gradient;
  }

  qd::ir::function run() {
    clone_block(0, 0);
    return std::move(out_);
  }

 private:
  qd::ir::id m(qd::ir::id old) const {
    if (old == qd::ir::none) return qd::ir::none;
    qd::ir::id x = map_[static_cast<std::size_t>(old)];
    if (x == qd::ir::none) throw std::runtime_error("shrink: an edit removed a value still in use");
    return x;
  }

  qd::ir::id zero(qd::dtype t) { return qd::is_float(t) ? b_.constant_float(t, 0.0) : b_.constant_int(t, 0); }

  void clone_block(std::int32_t block, std::size_t skip) {
    const auto& stmts = in_.block(block);
    for (std::size_t k = skip; k < stmts.size(); ++k) clone(stmts[k]);
  }

  void clone(qd::ir::id i) {
    const qd::ir::node& n = in_.at(i);
    if (i == e_.node) {
      switch (e_.what) {
        case edit::drop:
          if (n.code == qd::ir::op::local_decl) {
            map_[static_cast<std::size_t>(i)] = b_.local_decl(n.type, zero(n.type));
          } else if (qd::ir::has_value(n.code)) {
            map_[static_cast<std::size_t>(i)] = zero(n.type);
          }
          return;
        case edit::operand_a:
        case edit::operand_b:
        case edit::operand_c: {
          qd::ir::id o = e_.what == edit::operand_a ? n.a : e_.what == edit::operand_b ? n.b : n.c;
          if (o == qd::ir::none || in_.at(o).type != n.type) throw std::runtime_error("shrink: no such operand");
          map_[static_cast<std::size_t>(i)] = m(o);
          return;
        }
        case edit::inline_then: clone_block(n.block0, 0); return;
        case edit::inline_else: clone_block(n.block1, 0); return;
        case edit::loop_once:
          if (n.imm != 1) throw std::runtime_error("shrink: only rank-1 loops run once");
          map_[static_cast<std::size_t>(in_.block(n.block0)[0])] = m(n.a);
          clone_block(n.block0, 1);
          return;
        case edit::none: break;
      }
    }
    // Unedited: a plain copy, a control op's blocks statement by statement.
    qd::ir::copy_node(
        b_, in_, i, map_, [](std::int32_t p) { return p; }, [&](qd::ir::id j) { clone(j); });
  }

  const qd::ir::function& in_;
  edit e_;
  qd::ir::function out_;
  qd::ir::builder b_;
  std::vector<qd::ir::id> map_;
};

// Nodes an edit must not touch: a while loop's condition and its counter's updates
// (with their operands), so that no edit makes a loop run forever.
inline std::set<qd::ir::id> protected_nodes(const qd::ir::function& fn) {
  std::set<qd::ir::id> out, counters;
  qd::ir::walk(fn, 0, [&](qd::ir::id i, int) {
    const auto& n = fn.at(i);
    if (n.code != qd::ir::op::while_) return;
    qd::ir::walk(fn, n.block0, [&](qd::ir::id j, int) {
      out.insert(j);
      if (fn.at(j).code == qd::ir::op::local_load) counters.insert(fn.at(j).a);
    });
  });
  std::vector<qd::ir::id> work;
  qd::ir::walk(fn, 0, [&](qd::ir::id i, int) {
    const auto& n = fn.at(i);
    if ((n.code == qd::ir::op::local_store || n.code == qd::ir::op::local_atomic) && counters.count(n.a))
      work.push_back(i);
    if (n.code == qd::ir::op::local_decl && counters.count(i)) work.push_back(i);
  });
  while (!work.empty()) {
    qd::ir::id i = work.back();
    work.pop_back();
    if (!out.insert(i).second) continue;
    qd::ir::for_each_operand(fn, fn.at(i), [&](qd::ir::id o) { work.push_back(o); });
  }
  return out;
}

}  // namespace detail

// The function with `e` applied, dead code removed, renumbered compactly.
inline qd::ir::function apply(const qd::ir::function& fn, edit e) {
  qd::ir::function edited = detail::copier(fn, e).run();
  qd::ir::eliminate_dead_code(edited);
  return detail::copier(edited, {}).run();
}

// Greedy shrinking: `shows(candidate)` tells whether a candidate still shows the
// failure. Stops after `budget` candidates.
fuzz_case shrink(fuzz_case c, const std::function<bool(const fuzz_case&)>& shows, int budget);
#if defined(QD_FUZZ_IMPLEMENTATION)
fuzz_case shrink(fuzz_case c, const std::function<bool(const fuzz_case&)>& shows, int budget) {
  int tried = 0;
  auto attempt = [&](fuzz_case candidate) {
    if (tried >= budget) return false;
    ++tried;
    if (!shows(candidate)) return false;
    c = std::move(candidate);
    return true;
  };
  {
    fuzz_case compact = c;
    compact.fn = apply(c.fn, {});
    attempt(std::move(compact));
  }
  if (c.launches > 1) {
    fuzz_case one = c;
    one.launches = 1;
    attempt(std::move(one));
  }
  for (bool progress = true; progress && tried < budget;) {
    progress = false;
    std::vector<edit> edits;
    const auto guarded = detail::protected_nodes(c.fn);
    // Whole top-level statements first (biggest steps), last to first.
    const auto& top = c.fn.block(0);
    for (std::size_t k = top.size(); k-- > 0;) edits.push_back({edit::drop, top[k]});
    qd::ir::walk(c.fn, 0, [&](qd::ir::id i, int depth) {
      if (guarded.count(i)) return;
      const auto& n = c.fn.at(i);
      if (depth > 0 && n.code != qd::ir::op::loop_index) edits.push_back({edit::drop, i});
      if (n.code == qd::ir::op::if_) {
        edits.push_back({edit::inline_then, i});
        edits.push_back({edit::inline_else, i});
      }
      if (n.code == qd::ir::op::range_for && n.imm == 1) edits.push_back({edit::loop_once, i});
      if (qd::ir::has_value(n.code) && n.code != qd::ir::op::local_decl && n.code != qd::ir::op::loop_index) {
        if (n.a != qd::ir::none && c.fn.at(n.a).type == n.type && n.code != qd::ir::op::local_load)
          edits.push_back({edit::operand_a, i});
        if (n.b != qd::ir::none && c.fn.at(n.b).type == n.type) edits.push_back({edit::operand_b, i});
        if (n.c != qd::ir::none && c.fn.at(n.c).type == n.type) edits.push_back({edit::operand_c, i});
      }
    });
    for (const edit& e : edits) {
      if (tried >= budget) break;
      fuzz_case candidate = c;
      try {
        candidate.fn = apply(c.fn, e);
      } catch (const std::exception&) {
        continue;
      }
      if (candidate.fn.nodes.size() >= c.fn.nodes.size()) continue;  // every step shrinks: the loop ends
      if (attempt(std::move(candidate))) {
        progress = true;
        break;  // the ids changed: enumerate the edits again
      }
    }
  }
  return c;
}
#endif

}  // namespace qd_fuzz
