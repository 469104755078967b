// How a kernel runs as tasks (device launches). The whole-kernel plan runs every
// serial run and loop as a task and keeps crossing values in global temporaries.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "quadrants/analysis/constructs.hpp"
#include "quadrants/base/limits.hpp"
#include "quadrants/ir/edge_list.hpp"
#include "quadrants/ir/serialize.hpp"
#include "quadrants/ir/visit.hpp"

namespace qd::inline v0::analysis {

struct task {
  bool parallel = false;
  std::vector<std::int32_t> statements;  // top-level statement indices, in program order
  std::int32_t construct = -1;           // the construct this task runs, or -1 (a pure serial run)
  // A task that runs no construct: the first statement of its serial run, which names
  // its random stream, so that the whole and the split variant draw alike.
  std::int32_t run = -1;
};

// A value (top-level node) or variable (top-level local_decl) kept in a slot.
struct temp_assignment {
  ir::id node = ir::none;
  std::int64_t slot = 0;
};

struct task_plan {
  std::vector<task> tasks;
  std::vector<temp_assignment> temps;  // empty for the per-offload variant
  std::size_t temps_needed = 0;        // more than temp_slot_count: the kernel cannot run whole

  constexpr std::int64_t slot_of(ir::id node) const {
    for (const auto& t : temps)
      if (t.node == node) return t.slot;
    return -1;
  }
};

// Global temporaries: limits::temp_slot_count slots, assigned by content hash with
// linear probing, so editing one statement does not move the slots of the others.
using limits::temp_slot_count;

namespace detail {

constexpr std::uint64_t mix_hash(std::uint64_t h, std::uint64_t x) {
  return (h ^ x) * 0x100000001b3ull + 0x9e3779b9ull;
}

// A node's own fields. A parameter counts by its interface and its position among the
// parameters of that interface, so adding a parameter of another type moves no slot.
constexpr std::uint64_t fields_hash(const ir::function& fn, const ir::node& n) {
  std::string bytes;
  bytes.push_back(static_cast<char>(n.code));
  bytes.push_back(static_cast<char>(n.type));
  bytes.push_back(static_cast<char>(n.sub));
  bytes.push_back(static_cast<char>(n.flags));
  if (n.param >= 0 && static_cast<std::size_t>(n.param) < fn.params.size()) {
    const ir::param_desc& p = fn.params[static_cast<std::size_t>(n.param)];
    bytes.push_back(static_cast<char>(p.is_array));
    bytes.push_back(static_cast<char>(p.type));
    bytes.push_back(static_cast<char>(p.ndim));
    bytes.push_back(static_cast<char>(p.needs_grad));
    std::int64_t rank = 0;
    for (std::int32_t q = 0; q < n.param; ++q) rank += fn.params[static_cast<std::size_t>(q)] == p;
    ir::detail::put_signed(bytes, rank);
  } else {
    ir::detail::put_signed(bytes, n.param);
  }
  ir::detail::put_signed(bytes, n.imm);
  return ir::fnv1a(bytes);
}

// A content hash of a top-level node: its own fields and its top-level operands'
// hashes (a variable's loads hash its declaration, not its updates).
constexpr std::uint64_t content_hash(const ir::function& fn, ir::id i, std::vector<std::uint64_t>& memo) {
  std::uint64_t& cached = memo[static_cast<std::size_t>(i)];
  if (cached != 0) return cached;
  const ir::node& n = fn.at(i);
  std::uint64_t h = fields_hash(fn, n);
  ir::for_each_operand(fn, n, [&](ir::id operand) {
    h = mix_hash(h, fn.is_top_level(operand) ? content_hash(fn, operand, memo) : 0x51ed27ull);
  });
  cached = h == 0 ? 1 : h;
  return cached;
}

// The hash of any expression, inside loop bodies too (a loop index counts by its
// dimension); top-level operands by their content hash.
constexpr std::uint64_t expression_hash(const ir::function& fn, ir::id i, std::vector<std::uint64_t>& memo,
                                        int depth = 0) {
  if (fn.is_top_level(i)) return content_hash(fn, i, memo);
  const ir::node& n = fn.at(i);
  std::uint64_t h = fields_hash(fn, n);
  if (n.code == ir::op::loop_index || depth > 8) return h;
  ir::for_each_operand(fn, n, [&](ir::id operand) { h = mix_hash(h, expression_hash(fn, operand, memo, depth + 1)); });
  return h;
}

}  // namespace detail

// Slots for `items`: values (top-level nodes) and variables (top-level local_decls).
// A value's slot comes from its defining expression; a variable's from its
// declaration and every update of it, in program order (two variables declared alike
// but updated differently do not depend on each other's order). Items of equal
// content are told apart by their order among themselves; collisions probe linearly.
// Unrelated items never move a slot unless their hashes collide modulo the count.
constexpr std::vector<temp_assignment> assign_slots(const ir::function& fn, std::vector<ir::id> items) {
  if (items.empty()) return {};  // most kernels: nothing persisted, no numbering or hashing
  const std::vector<ir::id> number = ir::canonical_numbering(fn);
  std::sort(items.begin(), items.end(), [&](ir::id x, ir::id y) {
    return number[static_cast<std::size_t>(x)] < number[static_cast<std::size_t>(y)];
  });
  std::vector<std::uint64_t> memo(fn.nodes.size(), 0);
  ir::edge_list updates;  // each declaration's updates, in program order
  ir::visit(
      fn, 0, [&](ir::view<ir::op::local_store> s) { updates.add(s.variable(), s.self()); },
      [&](ir::view<ir::op::local_atomic> u) { updates.add(u.variable(), u.self()); });
  updates.seal();
  std::vector<std::uint64_t> hashes;
  for (ir::id item : items) {
    std::uint64_t h = detail::content_hash(fn, item, memo);
    if (fn.at(item).code == ir::op::local_decl)
      updates.for_each(item, [&](ir::id u) { h = detail::mix_hash(h, detail::expression_hash(fn, u, memo)); });
    hashes.push_back(h);
  }
  std::vector<temp_assignment> out;
  std::vector<bool> taken(static_cast<std::size_t>(temp_slot_count), false);
  for (std::size_t k = 0; k < items.size(); ++k) {
    if (out.size() >= static_cast<std::size_t>(temp_slot_count)) break;  // checked by the caller
    std::uint64_t twins = 0;
    for (std::size_t j = 0; j < k; ++j) twins += hashes[j] == hashes[k];
    const std::uint64_t h = detail::mix_hash(hashes[k], twins);
    auto slot = static_cast<std::int64_t>(h % static_cast<std::uint64_t>(temp_slot_count));
    while (taken[static_cast<std::size_t>(slot)]) slot = (slot + 1) % temp_slot_count;
    taken[static_cast<std::size_t>(slot)] = true;
    out.push_back({items[k], slot});
  }
  return out;
}

// The first non-invariant statement of each statement's serial run (-1 for loops and
// invariant statements): a serial run is the statements between two loops.
constexpr std::vector<std::int32_t> serial_runs(const kernel_structure& s) {
  std::vector<std::int32_t> run(s.statements.size(), -1);
  std::int32_t start = -1;
  for (std::size_t k = 0; k < s.statements.size(); ++k) {
    const statement_info& st = s.statements[k];
    if (st.parallel || st.mark) {  // a loop or a graph mark ends the run
      start = -1;
      continue;
    }
    if (st.invariant) continue;
    if (start < 0) start = static_cast<std::int32_t>(k);
    run[k] = start;
  }
  return run;
}

// `results`: top-level values or variables the host reads back after the launch (a
// kernel's return value): each gets a slot, published by the task that computes it.
constexpr task_plan plan_whole_kernel(const ir::function& fn, const kernel_structure& s,
                                      const std::vector<ir::id>& results = {}) {
  task_plan plan;
  const std::size_t count = s.statements.size();
  const std::vector<std::int32_t> runs = serial_runs(s);
  std::vector<std::int32_t> task_of(count, -1);
  bool in_serial_run = false;
  for (std::size_t k = 0; k < count; ++k) {
    const statement_info& st = s.statements[k];
    if (st.invariant) continue;  // recomputed wherever it is used
    if (st.mark) {               // a graph mark: in no task, and the next statement starts a new one
      in_serial_run = false;
      continue;
    }
    if (st.parallel || !in_serial_run) {
      plan.tasks.push_back({st.parallel, {}, s.construct_of[k]});
      if (!st.parallel && s.construct_of[k] < 0) plan.tasks.back().run = runs[k];
    }
    in_serial_run = !st.parallel;
    plan.tasks.back().statements.push_back(static_cast<std::int32_t>(k));
    task_of[k] = static_cast<std::int32_t>(plan.tasks.size() - 1);
  }
  // Values crossing tasks, and variables shared by tasks or touched inside a loop body.
  std::vector<ir::id> temps;
  std::vector<std::vector<std::int32_t>> var_tasks(fn.nodes.size());
  for (std::size_t k = 0; k < count; ++k) {
    const statement_info& st = s.statements[k];
    if (task_of[k] < 0) continue;
    for (ir::id u : st.uses) {
      std::int32_t def = s.statement_of[static_cast<std::size_t>(u)];
      if (def >= 0 && !s.statements[static_cast<std::size_t>(def)].invariant &&
          task_of[static_cast<std::size_t>(def)] != task_of[k])
        analysis::detail::add_unique(temps, u);
    }
    for (const auto* vars : {&st.reads_vars, &st.writes_vars})
      for (ir::id v : *vars) {
        auto& tasks = var_tasks[static_cast<std::size_t>(v)];
        if (std::find(tasks.begin(), tasks.end(), task_of[k]) == tasks.end()) tasks.push_back(task_of[k]);
        if (st.parallel) analysis::detail::add_unique(temps, v);
      }
  }
  for (std::size_t v = 0; v < var_tasks.size(); ++v)
    if (var_tasks[v].size() > 1) analysis::detail::add_unique(temps, static_cast<ir::id>(v));
  for (ir::id r : results) analysis::detail::add_unique(temps, r);
  plan.temps_needed = temps.size();
  plan.temps = assign_slots(fn, std::move(temps));
  return plan;
}

}  // namespace qd::inline v0::analysis
