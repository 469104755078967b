// The per-offload split (SPEC §3-§5): each construct recomputes, from the kernel's
// parameters alone, the slice of top-level statements it needs -- when provably
// equivalent to the whole kernel. Otherwise the first failing condition is reported.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "quadrants/analysis/fallback.hpp"
#include "quadrants/analysis/task_plan.hpp"

namespace qd::analysis {

// Two parameters the split assumes do not share memory: checked at each launch.
struct disjoint_pair {
  std::int32_t a = -1, b = -1;  // a < b
  friend constexpr bool operator==(const disjoint_pair&, const disjoint_pair&) = default;
};

struct split_decision {
  fallback_reason reason = fallback_reason::none;
  // Where the reason was found (for the log line and fallback_detail).
  std::int32_t construct = -1;          // the construct whose slice failed
  std::int32_t statement = -1;          // the slice statement at fault
  std::int32_t other_construct = -1;    // the construct that modifies or writes
  ir::id read = ir::none;               // the re-read access (stale_reread, aliasing_gradient)
  ir::id write = ir::none;              // the write it conflicts with
  ir::id variable = ir::none;           // the carried variable (carried_value)
  task_plan plan;                       // one task per construct, no temporaries (when split)
  std::vector<disjoint_pair> pairs;     // run-time disjointness checks (when split)
};

namespace detail {

// Statements `st` needs recomputed before `before`: its values' definitions, and
// every earlier write of the variables it touches; transitively.
constexpr void add_slice(const kernel_structure& s, std::int32_t st, std::int32_t before, std::vector<bool>& in) {
  const statement_info& info = s.statements[static_cast<std::size_t>(st)];
  for (ir::id u : info.uses) {
    std::int32_t def = s.statement_of[static_cast<std::size_t>(u)];
    if (def >= 0 && def < before && !in[static_cast<std::size_t>(def)]) {
      in[static_cast<std::size_t>(def)] = true;
      add_slice(s, def, def, in);
    }
  }
  for (const auto* vars : {&info.reads_vars, &info.writes_vars})
    for (ir::id v : *vars)
      for (std::int32_t k = 0; k < before; ++k) {
        const auto& writes = s.statements[static_cast<std::size_t>(k)].writes_vars;
        if (!in[static_cast<std::size_t>(k)] && std::find(writes.begin(), writes.end(), v) != writes.end()) {
          in[static_cast<std::size_t>(k)] = true;
          add_slice(s, k, k, in);
        }
      }
}

// The statements a construct's task recomputes: every slice statement before it.
constexpr std::vector<bool> slice_of(const kernel_structure& s, const construct& con) {
  std::vector<bool> in(s.statements.size(), false);
  for (std::int32_t st : con.statements) add_slice(s, st, con.statements.front(), in);
  return in;
}

// A construct's task: its slice, then its own statements, in program order.
constexpr task split_task(const kernel_structure& s, std::int32_t c, const std::vector<bool>& in) {
  const construct& con = s.constructs[static_cast<std::size_t>(c)];
  task t{con.kind == construct_kind::parallel, {}, c};
  for (std::int32_t k = 0; k < static_cast<std::int32_t>(in.size()); ++k)
    if (in[static_cast<std::size_t>(k)]) t.statements.push_back(k);
  for (std::int32_t st : con.statements) t.statements.push_back(st);
  std::sort(t.statements.begin(), t.statements.end());
  t.statements.erase(std::unique(t.statements.begin(), t.statements.end()), t.statements.end());
  return t;
}

}  // namespace detail

// The split's tasks with none of the checks below: what the per-offload variant would
// run if every fallback condition were ignored. Not equivalent in general; the fuzzer
// runs it for kernels that fell back to measure how many fallbacks were needed.
constexpr task_plan plan_split_unchecked(const kernel_structure& s) {
  task_plan plan;
  for (std::int32_t c = 0; c < static_cast<std::int32_t>(s.constructs.size()); ++c)
    plan.tasks.push_back(detail::split_task(s, c, detail::slice_of(s, s.constructs[static_cast<std::size_t>(c)])));
  return plan;
}

constexpr split_decision plan_split(const ir::function& fn, const kernel_structure& s) {
  split_decision d;
  if (fn.is_gradient) {
    d.reason = fallback_reason::autodiff;
    return d;
  }
  const auto count = static_cast<std::int32_t>(s.statements.size());
  for (std::int32_t c = 0; c < static_cast<std::int32_t>(s.constructs.size()); ++c) {
    const construct& con = s.constructs[static_cast<std::size_t>(c)];
    const std::int32_t first = con.statements.front();
    const std::int32_t last = con.statements.back();
    const std::vector<bool> in = detail::slice_of(s, con);
    auto fail = [&](fallback_reason r, std::int32_t st) {
      d.reason = r;
      d.construct = c;
      d.statement = st;
    };
    // A parallel construct that writes a top-level variable needs a cell that
    // outlives its iterations: a value carried across the split.
    if (con.kind == construct_kind::parallel) {
      const auto& info = s.statements[static_cast<std::size_t>(first)];
      if (!info.writes_vars.empty()) {
        fail(fallback_reason::carried_value, first);
        d.other_construct = c;
        d.variable = info.writes_vars.front();
        return d;
      }
    }
    for (std::int32_t k = 0; k < count; ++k) {
      if (!in[static_cast<std::size_t>(k)]) continue;
      const statement_info& st = s.statements[static_cast<std::size_t>(k)];
      if (st.invariant) continue;
      if (st.parallel) {  // a value produced or modified inside an earlier loop
        fail(fallback_reason::carried_value, k);
        d.other_construct = s.construct_of[static_cast<std::size_t>(k)];
        for (ir::id v : st.writes_vars) d.variable = v;
        return d;
      }
      if (st.unsafe_to_recompute()) {
        fail(fallback_reason::side_effect, k);
        return d;
      }
      // Re-reads: every write between the read and the construct, and the construct's
      // own writes when it is a loop -- a GPU thread may evaluate the recomputed prologue
      // after another iteration wrote. A serial construct runs its slice once, in one
      // thread, before its own statements: its writes come after the re-read.
      const std::int32_t last_write = con.kind == construct_kind::parallel ? last : first - 1;
      for (const array_access& r : st.reads)
        for (std::int32_t w = k + 1; w <= last_write; ++w)
          for (const array_access& wr : s.statements[static_cast<std::size_t>(w)].writes) {
            bool same_buffer = r.param == wr.param && r.grad == wr.grad;
            if (same_buffer) {
              fail(fallback_reason::stale_reread, k);
            } else if (r.grad || wr.grad) {
              fail(fallback_reason::aliasing_gradient, k);
            } else {
              disjoint_pair p{std::min(r.param, wr.param), std::max(r.param, wr.param)};
              if (std::find(d.pairs.begin(), d.pairs.end(), p) == d.pairs.end()) d.pairs.push_back(p);
              continue;
            }
            d.read = r.node;
            d.write = wr.node;
            d.other_construct = s.construct_of[static_cast<std::size_t>(w)];
            return d;
          }
    }
    d.plan.tasks.push_back(detail::split_task(s, c, in));
  }
  return d;
}

}  // namespace qd::analysis
