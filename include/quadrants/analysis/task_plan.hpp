// How a kernel runs as tasks (device launches). The whole-kernel plan runs every
// serial run and loop as a task and keeps crossing values in global temporaries.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "quadrants/analysis/constructs.hpp"
#include "quadrants/base/limits.hpp"
#include "quadrants/ir/serialize.hpp"

namespace qd::analysis {

struct task {
  bool parallel = false;
  std::vector<std::int32_t> statements;  // top-level statement indices, in program order
  std::int32_t construct = -1;           // the construct this task runs, or -1 (a pure serial run)
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

// A content hash of a top-level node: its own fields and its operands' hashes.
constexpr std::uint64_t content_hash(const ir::function& fn, ir::id i, std::vector<std::uint64_t>& memo) {
  std::uint64_t& cached = memo[static_cast<std::size_t>(i)];
  if (cached != 0) return cached;
  const ir::node& n = fn.at(i);
  std::string bytes;
  bytes.push_back(static_cast<char>(n.code));
  bytes.push_back(static_cast<char>(n.type));
  bytes.push_back(static_cast<char>(n.sub));
  bytes.push_back(static_cast<char>(n.flags));
  ir::detail::put_signed(bytes, n.param);
  ir::detail::put_signed(bytes, n.imm);
  std::uint64_t h = ir::fnv1a(bytes);
  ir::for_each_operand(fn, n, [&](ir::id operand) {
    std::uint64_t o = fn.is_top_level(operand) ? content_hash(fn, operand, memo) : 0x51ed27ull;
    h = (h ^ o) * 0x100000001b3ull;
  });
  cached = h == 0 ? 1 : h;
  return cached;
}

}  // namespace detail

constexpr task_plan plan_whole_kernel(const ir::function& fn, const kernel_structure& s) {
  task_plan plan;
  const std::size_t count = s.statements.size();
  std::vector<std::int32_t> task_of(count, -1);
  bool in_serial_run = false;
  for (std::size_t k = 0; k < count; ++k) {
    const statement_info& st = s.statements[k];
    if (st.invariant) continue;  // recomputed wherever it is used
    if (st.parallel || !in_serial_run) plan.tasks.push_back({st.parallel, {}, s.construct_of[k]});
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
      if (def >= 0 && !s.statements[static_cast<std::size_t>(def)].invariant && task_of[static_cast<std::size_t>(def)] != task_of[k])
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
  std::sort(temps.begin(), temps.end());
  plan.temps_needed = temps.size();
  std::vector<std::uint64_t> memo(fn.nodes.size(), 0);
  std::vector<bool> taken(static_cast<std::size_t>(temp_slot_count), false);
  for (ir::id t : temps) {
    if (plan.temps.size() >= static_cast<std::size_t>(temp_slot_count)) break;  // checked by the caller
    auto slot = static_cast<std::int64_t>(detail::content_hash(fn, t, memo) % static_cast<std::uint64_t>(temp_slot_count));
    while (taken[static_cast<std::size_t>(slot)]) slot = (slot + 1) % temp_slot_count;
    taken[static_cast<std::size_t>(slot)] = true;
    plan.temps.push_back({t, slot});
  }
  return plan;
}

}  // namespace qd::analysis
