// Implementation of runtime/pipeline/variant_choice.hpp.
#pragma once

#include <algorithm>

#include "quadrants/base/log.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/ir/printer.hpp"
#include "quadrants/lang/trace.hpp"
#include "quadrants/runtime/graph/graph.hpp"
#include "quadrants/runtime/mesh.hpp"
#include "quadrants/runtime/diagnostics/debug_dump.hpp"
#include "quadrants/runtime/diagnostics/explain.hpp"
#include "quadrants/runtime/pipeline/variant_builder.hpp"
#include "quadrants/runtime/pipeline/variant_choice.hpp"

namespace qd::inline v0::detail {

QD_FUNC std::string index_text(const ir::function& fn, const ir::node& access) {
  std::string s;
  for (std::int32_t d = 0; d < access.list_size; ++d) {
    const ir::node& idx = fn.at(fn.list(access, d));
    s += d ? ", " : "";
    s += idx.code == ir::op::constant ? fmt::format("{}", idx.imm) : std::string("...");
  }
  return s;
}

QD_FUNC std::string access_text(const kernel_state& k, ir::id node) {
  const ir::node& n = k.ir.at(node);
  return fmt::format("{}{}[{}]", param_name(k, static_cast<std::size_t>(n.param)),
                     (n.flags & ir::access::grad) ? ".grad()" : "", index_text(k.ir, n));
}

QD_FUNC std::string fallback_detail(const kernel_state& k, const analysis::split_decision& d) {
  auto construct = [&](std::int32_t c) { return construct_label(k, c); };
  auto at = [&](ir::id node) {
    const ir::source_loc l = k.ir.location(node);
    return l.known() ? " at " + ir::to_text(l) : std::string();
  };
  switch (d.reason) {
    case fallback_reason::stale_reread:
      if (k.ir.location(d.read).known())
        return fmt::format("{} read{} is overwritten by {} before {} re-reads it", access_text(k, d.read), at(d.read),
                           construct_label(k, d.other_construct, true), construct(d.construct));
      return fmt::format("{} re-read by {} after {} writes {}", access_text(k, d.read), construct(d.construct),
                         construct(d.other_construct), param_name(k, static_cast<std::size_t>(k.ir.at(d.write).param)));
    case fallback_reason::aliasing_gradient:
      return fmt::format(
          "{}{} re-read by {} after {} writes {}{}; a gradient buffer may alias the other, which "
          "cannot be checked",
          access_text(k, d.read), at(d.read), construct(d.construct), construct(d.other_construct),
          access_text(k, d.write), at(d.write));
    case fallback_reason::carried_value: {
      const std::string variable = d.variable != ir::none && k.ir.location(d.variable).known()
                                       ? fmt::format(" (the qd::var declared{})", at(d.variable))
                                       : "";
      if (d.construct < 0)
        return fmt::format(
            "{} values and variables would cross constructs through the persisted buffer; at most {} "
            "fit",
            d.plan.temps_needed, analysis::temp_slot_count);
      if (d.other_construct == d.construct)
        return fmt::format("{} updates a top-level qd::var across its iterations{}", construct(d.construct), variable);
      return fmt::format("{} needs a top-level value produced or modified inside {}{}", construct(d.construct),
                         construct(d.other_construct), variable);
    }
    case fallback_reason::side_effect: {
      const auto& st = k.structure.statements[static_cast<std::size_t>(d.statement)];
      std::string_view what = st.has_random     ? "a random draw"
                              : st.has_volatile ? "a volatile read"
                              : st.has_atomic   ? "an atomic"
                              : st.has_print    ? "a print"
                                                : "a global store";
      return fmt::format("{} would recompute {}{}", construct(d.construct), what, at(st.node));
    }
    case fallback_reason::autodiff: return "a gradient kernel";
    case fallback_reason::concurrent: return concurrent_detail(k);
    case fallback_reason::mesh: return mesh_detail(k);
    case fallback_reason::diagnostic:
    case fallback_reason::none:
    case fallback_reason::policy_backend:
    case fallback_reason::policy_offline_cache_off:
    case fallback_reason::policy_per_offload_off: return std::string(describe(d.reason));
  }
  return std::string(describe(d.reason));
}

QD_FUNC bool split_enabled_by_policy(const settings& s, const backend::device_traits& traits, fallback_reason& why) {
  if (s.per_offload == per_offload_mode::off) {
    why = fallback_reason::policy_per_offload_off;
    return false;
  }
  if (!s.offline_cache) {
    why = fallback_reason::policy_offline_cache_off;
    return false;
  }
  if (!traits.splits_by_default && s.per_offload != per_offload_mode::on) {
    why = fallback_reason::policy_backend;
    return false;
  }
  return true;
}

QD_FUNC compiled_kernel* prepare(kernel_state& k, program& p) {
  std::lock_guard lock(k.mutex);
  compiled_kernel* current = k.ready.load(std::memory_order_acquire);
  if (current && current->program_id == p.id()) return current;
  ensure_traced(k);
  const settings& cfg = p.config();
  auto c = std::make_shared<compiled_kernel>();
  c->program_id = p.id();
  c->bounds_checks = cfg.check_out_of_bound;
  c->wide_bounds =
      std::any_of(k.ir.nodes.begin(), k.ir.nodes.end(), [](const ir::node& n) { return n.code == ir::op::bound; });

  if (cfg.print_ir) dump_debug_file(cfg, k.name, "traced.ir.txt", traced_ir_text(k));
  per_offload_observations obs;
  fallback_reason reason = fallback_reason::none;
  analysis::split_decision decision;
  if (k.unchecked_split) {  // test-only: every value recomputed that can be, whatever the analysis says
    decision.plan = analysis::plan_split_unchecked(k.ir, k.structure);
  } else if (k.ir.is_gradient) {  // an adjoint links its constructs, whatever the backend
    reason = decision.reason = fallback_reason::autodiff;
    obs.fallback_detail = fallback_detail(k, decision);
    log_fmt(log_level::debug, "[PER_OFFLOAD] kernel '{}' stays whole-kernel: {} ({})", k.name, name(reason),
            obs.fallback_detail);
  } else if (split_enabled_by_policy(cfg, p.device().traits(), reason)) {
    if (cfg.print_ir || cfg.kernel_coverage) {
      reason = fallback_reason::diagnostic;
      obs.fallback_detail = cfg.print_ir ? "print_ir (a compiler debug dump) is on" : "kernel_coverage is on";
      if (cfg.print_ir) {
        analysis::split_decision would = analysis::plan_split(k.ir, k.structure);
        if (would.reason == fallback_reason::none) dump_split_preview(k, p, would.plan);
      }
    } else {
      decision = analysis::plan_split(k.ir, k.structure);
      reason = decision.reason;
      if (reason != fallback_reason::none) obs.fallback_detail = fallback_detail(k, decision);
    }
    if (reason != fallback_reason::none)
      log_fmt(log_level::debug, "[PER_OFFLOAD] kernel '{}' stays whole-kernel: {} ({})", k.name, name(reason),
              obs.fallback_detail);
  } else {
    obs.fallback_detail = std::string(describe(reason));
  }
  build_counts counts;
  std::string_view variant_name = "whole";  // for `qd-cache explain`
  if (reason == fallback_reason::none) {
    variant_name = "split";
    build_split(k, p, decision.plan, c->primary, counts);
    c->split = true;
    c->pairs = decision.pairs;
    obs.frontend_constructs_total = static_cast<int>(decision.plan.tasks.size());
  } else if (cfg.kernel_coverage && !k.graph && !k.ir.is_gradient) {  // graphs and adjoints are not instrumented
    variant_name = "coverage";
    build_whole(coverage_twin(k), p, c->primary, counts);
    // The observations count the user's constructs, not the probes' serial runs.
    for (int* n : {&counts.compiled, &counts.loaded})
      if (*n > 0) *n = static_cast<int>(k.structure.constructs.size());
    if (!cfg.compile_only) c->coverage = coverage_buffer(p, k.coverage_probes);
    obs.frontend_constructs_total = -1;
  } else {
    build_whole(k, p, c->primary, counts);
    obs.frontend_constructs_total = -1;
  }
  obs.fallback = reason;
  obs.constructs_compiled = counts.compiled;
  obs.constructs_loaded = counts.loaded;
  if (obs.frontend_constructs_total >= 0) {
    obs.frontend_constructs_recompiled = counts.compiled;
    obs.frontend_constructs_cache_hit = obs.frontend_constructs_total - counts.compiled;
  }
  obs.tasks_total = counts.tasks;
  obs.tasks_recompiled = counts.tasks_compiled;
  obs.tasks_cache_hit = counts.tasks - counts.tasks_compiled;
  k.obs = std::move(obs);
  k.compiled = c;
  if (counts.compiled > 0) record_explanation(k, p, counts.records, variant_name);  // for `qd-cache explain`
  k.ready.store(c.get(), std::memory_order_release);
  k.ready_program.store(p.id(), std::memory_order_release);
  return c.get();
}

QD_FUNC variant& lazy_whole(kernel_state& k, program& p, lazy_variant& slot) {
  if (variant* v = slot.ready.load(std::memory_order_acquire)) return *v;
  std::lock_guard lock(k.mutex);
  if (!slot.built) {
    auto v = std::make_unique<variant>();
    build_counts ignored;
    build_whole(k, p, *v, ignored, slot.wide_offsets);
    slot.built = std::move(v);
    slot.ready.store(slot.built.get(), std::memory_order_release);
  }
  return *slot.built;
}

QD_FUNC void compile(kernel_state& k) {
  if (active_tracer != nullptr)
    throw user_error(fmt::format("kernel '{}' compiled while tracing kernel '{}': compile it from host code", k.name,
                                 active_tracer->kernel));
  program_use use(std::nothrow);
  if (!use) throw_not_initialized(fmt::format("kernel '{}'", k.name));
  prepare(k, *use);
}

}  // namespace qd::inline v0::detail
