// The per-offload split (docs/caching.md): each construct recomputes, from the
// kernel's parameters, the slice of top-level statements it needs where that provably
// gives the whole kernel's values; what cannot be recomputed is computed once and
// handed on through the persisted buffer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "quadrants/analysis/fallback.hpp"
#include "quadrants/analysis/graph.hpp"
#include "quadrants/analysis/task_plan.hpp"
#include "quadrants/ir/visit.hpp"

namespace qd::inline v0::analysis {

// Two buffers the split assumes do not share memory: checked at each launch. A side
// is a parameter's data or, with `grad`, its gradient buffer; (a, a_grad) < (b, b_grad).
struct disjoint_pair {
  std::int32_t a = -1, b = -1;
  bool a_grad = false, b_grad = false;
  friend constexpr bool operator==(const disjoint_pair&, const disjoint_pair&) = default;
};

struct split_decision {
  fallback_reason reason = fallback_reason::none;
  // Where the reason was found (for the log line and fallback_detail).
  std::int32_t construct = -1;        // the construct whose slice failed
  std::int32_t statement = -1;        // the slice statement at fault
  std::int32_t other_construct = -1;  // the construct that modifies or writes
  ir::id read = ir::none;             // the re-read access (stale_reread, aliasing_gradient)
  ir::id write = ir::none;            // the write it conflicts with
  ir::id variable = ir::none;         // the carried variable (carried_value)
  // When split: one task per construct, in program order, plus a serial task for each
  // run of top-level statements outside constructs whose results must be computed once
  // (a snapshot taken before an overwrite, a reduction's initial value, a random draw).
  // plan.temps are the persisted buffer's slots: values and variables handed between
  // tasks. plan.temps_needed counts them (more than temp_slot_count: carried_value).
  task_plan plan;
  std::vector<disjoint_pair> pairs;  // run-time disjointness checks (when split)
};

namespace detail {

// Compile-time bounds of an integer index, inclusive, each side known or not.
struct index_range {
  bool has_lo = false, has_hi = false;
  std::int64_t lo = 0, hi = 0;
};

inline constexpr std::int64_t index_range_limit = std::int64_t{1} << 40;  // beyond: not tracked
inline constexpr std::int64_t i32_min = std::int64_t{-2147483647} - 1;
inline constexpr std::int64_t i32_max = 2147483647;

constexpr index_range known_range(bool has_lo, std::int64_t lo, bool has_hi, std::int64_t hi) {
  index_range r;
  if (has_lo && lo > -index_range_limit && lo < index_range_limit) r.has_lo = true, r.lo = lo;
  if (has_hi && hi > -index_range_limit && hi < index_range_limit) r.has_hi = true, r.hi = hi;
  return r;
}

constexpr std::int64_t constant_value(const ir::node& n) {
  if (n.type == dtype::i32) return static_cast<std::int32_t>(n.imm);
  if (n.type == dtype::u32) return static_cast<std::uint32_t>(n.imm);
  if (n.type == dtype::u8) return static_cast<std::uint8_t>(n.imm);
  return n.imm;
}

// The range of an index expression built from constants, extents (an array's extent is
// in [0, 2^31), checked when a launch binds it), loop indices, value-preserving integer
// casts, and i32/i64 + and -. Loop indices lie in their loop's [begin, end).
// Wrap-around: a sum that overflows upwards wraps to a negative index, outside every
// array, and an out-of-range access leaves a kernel's results undefined in both
// variants (with check_out_of_bound both fail the launch), so a lower bound survives
// it. One that underflows wraps to a large positive index that may be in range, so an
// upper bound is only given with a lower bound that rules the underflow out.
constexpr index_range range_of_index(const ir::function& fn, ir::id i, int depth = 0) {
  if (depth > 16 || !is_integral(fn.at(i).type)) return {};
  using ir::op;
  return ir::match<index_range>(
      fn, i,  // every other op: nothing is known
      [&](ir::view<op::constant> c) {
        const std::int64_t v = constant_value(c.node());
        return known_range(true, v, true, v);
      },
      [](ir::view<op::shape>) { return known_range(true, 0, true, i32_max); },
      [&](ir::view<op::cast> c) {
        const dtype from = fn.at(c.operand()).type, to = c.type();
        const bool preserving = (from == dtype::i32 && to == dtype::i64) || (from == dtype::u32 && to == dtype::i64) ||
                                (from == dtype::u8 && to != dtype::boolean);
        return preserving ? range_of_index(fn, c.operand(), depth + 1) : index_range{};
      },
      [&](ir::view<op::loop_index> index) {
        const ir::view<op::range_for> loop(fn, index.loop());
        const ir::id begin = loop.begin(index.dimension());
        const index_range b = begin == ir::none ? known_range(true, 0, true, 0) : range_of_index(fn, begin, depth + 1);
        const index_range e = range_of_index(fn, loop.end(index.dimension()), depth + 1);
        return known_range(b.has_lo, b.lo, e.has_hi, e.hi - 1);
      },
      [&](ir::view<op::binary> x) {
        const ir::binary_op o = x.op();
        const dtype t = x.type();
        if ((o != ir::binary_op::add && o != ir::binary_op::sub) || (t != dtype::i32 && t != dtype::i64))
          return index_range{};
        index_range a = range_of_index(fn, x.lhs(), depth + 1), b = range_of_index(fn, x.rhs(), depth + 1);
        if (o == ir::binary_op::sub) b = known_range(b.has_hi, -b.hi, b.has_lo, -b.lo);  // a - b = a + (-b)
        index_range sum = known_range(a.has_lo && b.has_lo, a.lo + b.lo, a.has_hi && b.has_hi, a.hi + b.hi);
        const std::int64_t min = t == dtype::i32 ? i32_min : -index_range_limit;
        const std::int64_t max = t == dtype::i32 ? i32_max : index_range_limit;
        if (!sum.has_lo || sum.lo < min) return index_range{};  // it may underflow: nothing is known
        if (sum.has_hi && sum.hi > max) sum.has_hi = false;     // it may overflow, to a negative index
        return sum;
      });
}

// An integer value as `sym + off` modulo 2^32 (the low 32 bits of any index): the
// symbol is the node the +/- of constants and the i32/i64 casts start from (a
// constant: sym none, off its value). Run-time bounds are compared through it.
struct affine {
  ir::id sym = ir::none;
  std::int64_t off = 0;
};

inline constexpr std::int64_t affine_offset_limit = std::int64_t{1} << 30;

constexpr affine affine_of(const ir::function& fn, ir::id i, int depth = 0) {
  const affine self{i, 0};
  if (depth > 16) return self;
  auto wide_int = [](dtype t) { return t == dtype::i32 || t == dtype::i64; };
  using ir::op;
  const affine r = ir::match<affine>(
      fn, i,  // every other op: itself
      [&](ir::view<op::constant> c) {
        return affine{ir::none, constant_value(c.node())};
      },
      [&](ir::view<op::cast> c) {  // sign extension and truncation keep the low 32 bits
        return wide_int(c.type()) && wide_int(fn.at(c.operand()).type) ? affine_of(fn, c.operand(), depth + 1) : self;
      },
      [&](ir::view<op::binary> x) {
        const ir::binary_op o = x.op();
        if (!wide_int(x.type()) || (o != ir::binary_op::add && o != ir::binary_op::sub)) return self;
        const affine a = affine_of(fn, x.lhs(), depth + 1), b = affine_of(fn, x.rhs(), depth + 1);
        if (b.sym == ir::none) return affine{a.sym, o == ir::binary_op::add ? a.off + b.off : a.off - b.off};
        if (a.sym == ir::none && o == ir::binary_op::add) return affine{b.sym, a.off + b.off};
        return self;
      },
      [&](ir::node_view) { return self; });
  return r.off > -affine_offset_limit && r.off < affine_offset_limit ? r : self;
}

// Whether two nodes provably hold the same value wherever both are evaluated: the same
// node (a top-level value is computed once per launch), or pure arithmetic of the same
// shape over the same constants, scalar arguments and extents.
constexpr bool same_value(const ir::function& fn, ir::id x, ir::id y, int depth = 0) {
  if (x == y) return true;
  if (x == ir::none || y == ir::none || depth > 8) return false;
  const ir::node& a = fn.at(x);
  const ir::node& b = fn.at(y);
  if (!ir::is_invariant(a.code) || a.code != b.code || a.type != b.type || a.sub != b.sub || a.flags != b.flags ||
      a.param != b.param || a.imm != b.imm || a.list_size != b.list_size)
    return false;
  if (!same_value(fn, a.a, b.a, depth + 1) || !same_value(fn, a.b, b.b, depth + 1) ||
      !same_value(fn, a.c, b.c, depth + 1))
    return false;
  for (std::int32_t k = 0; k < a.list_size; ++k)
    if (!same_value(fn, fn.list(a, k), fn.list(b, k), depth + 1)) return false;
  return true;
}

// Whether `sym + off` provably never wraps in i32 (its symbol's range is known).
constexpr bool never_wraps(const ir::function& fn, ir::id sym, std::int64_t off) {
  const index_range r = range_of_index(fn, sym);
  return r.has_lo && r.has_hi && r.lo + off >= i32_min && r.hi + off <= i32_max;
}

// Whether the point `p` is never the index `loop_index + k` of the loop `l` (l: the
// loop-index form {loop_index node, k}). The colliding iteration would be i = p - k;
// it is outside [begin, end) when it is `end` itself or `begin - 1` (whatever wraps:
// both sides are the same value modulo 2^32), or, when nothing can wrap, when it is
// ordered outside the bounds.
constexpr bool point_outside_loop(const ir::function& fn, affine p, affine l) {
  if (p.sym == ir::none || fn.at(l.sym).code != ir::op::loop_index) return false;
  const ir::view<ir::op::loop_index> index(fn, l.sym);
  const ir::view<ir::op::range_for> loop(fn, index.loop());
  const affine t{p.sym, p.off - l.off};  // the colliding iteration
  const ir::id first = loop.begin(index.dimension());
  const affine begin = first == ir::none ? affine{ir::none, 0} : affine_of(fn, first);
  const affine end = affine_of(fn, loop.end(index.dimension()));
  if (end.sym != ir::none && same_value(fn, end.sym, t.sym) && end.off == t.off) return true;
  if (begin.sym != ir::none && same_value(fn, begin.sym, t.sym) && begin.off - 1 == t.off) return true;
  if (!never_wraps(fn, t.sym, t.off)) return false;
  if (end.sym != ir::none && same_value(fn, end.sym, t.sym) && never_wraps(fn, end.sym, end.off) && t.off > end.off)
    return true;
  return begin.sym != ir::none && same_value(fn, begin.sym, t.sym) && never_wraps(fn, begin.sym, begin.off) &&
         t.off < begin.off;
}

// Whether two index expressions never name the same element, from their forms over
// run-time values (a[n - 1] against a[i] for i in [0, n - 1), a[n - 1] against
// a[n - 2], a[n] against a[i + 1] for i in [0, n - 1)).
constexpr bool symbolically_apart(const ir::function& fn, ir::id x, ir::id y) {
  const affine a = affine_of(fn, x), b = affine_of(fn, y);
  const bool a_loop = a.sym != ir::none && fn.at(a.sym).code == ir::op::loop_index;
  const bool b_loop = b.sym != ir::none && fn.at(b.sym).code == ir::op::loop_index;
  if (b_loop && !a_loop) return point_outside_loop(fn, a, b);
  if (a_loop && !b_loop) return point_outside_loop(fn, b, a);
  if (a_loop || a.sym == ir::none || b.sym == ir::none) return false;
  return same_value(fn, a.sym, b.sym) && a.off != b.off;  // |off| < 2^30: distinct modulo 2^32
}

// Whether two accesses of one buffer touch different elements whatever the run-time
// values: in some dimension their indices never meet -- their constant ranges do not
// overlap (a[0] against a[i] for i in [1, n)), or their forms over the same run-time
// values keep them apart. A clamped access may land anywhere, so it is never disjoint.
constexpr bool provably_disjoint(const ir::function& fn, ir::id first, ir::id second) {
  const ir::node& a = fn.at(first);
  const ir::node& b = fn.at(second);
  if (((a.flags | b.flags) & ir::access::clamp) != 0 || a.list_size != b.list_size) return false;
  for (std::int32_t d = 0; d < a.list_size; ++d) {
    index_range x = range_of_index(fn, fn.list(a, d)), y = range_of_index(fn, fn.list(b, d));
    if ((x.has_hi && y.has_lo && x.hi < y.lo) || (y.has_hi && x.has_lo && y.hi < x.lo)) return true;
    if (symbolically_apart(fn, fn.list(a, d), fn.list(b, d))) return true;
  }
  return false;
}

// Whether node i provably never runs: an enclosing loop's iteration space is empty
// whatever the run-time values (constant bounds, or the same value on both sides), or
// an enclosing branch is not taken on a constant condition.
constexpr bool never_runs(const ir::function& fn, ir::id i) {
  for (std::int32_t b = fn.node_block[static_cast<std::size_t>(i)]; b != 0;) {
    const ir::id owner = fn.block_owner[static_cast<std::size_t>(b)];
    const bool never = ir::match<bool>(
        fn, owner,
        [&](ir::view<ir::op::range_for> loop) {
          for (std::int32_t d = 0; d < loop.rank(); ++d) {
            const ir::id begin = loop.begin(d), end = loop.end(d);
            const index_range e = range_of_index(fn, end);
            const index_range lo = begin == ir::none ? index_range{true, true, 0, 0} : range_of_index(fn, begin);
            if ((e.has_hi && lo.has_lo && e.hi <= lo.lo) || (begin != ir::none && same_value(fn, begin, end)))
              return true;
          }
          return false;
        },
        [&](ir::view<ir::op::if_> branch) {
          const ir::node& c = fn.at(branch.condition());
          return c.code == ir::op::constant && (c.imm != 0) != (b == branch.then_block());
        });
    if (never) return true;
    b = fn.node_block[static_cast<std::size_t>(owner)];
  }
  return false;
}

constexpr bool writes_variable(const statement_info& st, ir::id v) {
  return std::find(st.writes_vars.begin(), st.writes_vars.end(), v) != st.writes_vars.end();
}

// What the split decides per statement and variable, grown to a fixed point.
struct persistence {
  // Per statement: runs once, in its home task (its construct, or a serial task for its
  // run), and hands its value and variable updates on through the buffer; never recomputed.
  std::vector<bool> statement;
  // Per node: a top-level variable that lives in the buffer (every write of it persisted).
  std::vector<bool> variable;
};

// A variable written by a persisted statement lives in the buffer, and so every
// statement writing a buffer variable is persisted: until nothing changes.
constexpr void close_over_variables(const kernel_structure& s, persistence& p) {
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t k = 0; k < s.statements.size(); ++k)
      for (ir::id v : s.statements[k].writes_vars) {
        const bool var = p.variable[static_cast<std::size_t>(v)];
        if (p.statement[k] && !var) {
          p.variable[static_cast<std::size_t>(v)] = true;
          changed = true;
        } else if (var && !p.statement[k]) {
          p.statement[k] = true;
          changed = true;
        }
      }
  }
}

