// Implementation of runtime/dispatch.hpp: trace once, decide the variant, find
// or compile its code (memory, then disk, then the compiler), and launch
// without allocating, hashing or locking.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "quadrants/analysis/constructs.hpp"
#include "quadrants/analysis/split.hpp"
#include "quadrants/analysis/task_plan.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/cache/records.hpp"
#include "quadrants/cache/store.hpp"
#include "quadrants/codegen/cpp_emitter.hpp"
#include "quadrants/codegen/lower.hpp"
#include "quadrants/detail/format.hpp"
#include "quadrants/ir/dce.hpp"
#include "quadrants/ir/printer.hpp"
#include "quadrants/ir/serialize.hpp"
#include "quadrants/lang/trace.hpp"
#include "quadrants/runtime/dispatch.hpp"
#include "quadrants/runtime/dump_path.hpp"
#include "quadrants/runtime/program.hpp"

namespace qd::detail {

inline constexpr std::size_t max_kernel_params = 64;

struct compiled_task {
  void* entry = nullptr;
  bool parallel = false;
  std::uint64_t rng_salt = 0;
  std::vector<std::int32_t> param_map;  // task parameter -> kernel parameter
};

// One variant of a kernel, ready to launch: its tasks in order.
struct variant {
  std::shared_ptr<backend::device> device;
  std::vector<std::shared_ptr<backend::loaded_module>> modules;
  std::vector<compiled_task> tasks;
  void* temps = nullptr;
  // The temporaries buffer is one per variant, so launches of this variant from
  // several host threads take turns: 0 free, 1 in use, 2 in use with waiters.
  mutable std::atomic<int> temps_state{0};
  variant() = default;
  variant(const variant&) = delete;
  variant& operator=(const variant&) = delete;
  ~variant() {
    if (temps) device->release(temps);
  }
};

// A kernel ready to launch on one program.
struct compiled_kernel {
  std::uint64_t program_id = 0;
  bool bounds_checks = false;
  bool wide_bounds = false;  // the IR narrows an i64/u32 loop bound (ir::op::bound): its failure must be read back
  bool split = false;
  variant primary;                              // the split variant, or the whole kernel
  std::vector<analysis::disjoint_pair> pairs;   // checked before each split launch
  std::unique_ptr<variant> whole;               // built on the first run-time fallback
  std::atomic<variant*> whole_ready{nullptr};
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
  std::atomic<std::uint64_t> runtime_fallbacks{0};
  std::atomic<bool> fallback_warned{false};
  bool unchecked_split = false;  // test-only: see force_unchecked_split
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

QD_FUNC void force_unchecked_split(kernel_state& k) {
  std::lock_guard lock(k.mutex);
  k.unchecked_split = true;
  k.ready.store(nullptr, std::memory_order_release);
}

QD_FUNC std::string kernel_ir_text(kernel_state& k) {
  std::lock_guard lock(k.mutex);
  ensure_traced(k);
  return ir::to_text(k.ir);
}

QD_FUNC void dump_debug_files(const program& p, const kernel_state& k, const std::string& suffix,
                              const std::string& source) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir = p.config().debug_dump_path;
  fs::create_directories(dir, ec);
  std::ofstream(dir / (dump_file_stem(k.name) + ".ir.txt")) << ir::to_text(k.ir);
  std::ofstream out(dir / (dump_file_stem(k.name) + suffix));
  out << source;
  if (ec || !out)
    log_fmt(log_level::warn, "kernel '{}': cannot write the debug dump to {}", k.name, dir.string());
}

// ---------------------------------------------------------------------------
// Finding code: memory, then disk, then the compiler.

QD_FUNC std::shared_ptr<backend::loaded_module> load_cached_module(program& p, const cache::key& module_key,
                                                                   const std::string& what) {
  if (auto m = p.find_module(module_key)) return m;
  if (!p.store()) return nullptr;
  auto binary = p.store()->load(cache::entry_kind::module, module_key);
  if (!binary) return nullptr;
  std::shared_ptr<backend::loaded_module> m;
  try {
    m = p.device().load(*binary, what);
  } catch (const error& e) {
    // A validated entry that does not load (another library version's object?) is a miss.
    log_fmt(log_level::warn, "{}: a cached module did not load ({}); recompiling", what, e.what());
    p.store()->discard(cache::entry_kind::module, module_key, *binary);  // not decoded again before the compile
    return nullptr;
  }
  p.remember_module(module_key, m);
  return m;
}

struct module_result {
  std::shared_ptr<backend::loaded_module> module;
  bool compiled = false;  // false: another process compiled it while this one waited
};

QD_FUNC module_result compile_module(program& p, const std::string& source, const cache::key& module_key,
                                     const std::string& what) {
  // Processes that miss the same module at once: one compiles, the others wait
  // for its flock (released even if it dies) and then load what it stored.
  cache::store::compile_lock lock;
  if (p.store()) {
    lock = p.store()->lock_for_compile(module_key, std::chrono::seconds(120));
    if (auto m = load_cached_module(p, module_key, what)) return {m, false};
  }
  auto t0 = std::chrono::steady_clock::now();
  auto binary = p.device().compile(source, what);
  std::shared_ptr<backend::loaded_module> m = p.device().load(binary, what);
  p.compiles.fetch_add(1, std::memory_order_relaxed);
  log_fmt(log_level::debug, "{}: compiled in {:.1f} ms", what,
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  if (p.store()) p.store()->save(cache::entry_kind::module, module_key, binary);
  p.remember_module(module_key, m);
  return {m, true};
}

QD_FUNC std::uint64_t rng_salt(const codegen::lowered_task& t, std::size_t index) {
  // Random streams are numbered by construct, so every variant draws alike.
  return t.construct >= 0 ? static_cast<std::uint64_t>(t.construct) : 0x100000000ull + index;
}

QD_FUNC bool has_print(const ir::function& fn) {
  bool found = false;
  ir::walk(fn, 0, [&](ir::id i, int) { found |= fn.at(i).code == ir::op::print; });
  return found;
}

// An offload is compiled from its own parameters, numbered in first-use order.
QD_FUNC std::vector<std::int32_t> identity_params(const codegen::lowered_task& t) {
  std::vector<std::int32_t> p(t.fn.params.size());
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<std::int32_t>(i);
  return p;
}

struct build_counts {
  int compiled = 0;
  int loaded = 0;
};

// The whole-kernel variant: one module, one entry per serial run or loop.
QD_FUNC void build_whole(kernel_state& k, program& p, variant& v, build_counts& counts) {
  analysis::task_plan plan = analysis::plan_whole_kernel(k.ir, k.structure);
  if (plan.temps_needed > static_cast<std::size_t>(analysis::temp_slot_count))
    throw user_error(fmt::format("kernel '{}': {} top-level values cross constructs; at most {} fit in the global "
                                 "temporaries. Split the kernel into several kernels",
                                 k.name, plan.temps_needed, analysis::temp_slot_count));
  v.device = p.device_ptr();
  std::vector<codegen::lowered_task> lowered;
  for (const auto& t : plan.tasks) lowered.push_back(codegen::lower_task(k.ir, k.structure, t, plan));
  // The key covers the IR and the source generated from it, so a change in the
  // code generator is a different key, never stale native code.
  std::string body;
  std::vector<std::string> entries;
  for (std::size_t t = 0; t < lowered.size(); ++t) {
    entries.push_back(fmt::format("qd_task{}", t));  // one module per whole kernel: local names
    body += codegen::emit_task(lowered[t], entries.back(), {p.config().check_out_of_bound});
  }
  cache::key_builder kb = p.environment();
  cache::key key = kb.add("kernel").add(ir::canonical_bytes(k.ir)).add(body).finish();
  std::string what = fmt::format("kernel '{}'", k.name);
  const int constructs = static_cast<int>(k.structure.constructs.size());

  std::optional<cache::kernel_record> record;
  std::shared_ptr<backend::loaded_module> module;
  if (p.device().runs_ir()) {  // nothing to compile or cache
    module = p.device().load_ir(lowered, entries);
    record = cache::kernel_record{key, static_cast<std::uint32_t>(constructs), !plan.temps.empty(), {}};
    for (std::size_t t = 0; t < lowered.size(); ++t)
      record->tasks.push_back({entries[t], lowered[t].parallel, has_print(lowered[t].fn), lowered[t].param_map});
    counts.compiled = constructs;
  } else if (p.store()) {
    if (auto bytes = p.store()->load(cache::entry_kind::kernel, key)) {
      record = cache::decode_kernel_record(*bytes);
      // The record must describe exactly the tasks this IR lowers to.
      bool matches = record && record->tasks.size() == lowered.size();
      for (std::size_t t = 0; matches && t < lowered.size(); ++t)
        matches = record->tasks[t].entry == entries[t] && record->tasks[t].parallel == lowered[t].parallel &&
                  record->tasks[t].params == lowered[t].param_map;
      if (matches) module = load_cached_module(p, record->module, what);
      else record.reset();
    }
  }
  if (!module && !p.device().runs_ir()) {
    if (auto m = p.find_module(key)) {  // compiled by another kernel object in this process
      module = m;
      p.memory_hits.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (p.device().runs_ir()) {
    // Interpreted: counted above.
  } else if (module && record) {
    counts.loaded = constructs;
    if (p.config().print_ir) log_nothing_dumped(k.name);
  } else if (!module) {
    record = cache::kernel_record{key, static_cast<std::uint32_t>(constructs), !plan.temps.empty(), {}};
    for (std::size_t t = 0; t < lowered.size(); ++t)
      record->tasks.push_back({entries[t], lowered[t].parallel, has_print(lowered[t].fn), lowered[t].param_map});
    std::string source = p.device().prelude() + body;
    if (p.config().print_ir) dump_debug_files(p, k, ".whole.cpp", source);
    module_result built = compile_module(p, source, key, what);
    module = built.module;
    if (p.store()) p.store()->save(cache::entry_kind::kernel, key, cache::encode(*record));
    (built.compiled ? counts.compiled : counts.loaded) = constructs;
  } else {
    // In memory without a record (kernels compiled in this process): rebuild the names.
    if (p.config().print_ir) log_nothing_dumped(k.name);
    record = cache::kernel_record{key, static_cast<std::uint32_t>(constructs), !plan.temps.empty(), {}};
    for (std::size_t t = 0; t < lowered.size(); ++t)
      record->tasks.push_back({entries[t], lowered[t].parallel, false, lowered[t].param_map});
  }
  for (std::size_t t = 0; t < lowered.size(); ++t) {
    compiled_task task;
    task.entry = module->entry(record->tasks[t].entry);
    task.parallel = lowered[t].parallel;
    task.rng_salt = rng_salt(lowered[t], t);
    task.param_map = std::move(lowered[t].param_map);
    v.tasks.push_back(std::move(task));
  }
  v.modules.push_back(std::move(module));
  // Under compile_only nothing runs (and a GPU backend has no device memory).
  if (!plan.temps.empty() && !p.config().compile_only)
    v.temps = p.device().allocate(static_cast<std::size_t>(analysis::temp_slot_count) * 8);
}

// The per-offload variant: each construct from the kernel's parameters alone.
// Misses are compiled together: one translation unit per group of constructs.
QD_FUNC void build_split(kernel_state& k, program& p, const analysis::task_plan& plan, variant& v,
                         build_counts& counts) {
  v.device = p.device_ptr();
  const std::string what = fmt::format("kernel '{}'", k.name);
  struct pending {
    codegen::lowered_task lowered;
    cache::key key;
    std::string entry;
    std::string body;
    std::shared_ptr<backend::loaded_module> module;
    bool compiled = false;
  };
  std::vector<pending> offloads;
  for (const auto& t : plan.tasks) {
    pending o;
    o.lowered = codegen::lower_task(k.ir, k.structure, t, plan);
    // Keyed on the IR and on the generated source, written with a placeholder
    // entry name that is then replaced by one derived from the key.
    constexpr std::string_view placeholder = "QD_OFFLOAD_ENTRY";
    o.body = codegen::emit_task(o.lowered, placeholder, {p.config().check_out_of_bound});
    cache::key_builder kb = p.environment();
    o.key = kb.add("offload").add(ir::canonical_bytes(o.lowered.fn)).add(o.body).finish();
    o.entry = "qd_o" + o.key.hex();
    for (std::size_t at = o.body.find(placeholder); at != std::string::npos; at = o.body.find(placeholder, at))
      o.body.replace(at, placeholder.size(), o.entry);
    offloads.push_back(std::move(o));
  }
  if (p.device().runs_ir()) {  // nothing to compile or cache: every construct is "compiled" now
    std::vector<codegen::lowered_task> tasks;
    std::vector<std::string> names;
    for (const auto& o : offloads) {
      tasks.push_back(o.lowered);
      names.push_back(o.entry);
    }
    std::shared_ptr<backend::loaded_module> module = p.device().load_ir(tasks, names);
    for (std::size_t t = 0; t < offloads.size(); ++t) {
      auto& o = offloads[t];
      v.tasks.push_back({module->entry(o.entry), o.lowered.parallel, rng_salt(o.lowered, t), std::move(o.lowered.param_map)});
    }
    v.modules.push_back(std::move(module));
    counts.compiled = static_cast<int>(offloads.size());
    return;
  }
  // Memory, then disk.
  std::vector<std::size_t> misses;
  for (std::size_t i = 0; i < offloads.size(); ++i) {
    auto& o = offloads[i];
    if (auto m = p.find_module(o.key)) {  // the offload's own module, already loaded here
      o.module = m;
      p.memory_hits.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (p.store()) {
      if (auto bytes = p.store()->load(cache::entry_kind::offload, o.key)) {
        auto record = cache::decode_offload_record(*bytes);
        if (record && record->task.entry == o.entry && record->task.parallel == o.lowered.parallel &&
            record->task.params.size() == o.lowered.fn.params.size()) {
          if (auto m = load_cached_module(p, record->module, what)) {
            o.module = m;
            p.remember_module(o.key, m);
            ++counts.loaded;
            continue;
          }
        }
      }
    }
    misses.push_back(i);
  }
  // Identical constructs within the kernel compile once.
  std::vector<std::size_t> unique;
  for (std::size_t i : misses) {
    bool seen = false;
    for (std::size_t u : unique) seen |= offloads[u].key == offloads[i].key;
    if (!seen) unique.push_back(i);
  }
  // Group the misses into programs: one, unless there are enough to keep several
  // compiler processes busy (each program pays the compiler's fixed cost once).
  const std::size_t threads =
      p.device().compiles_concurrently() ? static_cast<std::size_t>(std::max(1, p.config().num_compile_threads)) : 1;
  const std::size_t groups = std::max<std::size_t>(1, std::min(threads, unique.size() / 4));
  std::vector<std::vector<std::size_t>> batches(groups);
  for (std::size_t j = 0; j < unique.size(); ++j) batches[j % groups].push_back(unique[j]);
  std::vector<std::string> sources(groups);
  std::vector<cache::key> module_keys(groups);
  for (std::size_t g = 0; g < groups; ++g) {
    if (batches[g].empty()) continue;
    std::string body;
    for (std::size_t i : batches[g]) body += offloads[i].body;
    sources[g] = p.device().prelude() + body;
    cache::key_builder kb = p.environment();
    module_keys[g] = kb.add("module").add(sources[g]).finish();
  }
  if (p.config().print_ir) {
    std::string all;
    for (const auto& s : sources) all += s;
    dump_debug_files(p, k, ".offloads.cpp", all);
  }
  std::vector<module_result> modules(groups);
  std::vector<std::exception_ptr> failures(groups);
  auto compile_group = [&](std::size_t g) {
    try {
      modules[g].module = load_cached_module(p, module_keys[g], what);  // another process may have built it
      if (!modules[g].module) modules[g] = compile_module(p, sources[g], module_keys[g], what);
    } catch (...) {
      failures[g] = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  for (std::size_t g = 1; g < groups; ++g)
    if (!batches[g].empty()) workers.emplace_back(compile_group, g);
  if (!batches[0].empty()) compile_group(0);
  for (auto& w : workers) w.join();
  for (auto& f : failures)
    if (f) std::rethrow_exception(f);
  for (std::size_t g = 0; g < groups; ++g)
    for (std::size_t i : batches[g]) {
      auto& o = offloads[i];
      o.module = modules[g].module;
      o.compiled = modules[g].compiled;
      if (!o.compiled) ++counts.loaded;
      p.remember_module(o.key, o.module);
      if (p.store())
        p.store()->save(cache::entry_kind::offload, o.key,
                        cache::encode(cache::offload_record{
                            module_keys[g], {o.entry, o.lowered.parallel, has_print(o.lowered.fn), identity_params(o.lowered)}}));
    }
  for (std::size_t i : misses) {
    auto& o = offloads[i];
    if (!o.module) o.module = p.find_module(o.key);  // a duplicate of a compiled one
    if (o.compiled) ++counts.compiled;
  }
  for (std::size_t t = 0; t < offloads.size(); ++t) {
    auto& o = offloads[t];
    compiled_task task;
    task.entry = o.module->entry(o.entry);
    task.parallel = o.lowered.parallel;
    task.rng_salt = rng_salt(o.lowered, t);
    task.param_map = std::move(o.lowered.param_map);
    v.tasks.push_back(std::move(task));
    v.modules.push_back(o.module);
  }
}

// ---------------------------------------------------------------------------
// Deciding the variant.

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

// The human-readable detail of a compile-time fallback; constructs count from 1.
QD_FUNC std::string fallback_detail(const kernel_state& k, const analysis::split_decision& d) {
  auto construct = [](std::int32_t c) { return c + 1; };
  switch (d.reason) {
    case fallback_reason::stale_reread:
      return fmt::format("{} re-read by construct {} after construct {} writes {}", access_text(k, d.read),
                         construct(d.construct), construct(d.other_construct),
                         param_name(k, static_cast<std::size_t>(k.ir.at(d.write).param)));
    case fallback_reason::aliasing_gradient:
      return fmt::format("{} re-read by construct {} after construct {} writes {}; a gradient buffer may alias the "
                         "other, which cannot be checked",
                         access_text(k, d.read), construct(d.construct), construct(d.other_construct),
                         access_text(k, d.write));
    case fallback_reason::carried_value:
      if (d.other_construct == d.construct)
        return fmt::format("construct {} updates a top-level qd::var across its iterations", construct(d.construct));
      return fmt::format("construct {} needs a top-level value produced or modified inside construct {}",
                         construct(d.construct), construct(d.other_construct));
    case fallback_reason::side_effect: {
      const auto& st = k.structure.statements[static_cast<std::size_t>(d.statement)];
      std::string_view what = st.has_random       ? "a random draw"
                              : st.has_volatile   ? "a volatile read"
                              : st.has_atomic     ? "an atomic"
                              : st.has_print      ? "a print"
                                                  : "a global store";
      return fmt::format("construct {} would recompute {}", construct(d.construct), what);
    }
    case fallback_reason::autodiff: return "a gradient kernel";
    default: return std::string(describe(d.reason));
  }
}

QD_FUNC bool split_enabled_by_policy(const settings& s, fallback_reason& why) {
  if (s.per_offload == per_offload_mode::off) {
    why = fallback_reason::policy_per_offload_off;
    return false;
  }
  if (!s.offline_cache) {
    why = fallback_reason::policy_offline_cache_off;
    return false;
  }
  bool gpu = s.arch == arch::cuda || s.arch == arch::amdgpu;
  if (!gpu && s.per_offload != per_offload_mode::on) {
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
  c->wide_bounds = std::any_of(k.ir.nodes.begin(), k.ir.nodes.end(), [](const ir::node& n) { return n.code == ir::op::bound; });

  per_offload_observations obs;
  fallback_reason reason = fallback_reason::none;
  analysis::split_decision decision;
  if (k.unchecked_split) {  // test-only: every construct split, whatever the analysis says
    decision.plan = analysis::plan_split_unchecked(k.structure);
  } else if (split_enabled_by_policy(cfg, reason)) {
    if (cfg.print_ir || cfg.kernel_coverage) {
      reason = fallback_reason::diagnostic;
      obs.fallback_detail = cfg.print_ir ? "print_ir (a compiler debug dump) is on" : "kernel_coverage is on";
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
  if (reason == fallback_reason::none) {
    build_split(k, p, decision.plan, c->primary, counts);
    c->split = true;
    c->pairs = decision.pairs;
    obs.frontend_constructs_total = static_cast<int>(k.structure.constructs.size());
  } else {
    build_whole(k, p, c->primary, counts);
    obs.frontend_constructs_total = -1;
  }
  obs.fallback = reason;
  obs.constructs_compiled = counts.compiled;
  obs.constructs_loaded = counts.loaded;
  k.obs = std::move(obs);
  k.compiled = c;
  k.ready.store(c.get(), std::memory_order_release);
  return c.get();
}

QD_FUNC variant& whole_variant(kernel_state& k, program& p, compiled_kernel& c) {
  if (variant* v = c.whole_ready.load(std::memory_order_acquire)) return *v;
  std::lock_guard lock(k.mutex);
  if (!c.whole) {
    auto v = std::make_unique<variant>();
    build_counts ignored;
    build_whole(k, p, *v, ignored);
    c.whole = std::move(v);
    c.whole_ready.store(c.whole.get(), std::memory_order_release);
  }
  return *c.whole;
}

QD_FUNC void compile(kernel_state& k) {
  program& p = current_program(fmt::format("kernel '{}'", k.name));
  prepare(k, p);
}

QD_FUNC per_offload_observations observations(const kernel_state& k) {
  std::lock_guard lock(const_cast<kernel_state&>(k).mutex);
  per_offload_observations o = k.obs;
  o.runtime_fallbacks = k.runtime_fallbacks.load(std::memory_order_relaxed);
  return o;
}

// ---------------------------------------------------------------------------
// Launching.

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

// Whether the buffers of the two parameters are provably disjoint address ranges.
QD_FUNC bool disjoint(const launch_arg& a, const launch_arg& b) {
  if (!a.extent_known || !b.extent_known) return false;
  auto a0 = reinterpret_cast<std::uintptr_t>(a.data), b0 = reinterpret_cast<std::uintptr_t>(b.data);
  return a.bytes == 0 || b.bytes == 0 || a0 + a.bytes <= b0 || b0 + b.bytes <= a0;
}

// Holds a variant's temporaries for one launch. Uncontended, it costs one
// compare-exchange and one exchange; a second thread launching the same kernel
// sleeps on the atomic until the first is done (on a GPU, until its launches are
// queued: the stream then runs them in order).
class temps_turn {
 public:
  explicit temps_turn(const variant& v) : state_(v.temps ? &v.temps_state : nullptr) {
    if (!state_) return;
    int expected = 0;
    if (state_->compare_exchange_strong(expected, 1, std::memory_order_acquire)) return;
    while (state_->exchange(2, std::memory_order_acquire) != 0) state_->wait(2, std::memory_order_relaxed);
  }
  temps_turn(const temps_turn&) = delete;
  temps_turn& operator=(const temps_turn&) = delete;
  ~temps_turn() {
    if (state_ && state_->exchange(0, std::memory_order_release) == 2) state_->notify_all();
  }

 private:
  std::atomic<int>* state_;
};

QD_FUNC void run_variant(const kernel_state& k, program& p, const compiled_kernel& c, const variant& v,
                         const launch_arg* args) {
  temps_turn turn(v);
  std::uint64_t launch_no = p.next_launch();
  backend::array_abi arrays[max_kernel_params];
  std::uint64_t scalars[max_kernel_params];
  std::int64_t error[5] = {0, 0, 0, 0, 0};
  for (const compiled_task& t : v.tasks) {
    const std::size_t n = t.param_map.size();
    for (std::size_t j = 0; j < n; ++j) {
      const auto kp = static_cast<std::size_t>(t.param_map[j]);
      const launch_arg& a = args[kp];
      if (k.params[kp].is_array) {
        arrays[j].data = a.data;
        arrays[j].grad = a.grad;
        for (int d = 0; d < 4; ++d) arrays[j].shape[d] = a.shape[d];
      } else {
        scalars[j] = a.scalar_bits;
      }
    }
    backend::launch_context ctx{arrays, scalars, n, static_cast<unsigned char*>(v.temps),
                                mix_stream(p.config().random_seed, launch_no, t.rng_salt), error, c.bounds_checks, c.wide_bounds};
    v.device->launch(t.entry, t.parallel, ctx);
    // The CPU and the reference backend always fill the record; a GPU brings it back
    // (a synchronization) when bounds checks are on or the kernel has wide loop bounds.
    if (error[0] == 2)
      throw user_error(fmt::format("kernel '{}': a qd::range_for bound is {}, which does not fit in qd::i32; loop "
                                   "indices are 32-bit, so that loop ran no iterations. Split the iteration space "
                                   "into loops of at most 2147483647 iterations",
                                   k.name, error[3]));
    if (error[0] != 0) {
      std::size_t param = static_cast<std::size_t>(t.param_map[static_cast<std::size_t>(error[1])]);
      throw_launch_error(k, param,
                         fmt::format("index {} is out of range for dimension {} (extent {}); out-of-range accesses "
                                     "were skipped (check_out_of_bound is on)",
                                     error[3], error[2], error[4]));
    }
  }
}

QD_FUNC void launch(kernel_state& k, const launch_arg* args, std::size_t count) {
  program* p = active_program.load(std::memory_order_acquire);
  if (p == nullptr) current_program(fmt::format("kernel '{}'", k.name));  // throws the not-initialized error
  compiled_kernel* c = k.ready.load(std::memory_order_acquire);
  if (c == nullptr || c->program_id != p->id()) {
    if (p->config().compile_only)
      throw user_error(fmt::format("kernel '{}': compile_only is set, so kernels can be compiled (kernel.compile()) "
                                   "and stored in the offline cache but not launched; unset compile_only to run them",
                                   k.name));
    c = prepare(k, *p);
  }

  for (std::size_t i = 0; i < count; ++i) {
    const ir::param_desc& d = k.params[i];
    if (!d.is_array) continue;
    if (args[i].program_id != p->id() && args[i].program_id != external_program_id)
      throw_launch_error(k, i,
                         args[i].program_id == 0
                             ? "the qd::ndarray passed was moved from"
                             : "the qd::ndarray passed was created before qd::reset() or a later qd::init(); create it "
                               "again in the running program");
    if (d.needs_grad && args[i].grad == nullptr)
      throw_launch_error(k, i, "the parameter needs a gradient buffer; construct the qd::ndarray with qd::needs_grad");
  }
  const variant* v = &c->primary;
  if (c->split) {
    for (const auto& pair : c->pairs) {
      const launch_arg& a = args[static_cast<std::size_t>(pair.a)];
      const launch_arg& b = args[static_cast<std::size_t>(pair.b)];
      if (disjoint(a, b)) continue;
      k.runtime_fallbacks.fetch_add(1, std::memory_order_relaxed);
      if (!k.fallback_warned.exchange(true))
        log_fmt(log_level::warn, "[PER_OFFLOAD][FALLBACK] kernel '{}': parameters '{}' and '{}' {}; using the "
                "whole-kernel variant",
                k.name, param_name(k, static_cast<std::size_t>(pair.a)), param_name(k, static_cast<std::size_t>(pair.b)),
                a.extent_known && b.extent_known ? "share a buffer" : "may share a buffer (an external array's extent is unknown)");
      v = &whole_variant(k, *p, *c);
      break;
    }
  }
  run_variant(k, *p, *c, *v, args);
}

}  // namespace qd::detail
