// Implementation of runtime/dispatch.hpp: trace once, plan, generate, compile
// (or reuse), and launch without allocating, hashing or locking.
#pragma once

#include <chrono>
#include <filesystem>
#include <fstream>

#include "quadrants/analysis/constructs.hpp"
#include "quadrants/analysis/task_plan.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/codegen/cpp_emitter.hpp"
#include "quadrants/codegen/lower.hpp"
#include "quadrants/detail/format.hpp"
#include "quadrants/ir/dce.hpp"
#include "quadrants/ir/printer.hpp"
#include "quadrants/ir/serialize.hpp"
#include "quadrants/lang/trace.hpp"
#include "quadrants/runtime/dispatch.hpp"
#include "quadrants/runtime/program.hpp"

namespace qd::detail {

inline constexpr std::size_t max_kernel_params = 64;

struct compiled_task {
  void* entry = nullptr;
  bool parallel = false;
  std::uint64_t rng_salt = 0;
  std::vector<std::int32_t> param_map;  // task parameter -> kernel parameter
};

// A kernel ready to launch on one program.
struct compiled_kernel {
  std::uint64_t program_id = 0;
  std::shared_ptr<backend::device> device;
  std::vector<std::shared_ptr<backend::loaded_module>> modules;
  std::vector<compiled_task> tasks;
  void* temps = nullptr;
  bool bounds_checks = false;
  ~compiled_kernel() {
    if (temps) device->release(temps);
  }
};

class kernel_state {
 public:
  std::string name;
  std::vector<std::string> param_names;
  std::vector<ir::param_desc> params;
  trace_function trace;

  std::mutex mutex;  // this kernel's preparation only; launches never take it
  bool traced = false;
  ir::function ir;
  analysis::kernel_structure structure;
  per_offload_observations obs;
  std::shared_ptr<compiled_kernel> compiled;
  std::atomic<compiled_kernel*> ready{nullptr};
};

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

QD_FUNC std::string param_label(const kernel_state& k, std::size_t param) {
  std::string type = ir::describe(k.params[param]);
  if (param < k.param_names.size() && !k.param_names[param].empty())
    return fmt::format("parameter '{}' (#{}, {})", k.param_names[param], param, type);
  return fmt::format("parameter #{} ({})", param, type);
}

// Traces the lambda once; the IR does not depend on the configuration.
QD_FUNC void ensure_traced(kernel_state& k) {
  if (k.traced) return;
  if (k.params.size() > max_kernel_params)
    throw user_error(fmt::format("kernel '{}': {} parameters; at most {} are supported", k.name, k.params.size(),
                                 max_kernel_params));
  if (!k.param_names.empty() && k.param_names.size() != k.params.size())
    throw user_error(fmt::format("kernel '{}': {} parameter names given for {} parameters; name all or none",
                                 k.name, k.param_names.size(), k.params.size()));
  tracer t(k.name, k.param_names);
  k.trace(t);
  ir::eliminate_dead_code(t.fn);
  k.ir = std::move(t.fn);
  k.structure = analysis::analyze_structure(k.ir);
  k.traced = true;
}

QD_FUNC std::string kernel_ir_text(kernel_state& k) {
  std::lock_guard lock(k.mutex);
  ensure_traced(k);
  return ir::to_text(k.ir);
}

QD_FUNC std::string hex64(std::uint64_t v) { return fmt::format("{:016x}", v); }

QD_FUNC void dump_debug_files(const program& p, const kernel_state& k, const std::string& source) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir = p.config().debug_dump_path;
  fs::create_directories(dir, ec);
  std::ofstream(dir / (k.name + ".ir.txt")) << ir::to_text(k.ir);
  std::ofstream(dir / (k.name + ".whole.cpp")) << source;
  if (ec) log_fmt(log_level::warn, "kernel '{}': cannot write the debug dump to {}: {}", k.name, dir.string(), ec.message());
}

// Why this kernel runs whole under the current settings.
QD_FUNC fallback_reason policy_reason(const settings& s) {
  if (s.per_offload == per_offload_mode::off) return fallback_reason::policy_per_offload_off;
  if (!s.offline_cache) return fallback_reason::policy_offline_cache_off;
  return fallback_reason::policy_backend;
}

