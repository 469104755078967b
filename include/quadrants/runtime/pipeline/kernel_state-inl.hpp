// Implementation of runtime/pipeline/kernel_state.hpp and of dispatch.hpp's accessors.
#pragma once

#include <algorithm>

#include "quadrants/base/error.hpp"
#include "quadrants/base/limits.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/analysis/atomic_demotion.hpp"
#include "quadrants/ir/dce.hpp"
#include "quadrants/ir/printer.hpp"
#include "quadrants/ir/verify.hpp"
#include "quadrants/lang/trace.hpp"
#include "quadrants/runtime/graph/graph.hpp"
#include "quadrants/runtime/pipeline/kernel_registry.hpp"
#include "quadrants/runtime/pipeline/kernel_state.hpp"
#include "quadrants/runtime/pipeline/program.hpp"

namespace qd::inline v0::detail {

QD_FUNC std::shared_ptr<kernel_state> make_kernel_state(std::string name, std::vector<std::string> param_names,
                                                        std::vector<ir::param_desc> params, trace_function trace) {
  auto k = std::make_shared<kernel_state>();
  k->name = std::move(name);
  k->param_names = std::move(param_names);
  k->params = std::move(params);
  k->trace = std::move(trace);
  register_kernel(k);
  return k;
}

QD_FUNC std::shared_ptr<kernel_state> make_kernel_state(std::string name, std::vector<std::string> param_names,
                                                        std::vector<ir::param_desc> params,
                                                        std::unique_ptr<const kernel_body> body) {
  return make_kernel_state(std::move(name), std::move(param_names), std::move(params),
                           [b = std::shared_ptr<const kernel_body>(std::move(body))](tracer& t) { b->trace(t); });
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

QD_FUNC std::string construct_label(const kernel_state& k, std::int32_t c, bool place_first) {
  if (c < 0 || static_cast<std::size_t>(c) >= k.structure.constructs.size()) return fmt::format("construct {}", c + 1);
  const analysis::construct& con = k.structure.constructs[static_cast<std::size_t>(c)];
  // Named by its first statement that records a line of its own (invariant values take a
  // neighbour's), or by its serialized loop when it has one.
  ir::id first = ir::none;
  bool serial_loop = false;
  for (std::int32_t st : con.statements) {
    const analysis::statement_info& s = k.structure.statements[static_cast<std::size_t>(st)];
    if (con.kind == analysis::construct_kind::serial && k.ir.at(s.node).code == ir::op::range_for) {
      first = s.node;
      serial_loop = true;
      break;
    }
    if (first == ir::none && !s.invariant) first = s.node;
  }
  if (first == ir::none) first = k.structure.statements[static_cast<std::size_t>(con.statements.front())].node;
  const ir::source_loc l = k.ir.location(first);
  if (!l.known()) return fmt::format("construct {}", c + 1);
  const std::string_view what = con.kind == analysis::construct_kind::parallel ? "the loop"
                                : serial_loop                                  ? "the serial loop"
                                                                               : "the statement";
  if (place_first) return fmt::format("{} at {} (construct {})", what, ir::to_text(l), c + 1);
  return fmt::format("construct {} ({} at {})", c + 1, what, ir::to_text(l));
}

QD_FUNC std::string access_sites(const kernel_state& k, std::size_t param, std::int32_t c) {
  std::vector<std::string> sites;
  for (std::size_t i = 0; i < k.ir.nodes.size(); ++i) {
    const ir::node& n = k.ir.nodes[i];
    if (n.code != ir::op::global_load && n.code != ir::op::global_store && n.code != ir::op::global_atomic) continue;
    if (n.param != static_cast<std::int32_t>(param)) continue;
    const std::int32_t st = k.structure.statement_of[i];
    if (st < 0) continue;  // removed as dead code
    if (c >= 0 && k.structure.construct_of[static_cast<std::size_t>(st)] != c) continue;
    const std::string where = ir::to_text(k.ir.location(static_cast<ir::id>(i)));
    if (!where.empty() && std::find(sites.begin(), sites.end(), where) == sites.end()) sites.push_back(where);
  }
  if (sites.empty()) return {};
  std::string out = fmt::format("; {} is accessed {} at ", param_name(k, param), c >= 0 ? "there" : "in the kernel");
  for (std::size_t j = 0; j < sites.size() && j < 8; ++j) out += (j ? ", " : "") + sites[j];
  if (sites.size() > 8) out += ", ...";
  return out;
}

QD_FUNC kernel_state& coverage_twin(kernel_state& k) {
  if (k.coverage_twin) return *k.coverage_twin;
  if (k.params.size() + 1 > limits::max_kernel_params)
    throw user_error(
        fmt::format("kernel '{}': kernel_coverage passes the probe buffer as one more parameter, and the "
                    "kernel already has {} (the most is {}); turn kernel_coverage off for it",
                    k.name, k.params.size(), limits::max_kernel_params));
  auto twin = std::make_unique<kernel_state>();
  auto probes = std::make_shared<std::vector<coverage_probe>>();
  twin->name = k.name;
  twin->param_names = k.param_names;
  if (!twin->param_names.empty()) twin->param_names.push_back("qd_coverage");
  twin->ir = instrument_for_coverage(k.ir, *probes);
  twin->params = twin->ir.params;
  if constexpr (checked_build) ir::verify(twin->ir, ir::stage::traced);
  twin->structure = analysis::analyze_structure(twin->ir);
  twin->traced = true;
  k.coverage_probes = std::move(probes);
  k.coverage_twin = std::move(twin);
  return *k.coverage_twin;
}

QD_FUNC std::optional<raw_trace> trace_if_stale(kernel_state& k) {
  bool debug = false;
  {
    program_use use(std::nothrow);
    if (use) debug = use->config().debug;
  }
  if (k.traced && (k.traced_debug == debug || k.trace == nullptr))
    return std::nullopt;  // a derived kernel keeps its IR
  if (k.params.size() > limits::max_kernel_params)
    throw user_error(fmt::format("kernel '{}': {} parameters; at most {} are supported", k.name, k.params.size(),
                                 limits::max_kernel_params));
  if (!k.param_names.empty() && k.param_names.size() != k.params.size())
    throw user_error(fmt::format("kernel '{}': {} parameter names given for {} parameters; name all or none", k.name,
                                 k.param_names.size(), k.params.size()));
  tracer t(k.name, k.param_names);
  t.graph_kernel = k.graph;
  t.debug = debug;
  k.trace(t);
  return raw_trace{.fn = std::move(t.fn), .assertions = std::move(t.assertions), .debug = debug};
}

QD_FUNC void finish_trace(kernel_state& k, raw_trace&& r) {
  if (k.traced && k.traced_debug == r.debug) return;  // another thread finished a trace of its own first
  if (k.traced) {  // traced for the other debug setting: what came from that IR goes too
    k.coverage_twin.reset();
    k.coverage_probes.reset();
  }
  ir::eliminate_dead_code(r.fn);
  analysis::demote_owned_updates(r.fn);
  if constexpr (checked_build) ir::verify(r.fn, ir::stage::traced);
  // Kept as a copy of exactly its size; the trace's own arrays (grown by doubling) go back
  // to the allocator of the thread that traced, whose next trace may reuse them
  // (qd::compile_all traces on one thread and analyses on others).
  k.ir = r.fn;
  r.fn = ir::function();
  k.assertions = std::move(r.assertions);
  k.structure = analysis::analyze_structure(k.ir);
  check_graph_kernel(k);
  k.traced = true;
  k.traced_debug = r.debug;
}

QD_FUNC void ensure_traced(kernel_state& k) {
  if (std::optional<raw_trace> r = trace_if_stale(k)) finish_trace(k, std::move(*r));
}

QD_FUNC std::string assertion_failure(const kernel_state& k, std::int64_t number) {
  if (number < 0 || static_cast<std::size_t>(number) >= k.assertions.size())
    return fmt::format("kernel '{}': an assertion failed (qd::assert_ #{})", k.name, number);
  const assertion_site& a = k.assertions[static_cast<std::size_t>(number)];
  const std::string where = ir::to_text(k.ir.location(a.node));
  return fmt::format("kernel '{}': assertion failed{}{}: {} (qd::assert_, checked because config.debug is on)", k.name,
                     where.empty() ? "" : " at ", where, a.message);
}

QD_FUNC void force_unchecked_split(kernel_state& k) {
  std::lock_guard lock(k.mutex);
  k.unchecked_split = true;
  k.ready.store(nullptr, std::memory_order_release);
  k.ready_program.store(0, std::memory_order_release);
}

QD_FUNC std::string traced_ir_text(const kernel_state& k) {
  ir::text_options options;
  options.param_names = &k.param_names;
  return ir::to_text(k.ir, options);
}

QD_FUNC std::string kernel_ir_text(kernel_state& k) {
  std::lock_guard lock(k.mutex);
  ensure_traced(k);
  return traced_ir_text(k);
}

QD_FUNC per_offload_observations observations(const kernel_state& k) {
  std::lock_guard lock(const_cast<kernel_state&>(k).mutex);
  per_offload_observations o = k.obs;
  o.runtime_fallbacks = k.runtime_fallbacks.load(std::memory_order_relaxed);
  o.device_graph_builds = k.device_graph_builds.load(std::memory_order_relaxed);
  o.device_graph_replays = k.device_graph_replays.load(std::memory_order_relaxed);
  o.device_graph_updates = k.device_graph_updates.load(std::memory_order_relaxed);
  o.device_stream_forks = k.device_stream_forks.load(std::memory_order_relaxed);
  return o;
}

}  // namespace qd::inline v0::detail
