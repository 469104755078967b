// Implementation of runtime/kernel_state.hpp and of dispatch.hpp's accessors.
#pragma once

#include "quadrants/base/error.hpp"
#include "quadrants/base/limits.hpp"
#include "quadrants/detail/format.hpp"
#include "quadrants/analysis/atomic_demotion.hpp"
#include "quadrants/ir/dce.hpp"
#include "quadrants/ir/printer.hpp"
#include "quadrants/ir/verify.hpp"
#include "quadrants/lang/trace.hpp"
#include "quadrants/runtime/graph.hpp"
#include "quadrants/runtime/kernel_state.hpp"

namespace qd::detail {

QD_FUNC std::shared_ptr<kernel_state> make_kernel_state(std::string name, std::vector<std::string> param_names,
                                                        std::vector<ir::param_desc> params, trace_function trace) {
  auto k = std::make_shared<kernel_state>();
  k->name = std::move(name);
  k->param_names = std::move(param_names);
  k->params = std::move(params);
  k->trace = std::move(trace);
  return k;
}

QD_FUNC const std::string& kernel_name(const kernel_state& k) { return k.name; }

QD_FUNC std::string param_name(const kernel_state& k, std::size_t param) {
  if (param < k.param_names.size() && !k.param_names[param].empty()) return k.param_names[param];
  return fmt::format("#{}", param);
}

QD_FUNC std::string param_label(const kernel_state& k, std::size_t param) {
  std::string type = ir::describe(k.params[param]);
  if (param < k.param_names.size() && !k.param_names[param].empty())
    return fmt::format("parameter '{}' (#{}, {})", k.param_names[param], param, type);
  return fmt::format("parameter #{} ({})", param, type);
}

QD_FUNC void ensure_traced(kernel_state& k) {
  if (k.traced) return;
  if (k.params.size() > limits::max_kernel_params)
    throw user_error(fmt::format("kernel '{}': {} parameters; at most {} are supported", k.name, k.params.size(),
                                 limits::max_kernel_params));
  if (!k.param_names.empty() && k.param_names.size() != k.params.size())
    throw user_error(fmt::format("kernel '{}': {} parameter names given for {} parameters; name all or none",
                                 k.name, k.param_names.size(), k.params.size()));
  tracer t(k.name, k.param_names);
  t.graph_kernel = k.graph;
  k.trace(t);
  ir::eliminate_dead_code(t.fn);
  analysis::demote_owned_updates(t.fn);
  if constexpr (checked_build) ir::verify(t.fn, ir::stage::traced);
  k.ir = std::move(t.fn);
  k.structure = analysis::analyze_structure(k.ir);
  check_graph_kernel(k);
  k.traced = true;
}

QD_FUNC void force_unchecked_split(kernel_state& k) {
  std::lock_guard lock(k.mutex);
  k.unchecked_split = true;
  k.ready.store(nullptr, std::memory_order_release);
  k.ready_program.store(0, std::memory_order_release);
}

QD_FUNC std::string kernel_ir_text(kernel_state& k) {
  std::lock_guard lock(k.mutex);
  ensure_traced(k);
  return ir::to_text(k.ir);
}

QD_FUNC per_offload_observations observations(const kernel_state& k) {
  std::lock_guard lock(const_cast<kernel_state&>(k).mutex);
  per_offload_observations o = k.obs;
  o.runtime_fallbacks = k.runtime_fallbacks.load(std::memory_order_relaxed);
  return o;
}

}  // namespace qd::detail