QD_FUNC compiled_kernel* prepare(kernel_state& k, program& p) {
  std::lock_guard lock(k.mutex);
  compiled_kernel* current = k.ready.load(std::memory_order_acquire);
  if (current && current->program_id == p.id()) return current;
  ensure_traced(k);
  const settings& cfg = p.config();
  backend::device& dev = p.device();

  analysis::task_plan plan = analysis::plan_whole_kernel(k.ir, k.structure);
  if (plan.temps_needed > static_cast<std::size_t>(analysis::temp_slot_count))
    throw user_error(fmt::format("kernel '{}': {} top-level values cross constructs; at most {} fit in the global "
                                 "temporaries. Split the kernel into several kernels",
                                 k.name, plan.temps_needed, analysis::temp_slot_count));
  std::uint64_t content = ir::fnv1a(ir::canonical_bytes(k.ir));
  std::string prefix = "qd_k" + hex64(content);
  codegen::emit_options emit{cfg.check_out_of_bound};
  std::string body;
  auto c = std::make_shared<compiled_kernel>();
  c->program_id = p.id();
  c->device = p.device_ptr();
  c->bounds_checks = cfg.check_out_of_bound;
  std::vector<std::string> entries;
  for (std::size_t t = 0; t < plan.tasks.size(); ++t) {
    codegen::lowered_task lowered = codegen::lower_task(k.ir, k.structure, plan.tasks[t], plan);
    std::string entry = fmt::format("{}_t{}", prefix, t);
    body += codegen::emit_task(lowered, entry, emit);
    entries.push_back(entry);
    compiled_task task;
    task.parallel = lowered.parallel;
    // Random streams are numbered by construct, so every variant draws alike.
    task.rng_salt = lowered.construct >= 0 ? static_cast<std::uint64_t>(lowered.construct)
                                           : 0x100000000ull + static_cast<std::uint64_t>(t);
    task.param_map = std::move(lowered.param_map);
    c->tasks.push_back(std::move(task));
  }
  std::string source = dev.prelude() + body;
  if (cfg.print_ir) dump_debug_files(p, k, source);

  int constructs = static_cast<int>(k.structure.constructs.size());
  bool compiled_now = false;
  if (!c->tasks.empty()) {
    std::string module_key = dev.code_options() + '\n' + source;
    auto module = p.find_module(module_key);
    if (!module) {
      auto t0 = std::chrono::steady_clock::now();
      auto binary = dev.compile(source, fmt::format("kernel '{}'", k.name));
      module = dev.load(binary, fmt::format("kernel '{}'", k.name));
      p.remember_module(module_key, module);
      compiled_now = true;
      log_fmt(log_level::debug, "kernel '{}': compiled whole ({} constructs, {} tasks) in {:.1f} ms", k.name,
              constructs, c->tasks.size(),
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    for (std::size_t t = 0; t < c->tasks.size(); ++t) c->tasks[t].entry = module->entry(entries[t]);
    c->modules.push_back(std::move(module));
  }
  if (!plan.temps.empty()) {
    std::size_t bytes = static_cast<std::size_t>(analysis::temp_slot_count) * 8;
    c->temps = dev.allocate(bytes);
  }

  k.obs.frontend_constructs_total = -1;
  k.obs.constructs_compiled = compiled_now ? constructs : 0;
  k.obs.constructs_loaded = 0;
  k.obs.fallback = policy_reason(cfg);
  k.obs.fallback_detail = std::string(describe(k.obs.fallback));
  k.compiled = c;
  k.ready.store(c.get(), std::memory_order_release);
  return c.get();
}

QD_FUNC void compile(kernel_state& k) {
  program& p = current_program(fmt::format("kernel '{}'", k.name));
  prepare(k, p);
}

QD_FUNC per_offload_observations observations(const kernel_state& k) {
  std::lock_guard lock(const_cast<kernel_state&>(k).mutex);
  return k.obs;
}

[[noreturn]] QD_FUNC void throw_launch_error(const kernel_state& k, std::size_t param, std::string_view what) {
  throw user_error(fmt::format("kernel '{}', {}: {}", k.name, param_label(k, param), what));
}

QD_FUNC std::uint64_t mix_stream(std::uint64_t seed, std::uint64_t launch, std::uint64_t salt) {
  auto mix = [](std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  return mix(seed ^ mix(launch * 0x9e3779b97f4a7c15ull ^ mix(salt + 1)));
}

QD_FUNC void launch(kernel_state& k, const launch_arg* args, std::size_t count) {
  program* p = active_program.load(std::memory_order_acquire);
  if (p == nullptr) current_program(fmt::format("kernel '{}'", k.name));  // throws the not-initialized error
  compiled_kernel* c = k.ready.load(std::memory_order_acquire);
  if (c == nullptr || c->program_id != p->id()) c = prepare(k, *p);

  for (std::size_t i = 0; i < count; ++i) {
    const ir::param_desc& d = k.params[i];
    if (!d.is_array) continue;
    if (args[i].program_id != p->id())
      throw_launch_error(k, i,
                         args[i].program_id == 0
                             ? "the qd::ndarray passed was moved from"
                             : "the qd::ndarray passed was created before qd::reset() or a later qd::init(); create it "
                               "again in the running program");
    if (d.needs_grad && args[i].grad == nullptr)
      throw_launch_error(k, i, "the parameter needs a gradient buffer; construct the qd::ndarray with qd::needs_grad");
  }
  std::uint64_t launch_no = p->next_launch();
  backend::array_abi arrays[max_kernel_params];
  std::uint64_t scalars[max_kernel_params];
  std::int64_t error[5] = {0, 0, 0, 0, 0};
  for (const compiled_task& t : c->tasks) {
    const std::size_t n = t.param_map.size();
    for (std::size_t j = 0; j < n; ++j) {
      const launch_arg& a = args[static_cast<std::size_t>(t.param_map[j])];
      if (k.params[static_cast<std::size_t>(t.param_map[j])].is_array) {
        arrays[j].data = a.data;
        arrays[j].grad = a.grad;
        for (int d = 0; d < 4; ++d) arrays[j].shape[d] = a.shape[d];
      } else {
        scalars[j] = a.scalar_bits;
      }
    }
    backend::launch_context ctx{arrays, scalars, n, static_cast<unsigned char*>(c->temps),
                                mix_stream(p->config().random_seed, launch_no, t.rng_salt), error};
    c->device->launch(t.entry, t.parallel, ctx);
    if (c->bounds_checks && error[0] != 0) {
      std::size_t param = static_cast<std::size_t>(t.param_map[static_cast<std::size_t>(error[1])]);
      throw_launch_error(k, param,
                         fmt::format("index {} is out of range for dimension {} (extent {}); out-of-range accesses "
                                     "were skipped (check_out_of_bound is on)",
                                     error[3], error[2], error[4]));
    }
  }
}

}  // namespace qd::detail
