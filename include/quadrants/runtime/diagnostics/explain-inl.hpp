// Implementation of runtime/diagnostics/explain.hpp.
#pragma once

#include <algorithm>
#include <chrono>
#include <mutex>
#include <vector>

#include "quadrants/analysis/split.hpp"
#include "quadrants/cache/code_cache.hpp"
#include "quadrants/cache/key_recipe.hpp"
#include "quadrants/cache/records.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/runtime/config.hpp"
#include "quadrants/runtime/diagnostics/explain.hpp"
#include "quadrants/runtime/pipeline/kernel_state.hpp"
#include "quadrants/runtime/pipeline/program.hpp"
#include "quadrants/runtime/pipeline/variant_choice.hpp"

namespace qd::inline v0::detail {

namespace explain_parts {

// What the explanation says, gathered once for both forms.
struct explanation {
  struct value {
    ir::id node = ir::none;
    std::string text;        // "a[0] at f.cpp:41"
    bool persisted = false;  // read from the persisted buffer (else recomputed)
  };
  // A top-level qd::var one construct updates and a later one reads.
  struct variable_flow {
    ir::id decl = ir::none;
    std::string text;        // "the qd::var declared at f.cpp:40"
    std::string other;       // the construct at the other end
    bool persisted = false;  // it lives in the persisted buffer between the tasks
    bool reduction = false;  // updated by a parallel loop (a reduction)
  };
  struct construct_info {
    std::string label;               // "construct 1 (the loop at f.cpp:43)"
    std::vector<std::string> lines;  // the source lines of its statements
    std::vector<value> uses;
    std::vector<variable_flow> writes;  // variables it updates that a later construct reads
    std::vector<variable_flow> reads;   // variables an earlier construct updated
  };
  std::vector<construct_info> constructs;
  std::vector<std::string> once;  // values computed once, by a serial task, for later constructs
  analysis::split_decision decision;
  std::string decision_text;
  std::vector<std::string> pairs;
  std::string in_program;  // the variant used by the running program, if compiled there
};

QD_FUNC std::string value_text(const kernel_state& k, ir::id v) {
  const ir::node& n = k.ir.at(v);
  std::string what;
  if (n.code == ir::op::global_load)
    what = access_text(k, v);
  else if (n.code == ir::op::shape)
    what = fmt::format("{}.shape({})", param_name(k, static_cast<std::size_t>(n.param)), n.imm);
  else if (n.code == ir::op::arg)
    what = param_name(k, static_cast<std::size_t>(n.param));
  else if (n.code == ir::op::local_decl)
    what = "a qd::var";
  else
    what = fmt::format("a {} value", ir::name(n.code));
  // Shapes and arguments are evaluated before the statement that uses them records its
  // line, so only computed values carry one.
  if (n.code == ir::op::shape || n.code == ir::op::arg) return what;
  const std::string where = ir::to_text(k.ir.location(v));
  return where.empty() ? what : what + " at " + where;
}

// The variables of `statements` that they update (declarations aside) or read.
QD_FUNC std::vector<ir::id> variables_of(const analysis::kernel_structure& s,
                                         const std::vector<std::int32_t>& statements, bool written) {
  std::vector<ir::id> out;
  for (std::int32_t st : statements) {
    const auto& statement = s.statements[static_cast<std::size_t>(st)];
    for (ir::id v : written ? statement.writes_vars : statement.reads_vars)
      if (v != statement.node && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

// A qd::var that one construct updates (a reduction, in a parallel loop) and a later
// construct reads flows through the persisted buffer: both ends say so.
QD_FUNC void add_variable_flows(const kernel_state& k, explanation& e) {
  const auto& s = k.structure;
  for (std::size_t later = 1; later < s.constructs.size(); ++later) {
    for (ir::id v : variables_of(s, s.constructs[later].statements, false)) {
      // The last earlier construct that updates it is the one whose value is read.
      for (std::size_t c = later; c-- > 0;) {
        const std::vector<ir::id> writes = variables_of(s, s.constructs[c].statements, true);
        if (std::find(writes.begin(), writes.end(), v) == writes.end()) continue;
        const std::string where = ir::to_text(k.ir.location(v));
        explanation::variable_flow f{v,
                                     where.empty() ? std::string("a qd::var") : "the qd::var declared at " + where,
                                     {},
                                     e.decision.plan.slot_of(v) >= 0,
                                     s.constructs[c].kind == analysis::construct_kind::parallel};
        f.other = construct_label(k, static_cast<std::int32_t>(later));
        e.constructs[c].writes.push_back(f);
        f.other = construct_label(k, static_cast<std::int32_t>(c));
        e.constructs[later].reads.push_back(std::move(f));
        break;
      }
    }
  }
}

// The caller holds k.mutex.
QD_FUNC explanation gather_locked(kernel_state& k) {
  ensure_traced(k);
  explanation e;
  const auto& s = k.structure;
  e.decision = analysis::plan_split(k.ir, s);
  for (std::size_t c = 0; c < s.constructs.size(); ++c) {
    explanation::construct_info info;
    info.label = construct_label(k, static_cast<std::int32_t>(c));
    std::vector<ir::id> used;
    for (std::int32_t st : s.constructs[c].statements) {
      const auto& statement = s.statements[static_cast<std::size_t>(st)];
      // Invariant values (shapes, constants, arithmetic on them) are evaluated before the
      // statement that uses them records its line, so their line is a neighbour's.
      const std::string where = statement.invariant ? std::string() : ir::to_text(k.ir.location(statement.node));
      if (!where.empty() && std::find(info.lines.begin(), info.lines.end(), where) == info.lines.end())
        info.lines.push_back(where);
      for (ir::id u : statement.uses)
        if (std::find(used.begin(), used.end(), u) == used.end()) used.push_back(u);
    }
    for (ir::id u : used)
      if (k.ir.at(u).code != ir::op::constant)  // constants are part of the code, not values it needs
        info.uses.push_back({u, value_text(k, u), e.decision.plan.slot_of(u) >= 0});
    e.constructs.push_back(std::move(info));
  }
  add_variable_flows(k, e);
  for (const auto& t : e.decision.plan.tasks)
    if (t.construct < 0)
      for (std::int32_t st : t.statements) {
        const ir::id node = s.statements[static_cast<std::size_t>(st)].node;
        if (e.decision.plan.slot_of(node) >= 0) e.once.push_back(value_text(k, node));
      }
  if (e.decision.reason == fallback_reason::none) {
    e.decision_text = fmt::format("splits: {} task{}, one per construct{}", e.decision.plan.tasks.size(),
                                  e.decision.plan.tasks.size() == 1 ? "" : "s",
                                  e.once.empty() ? "" : ", plus the serial tasks that compute persisted values once");
  } else {
    e.decision_text =
        fmt::format("stays whole-kernel: {} ({})", name(e.decision.reason), fallback_detail(k, e.decision));
  }
  for (const auto& p : e.decision.pairs)
    e.pairs.push_back(fmt::format("'{}'{} and '{}'{} must not overlap", param_name(k, static_cast<std::size_t>(p.a)),
                                  p.a_grad ? ".grad()" : "", param_name(k, static_cast<std::size_t>(p.b)),
                                  p.b_grad ? ".grad()" : ""));
  program_use use(std::nothrow);
  if (k.compiled && use && k.compiled->program_id == use->id()) {
    e.in_program = k.obs.fallback == fallback_reason::none
                       ? std::string("split (per-offload)")
                       : fmt::format("whole kernel: {} ({})", name(k.obs.fallback), k.obs.fallback_detail);
  }
  return e;
}

QD_FUNC explanation gather(kernel_state& k) {
  std::lock_guard lock(k.mutex);
  return gather_locked(k);
}

QD_FUNC std::string dot_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

QD_FUNC std::string text_of(const kernel_state& k, const explanation& e) {
  std::string out =
      fmt::format("kernel '{}': {} construct{}\n", k.name, e.constructs.size(), e.constructs.size() == 1 ? "" : "s");
  for (const auto& c : e.constructs) {
    out += "  " + c.label + "\n";
    if (c.lines.size() > 1) {
      out += "    statements at";
      for (const auto& l : c.lines) out += " " + l;
      out += "\n";
    }
    for (const auto& u : c.uses)
      out += fmt::format("    {} {}\n", u.persisted ? "reads from the persisted buffer:" : "recomputes:", u.text);
    for (const auto& f : c.reads)
      out += fmt::format("    reads {}{}, {} by {}\n", f.text, f.persisted ? " from the persisted buffer" : "",
                         f.reduction ? "reduced" : "written", f.other);
    for (const auto& f : c.writes)
      out += fmt::format("    {} {}{}, read by {}\n", f.reduction ? "reduces into" : "writes", f.text,
                         f.persisted ? " in the persisted buffer" : "", f.other);
    if (c.uses.empty() && c.reads.empty()) out += "    uses no top-level value: compiled from the parameters alone\n";
  }
  for (const auto& v : e.once) out += "  computed once and persisted: " + v + "\n";
  out += "  decision: " + e.decision_text + "\n";
  for (const auto& p : e.pairs) out += "  checked before each split launch: " + p + " (else that launch runs whole)\n";
  if (!e.in_program.empty()) out += "  in this program: " + e.in_program + "\n";
  return out;
}

QD_FUNC std::string dot_of(const kernel_state& k, const explanation& e) {
  std::string out = fmt::format("digraph \"{}\" {{\n  rankdir=TB;\n  label=\"kernel '{}': {}\";\n  labelloc=t;\n",
                                dot_escape(k.name), dot_escape(k.name), dot_escape(e.decision_text));
  out += "  node [fontname=\"monospace\"];\n";
  std::vector<ir::id> values;
  for (std::size_t c = 0; c < e.constructs.size(); ++c) {
    out += fmt::format("  c{} [shape=box, label=\"{}\"];\n", c, dot_escape(e.constructs[c].label));
    if (c > 0) out += fmt::format("  c{} -> c{} [style=dotted, arrowhead=none];\n", c - 1, c);
    for (const auto& u : e.constructs[c].uses) {
      if (std::find(values.begin(), values.end(), u.node) == values.end()) {
        values.push_back(u.node);
        out += fmt::format("  v{} [shape=ellipse, label=\"{}\"];\n", u.node, dot_escape(u.text));
      }
      out += fmt::format("  v{} -> c{} [label=\"{}\"{}];\n", u.node, c, u.persisted ? "persisted" : "recomputed",
                         u.persisted ? ", style=bold" : "");
    }
  }
  // Variables flowing from one construct to a later one: writer -> variable -> reader.
  for (std::size_t c = 0; c < e.constructs.size(); ++c)
    for (const auto& f : e.constructs[c].writes) {
      if (std::find(values.begin(), values.end(), f.decl) == values.end()) {
        values.push_back(f.decl);
        out += fmt::format("  v{} [shape=ellipse, label=\"{}\"];\n", f.decl, dot_escape(f.text));
      }
      out +=
          fmt::format("  c{} -> v{} [label=\"{}\", style=bold];\n", c, f.decl, f.reduction ? "reduces into" : "writes");
    }
  for (std::size_t c = 0; c < e.constructs.size(); ++c)
    for (const auto& f : e.constructs[c].reads)
      out += fmt::format("  v{} -> c{} [label=\"{}\", style=bold];\n", f.decl, c, f.persisted ? "persisted" : "read");
  for (std::size_t p = 0; p < e.pairs.size(); ++p)
    out += fmt::format("  check{} [shape=note, label=\"run-time check: {}\"];\n", p, dot_escape(e.pairs[p]));
  out += "}\n";
  return out;
}

}  // namespace explain_parts

QD_FUNC std::string explain_text(kernel_state& k) { return explain_parts::text_of(k, explain_parts::gather(k)); }

QD_FUNC std::string explain_dot(kernel_state& k) { return explain_parts::dot_of(k, explain_parts::gather(k)); }

QD_FUNC void record_explanation(kernel_state& k, program& p, const std::vector<cache::key>& keys,
                                std::string_view variant) {
  // Adjoints always run whole (fallback autodiff) and have no kernel.explain() of their own.
  cache::tier_list& tiers = p.code().tiers();
  if (tiers.empty() || keys.empty() || k.ir.is_gradient) return;
  const explain_parts::explanation e = explain_parts::gather_locked(k);
  const cache::key kernel = cache::explained_kernel(p.code().environment(), k.name, k.ir);
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const cache::explain_record r{
      k.name,
      explain_parts::text_of(k, e),
      explain_parts::dot_of(k, e),
      keys,
      std::string(variant),
      kernel,
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count())};
  // One entry per kernel, traced IR and variant: a recompiled variant replaces its own.
  tiers.put(cache::entry_kind::explain, cache::explain_key(kernel, variant), cache::encode(r), nullptr);
}

}  // namespace qd::inline v0::detail