// The split's tasks before slicing: each construct's statements, and for each serial
// run outside constructs its persisted statements (a serial task).
constexpr std::vector<task> own_statements(const kernel_structure& s, const std::vector<std::int32_t>& runs,
                                           const persistence& p) {
  std::vector<task> tasks;
  for (std::size_t k = 0; k < s.statements.size(); ++k) {
    const std::int32_t c = s.construct_of[k];
    if (c >= 0) {
      const construct& con = s.constructs[static_cast<std::size_t>(c)];
      if (con.statements.front() == static_cast<std::int32_t>(k))
        tasks.push_back({con.kind == construct_kind::parallel, con.statements, c});
      continue;
    }
    if (!p.statement[k] || s.statements[k].invariant) continue;
    if (tasks.empty() || tasks.back().construct >= 0 || tasks.back().run != runs[k]) {
      tasks.push_back({false, {}, -1});
      tasks.back().run = runs[k];
    }
    tasks.back().statements.push_back(static_cast<std::int32_t>(k));
  }
  return tasks;
}

// Adds to `in` what statement `st` of a task needs recomputed before `before`: the
// definitions of its values unless persisted (loaded from the buffer), and every
// earlier write of the variables it touches that do not live in the buffer.
constexpr void add_cut_slice(const kernel_structure& s, const persistence& p, std::int32_t st, std::int32_t before,
                             const std::vector<bool>& own, std::vector<bool>& in) {
  auto take = [&](std::int32_t d) {
    if (own[static_cast<std::size_t>(d)] || in[static_cast<std::size_t>(d)]) return;
    in[static_cast<std::size_t>(d)] = true;
    add_cut_slice(s, p, d, d, own, in);
  };
  const statement_info& info = s.statements[static_cast<std::size_t>(st)];
  for (ir::id u : info.uses) {
    const std::int32_t def = s.statement_of[static_cast<std::size_t>(u)];
    if (def >= 0 && def < before && !p.statement[static_cast<std::size_t>(def)]) take(def);
  }
  for (const auto* vars : {&info.reads_vars, &info.writes_vars})
    for (ir::id v : *vars) {
      if (p.variable[static_cast<std::size_t>(v)]) continue;
      for (std::int32_t k = 0; k < before; ++k)
        if (writes_variable(s.statements[static_cast<std::size_t>(k)], v)) take(k);
    }
}

