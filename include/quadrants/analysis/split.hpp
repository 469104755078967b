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

// Compile-time bounds of an integer index, inclusive, each side known or not.
struct index_range {
  bool has_lo = false, has_hi = false;
  std::int64_t lo = 0, hi = 0;
};

inline constexpr std::int64_t index_range_limit = std::int64_t{1} << 40;  // beyond: not tracked

constexpr index_range known_range(bool has_lo, std::int64_t lo, bool has_hi, std::int64_t hi) {
  index_range r;
  if (has_lo && lo > -index_range_limit && lo < index_range_limit) r.has_lo = true, r.lo = lo;
  if (has_hi && hi > -index_range_limit && hi < index_range_limit) r.has_hi = true, r.hi = hi;
  return r;
}

// The range of an index expression built from constants, loop indices, value-preserving
// integer casts, and i32/i64 + and -. Loop indices lie in their loop's [begin, end).
// Wrap-around: a sum that overflows upwards wraps to a negative index, outside every
// array, and an out-of-range access leaves a kernel's results undefined in both
// variants (with check_out_of_bound both fail the launch), so a lower bound survives
// it. One that underflows wraps to a large positive index that may be in range, so an
// upper bound is only given with a lower bound that rules the underflow out.
constexpr index_range range_of_index(const ir::function& fn, ir::id i, int depth = 0) {
  const ir::node& n = fn.at(i);
  if (depth > 16 || !is_integral(n.type)) return {};
  switch (n.code) {
    case ir::op::constant: {
      std::int64_t v = n.imm;
      if (n.type == dtype::i32) v = static_cast<std::int32_t>(n.imm);
      if (n.type == dtype::u32) v = static_cast<std::uint32_t>(n.imm);
      if (n.type == dtype::u8) v = static_cast<std::uint8_t>(n.imm);
      return known_range(true, v, true, v);
    }
    case ir::op::cast: {
      const dtype from = fn.at(n.a).type;
      const bool preserving = (from == dtype::i32 && n.type == dtype::i64) || (from == dtype::u32 && n.type == dtype::i64) ||
                              (from == dtype::u8 && n.type != dtype::boolean);
      return preserving ? range_of_index(fn, n.a, depth + 1) : index_range{};
    }
    case ir::op::loop_index: {
      const ir::node& loop = fn.at(n.a);
      if (loop.imm == 1) {
        index_range b = range_of_index(fn, loop.a, depth + 1), e = range_of_index(fn, loop.b, depth + 1);
        return known_range(b.has_lo, b.lo, e.has_hi, e.hi - 1);
      }
      index_range e = range_of_index(fn, fn.list(loop, static_cast<std::int32_t>(n.imm)), depth + 1);
      return known_range(true, 0, e.has_hi, e.hi - 1);
    }
    case ir::op::binary: {
      const auto o = static_cast<ir::binary_op>(n.sub);
      if ((o != ir::binary_op::add && o != ir::binary_op::sub) || (n.type != dtype::i32 && n.type != dtype::i64))
        return {};
      index_range a = range_of_index(fn, n.a, depth + 1), b = range_of_index(fn, n.b, depth + 1);
      if (o == ir::binary_op::sub) b = known_range(b.has_hi, -b.hi, b.has_lo, -b.lo);  // a - b = a + (-b)
      index_range sum = known_range(a.has_lo && b.has_lo, a.lo + b.lo, a.has_hi && b.has_hi, a.hi + b.hi);
      const std::int64_t min = n.type == dtype::i32 ? std::int64_t{-2147483647} - 1 : -index_range_limit;
      const std::int64_t max = n.type == dtype::i32 ? std::int64_t{2147483647} : index_range_limit;
      if (!sum.has_lo || sum.lo < min) return {};  // it may underflow: nothing is known
      if (sum.has_hi && sum.hi > max) sum.has_hi = false;  // it may overflow, to a negative index
      return sum;
    }
    case ir::op::arg:
    case ir::op::bound:
    case ir::op::fma:
    case ir::op::global_atomic:
    case ir::op::global_load:
    case ir::op::global_store:
    case ir::op::if_:
    case ir::op::local_atomic:
    case ir::op::local_decl:
    case ir::op::local_load:
    case ir::op::local_store:
    case ir::op::print:
    case ir::op::random:
    case ir::op::range_for:
    case ir::op::select:
    case ir::op::shape:
    case ir::op::temp_atomic:
    case ir::op::temp_load:
    case ir::op::temp_store:
    case ir::op::unary:
    case ir::op::while_: return {};
  }
  return {};
}

// Whether two accesses of one buffer touch different elements whatever the run-time
// values: in some dimension their index ranges do not meet (a[0] against a[i] for i
// in [1, n), say). A clamped access may land anywhere, so it is never disjoint.
constexpr bool provably_disjoint(const ir::function& fn, ir::id first, ir::id second) {
  const ir::node& a = fn.at(first);
  const ir::node& b = fn.at(second);
  if (((a.flags | b.flags) & ir::access::clamp) != 0 || a.list_size != b.list_size) return false;
  for (std::int32_t d = 0; d < a.list_size; ++d) {
    index_range x = range_of_index(fn, fn.list(a, d)), y = range_of_index(fn, fn.list(b, d));
    if ((x.has_hi && y.has_lo && x.hi < y.lo) || (y.has_hi && x.has_lo && y.hi < x.lo)) return true;
  }
  return false;
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
              if (detail::provably_disjoint(fn, r.node, wr.node)) continue;  // another element
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