// Whether statement k, recomputed at the start of a task, gives what it gave in program
// order: nothing between it and `last_write` (the task itself, for a loop, whose GPU
// threads may recompute it after another iteration wrote) changes what it reads, and
// it neither draws, has an effect, nor writes a buffer variable. A read of another
// parameter than the write's is assumed disjoint and the pair is added to `pairs`.
constexpr bool recomputable(const ir::function& fn, const kernel_structure& s, const persistence& p, std::int32_t k,
                            std::int32_t last_write, bool checked, std::vector<disjoint_pair>& pairs) {
  const statement_info& info = s.statements[static_cast<std::size_t>(k)];
  if (info.parallel || info.unsafe_to_recompute()) return false;
  for (ir::id v : info.writes_vars)
    if (p.variable[static_cast<std::size_t>(v)]) return false;
  if (!checked) return true;
  for (ir::id v : info.reads_vars)
    if (p.variable[static_cast<std::size_t>(v)])
      for (std::int32_t w = k + 1; w <= last_write; ++w)
        if (writes_variable(s.statements[static_cast<std::size_t>(w)], v)) return false;
  std::vector<disjoint_pair> found;
  for (const array_access& r : info.reads)
    for (std::int32_t w = never_runs(fn, r.node) ? last_write + 1 : k + 1; w <= last_write; ++w)
      for (const array_access& wr : s.statements[static_cast<std::size_t>(w)].writes) {
        if (never_runs(fn, wr.node)) continue;
        if (r.param == wr.param && r.grad == wr.grad) {
          if (!provably_disjoint(fn, r.node, wr.node)) return false;  // a stale re-read
          continue;
        }
        disjoint_pair pair{r.param, wr.param, r.grad, wr.grad};
        if (wr.param < r.param || (wr.param == r.param && wr.grad < r.grad))
          pair = {wr.param, r.param, wr.grad, r.grad};
        found.push_back(pair);
      }
  for (const disjoint_pair& pair : found)
    if (std::find(pairs.begin(), pairs.end(), pair) == pairs.end()) pairs.push_back(pair);
  return true;
}

// The split: with `checked`, a statement is recomputed only where that provably gives
// its value in program order; without, wherever it has no effect of its own (a test
// hook: what the analysis' precision is measured against).
constexpr split_decision split_with(const ir::function& fn, const kernel_structure& s,
                                    const std::vector<ir::id>& results, bool checked) {
  split_decision d;
  if (fn.is_gradient) {
    d.reason = fallback_reason::autodiff;
    return d;
  }
  if (fn.has_mesh) {  // qd::mesh_for: indirect accesses through the mesh's relations
    d.reason = fallback_reason::mesh;
    return d;
  }
  // Graph kernels: a fork stays whole; a do_while body's constructs split
  // like top-level ones, its variables live in the buffer (a later pass reads what an
  // earlier one wrote), and a value recomputed inside a body from outside it must hold
  // through the whole body (extend_through_loops).
  const std::vector<graph_region> regions = graph_regions(fn, s);
  if (has_fork(regions)) {
    d.reason = fallback_reason::concurrent;
    return d;
  }
  const std::size_t count = s.statements.size();
  const std::vector<std::int32_t> runs = serial_runs(s);
  persistence p{std::vector<bool>(count, false), std::vector<bool>(fn.nodes.size(), false)};
  for (std::size_t k = 0; k < count; ++k) {
    p.statement[k] = s.statements[k].parallel || s.statements[k].unsafe_to_recompute();
    if (in_loop(regions, static_cast<std::int32_t>(k)))
      for (ir::id v : s.statements[k].writes_vars) p.variable[static_cast<std::size_t>(v)] = true;
  }
  for (ir::id r : results) {
    if (fn.at(r).code == ir::op::local_decl)
      p.variable[static_cast<std::size_t>(r)] = true;
    else if (const std::int32_t def = s.statement_of[static_cast<std::size_t>(r)];
             def >= 0 && !s.statements[static_cast<std::size_t>(def)].invariant)
      p.statement[static_cast<std::size_t>(def)] = true;
  }
  std::vector<task> tasks;
  std::vector<std::vector<bool>> slices;
  for (bool changed = true; changed;) {
    changed = false;
    close_over_variables(s, p);
    tasks = own_statements(s, runs, p);
    slices.assign(tasks.size(), {});
    d.pairs.clear();
    for (std::size_t t = 0; t < tasks.size(); ++t) {
      const task& tk = tasks[t];
      std::vector<bool> own(count, false);
      for (std::int32_t st : tk.statements) own[static_cast<std::size_t>(st)] = true;
      std::vector<bool>& in = slices[t];
      in.assign(count, false);
      // A construct's statements are consecutive: their slice comes before the first.
      // A serial task's persisted statements may have statements of their run between them.
      for (std::int32_t st : tk.statements)
        add_cut_slice(s, p, st, tk.construct >= 0 ? tk.statements.front() : st, own, in);
      const std::int32_t last_write = tk.parallel ? tk.statements.back() : tk.statements.front() - 1;
      for (std::size_t k = 0; k < count; ++k) {
        if (!in[k] || s.statements[k].invariant) continue;
        const auto at = static_cast<std::int32_t>(k);
        if (recomputable(fn, s, p, at, extend_through_loops(regions, at, tk.statements.front(), last_write), checked,
                         d.pairs))
          continue;
        p.statement[k] = true;
        changed = true;
      }
    }
  }
  // The buffer: variables that live there, and persisted values another task uses.
  std::vector<ir::id> persisted;
  for (std::size_t v = 0; v < p.variable.size(); ++v)
    if (p.variable[v]) persisted.push_back(static_cast<ir::id>(v));
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    task& tk = tasks[t];
    for (std::size_t k = 0; k < count; ++k)
      if (slices[t][k]) tk.statements.push_back(static_cast<std::int32_t>(k));
    std::sort(tk.statements.begin(), tk.statements.end());
    for (std::int32_t st : tk.statements)
      for (ir::id u : s.statements[static_cast<std::size_t>(st)].uses) {
        const std::int32_t def = s.statement_of[static_cast<std::size_t>(u)];
        if (def < 0 || s.statements[static_cast<std::size_t>(def)].invariant ||
            std::binary_search(tk.statements.begin(), tk.statements.end(), def))
          continue;
        if (std::find(persisted.begin(), persisted.end(), u) == persisted.end()) persisted.push_back(u);
      }
  }
  for (ir::id r : results)
    if (std::find(persisted.begin(), persisted.end(), r) == persisted.end()) persisted.push_back(r);
  d.plan.temps_needed = persisted.size();
  if (persisted.size() > static_cast<std::size_t>(temp_slot_count)) {
    d.reason = fallback_reason::carried_value;
    d.pairs.clear();
    return d;
  }
  d.plan.tasks = std::move(tasks);
  d.plan.temps = assign_slots(fn, std::move(persisted));
  return d;
}

}  // namespace detail

// The split's tasks without the checks of plan_split: every value that has no effect of
// its own is recomputed where it is used (only loops' updates of top-level variables,
// atomics, prints, draws and volatile reads are computed once and handed on), with no
// run-time pair. Not equivalent in general; the fuzzer runs it to measure how many of
// the analysis' decisions to persist a value were needed.
constexpr task_plan plan_split_unchecked(const ir::function& fn, const kernel_structure& s) {
  return detail::split_with(fn, s, {}, false).plan;
}

// The split. Each construct's task recomputes what it can; a statement that cannot be
// recomputed (a loop's updates of top-level variables, an atomic's result, a random
// draw, a volatile read, a read of data overwritten before the task runs) is persisted:
// it runs once in its home task and what it produces lives in the buffer. `results` are
// top-level values or variables the host reads back after the launch (a kernel's return
// value): each gets a slot, and plan.slot_of(result) says which.
constexpr split_decision plan_split(const ir::function& fn, const kernel_structure& s,
                                    const std::vector<ir::id>& results = {}) {
  return detail::split_with(fn, s, results, true);
}

}  // namespace qd::inline v0::analysis
