// Implementation of runtime/variant_builder.hpp.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "quadrants/base/error.hpp"
#include "quadrants/base/limits.hpp"
#include "quadrants/base/log.hpp"
#include "quadrants/cache/records.hpp"
#include "quadrants/cache/store.hpp"
#include "quadrants/codegen/cpp_emitter.hpp"
#include "quadrants/codegen/lower.hpp"
#include "quadrants/codegen/reductions.hpp"
#include "quadrants/detail/format.hpp"
#include "quadrants/ir/printer.hpp"
#include "quadrants/ir/serialize.hpp"
#include "quadrants/ir/walk.hpp"
#include "quadrants/runtime/code_lookup.hpp"
#include "quadrants/runtime/debug_dump.hpp"
#include "quadrants/runtime/dump_path.hpp"
#include "quadrants/runtime/variant_builder.hpp"

namespace qd::detail {

// print_ir: each task's lowered IR and, when `sources` is given, the source of each task
// as it stands alone (the prelude and its body) under <kernel>/<variant>/.
QD_FUNC void dump_tasks(const program& p, const kernel_state& k, std::string_view variant,
                        const std::vector<codegen::lowered_task>& lowered, const std::vector<std::string>* bodies) {
  const std::string_view ext = source_extension(p.device().name());
  for (std::size_t t = 0; t < lowered.size(); ++t) {
    dump_debug_file(p.config(), k.name, fmt::format("{}/task_{}.ir.txt", variant, t), ir::to_text(lowered[t].fn));
    if (bodies)
      dump_debug_file(p.config(), k.name, fmt::format("{}/task_{}.{}", variant, t, ext),
                      p.device().prelude() + (*bodies)[t]);
  }
}

QD_FUNC bool has_op(const ir::function& fn, ir::op code) {
  bool found = false;
  ir::walk(fn, 0, [&](ir::id i, int) { found |= fn.at(i).code == code; });
  return found;
}
QD_FUNC bool has_print(const ir::function& fn) { return has_op(fn, ir::op::print); }

// A variant's schedule (analysis/graph.hpp); a graph kernel walks one even without marks
// (its tasks, in order), so that a GPU records them as a device graph.
QD_FUNC std::vector<analysis::schedule_step> schedule_of(const kernel_state& k, const analysis::task_plan& plan) {
  std::vector<analysis::schedule_step> s = analysis::build_schedule(k.ir, k.structure, plan.tasks);
  if (s.empty() && k.graph)
    for (std::size_t t = 0; t < plan.tasks.size(); ++t) s.push_back({.is_task = true, .task = static_cast<std::int32_t>(t)});
  return s;
}

// Random streams are numbered by construct (or, outside constructs, by the serial run's
// first statement), so every variant draws alike.
QD_FUNC std::uint64_t rng_salt(const analysis::task& t) {
  return t.construct >= 0 ? static_cast<std::uint64_t>(t.construct)
                          : 0x100000000ull + static_cast<std::uint64_t>(t.run >= 0 ? t.run : 0);
}

// An offload is compiled from its own parameters, numbered in first-use order.
QD_FUNC std::vector<std::int32_t> identity_params(const codegen::lowered_task& t) {
  std::vector<std::int32_t> p(t.fn.params.size());
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<std::int32_t>(i);
  return p;
}

// A task's launch metadata, as the cache records it and checks it on a hit.
QD_FUNC cache::task_record task_record_of(const codegen::lowered_task& t, const std::string& entry,
                                          std::vector<std::int32_t> params) {
  return {entry, t.parallel, has_print(t.fn), std::move(params)};
}

// A task ready to launch from `module`; takes the task's parameter map.
QD_FUNC compiled_task launchable_task(const backend::loaded_module& module, const std::string& entry,
                                      codegen::lowered_task& t, const analysis::task& planned) {
  compiled_task c;
  c.entry = module.entry(entry);
  c.parallel = t.parallel;
  c.rng_salt = rng_salt(planned);
  c.construct = planned.construct;
  c.draws_random = has_op(t.fn, ir::op::random);
  if (t.parallel) c.block_dim = static_cast<unsigned>(std::max(0, t.fn.at(t.fn.block(0).back()).param));
  c.param_map = std::move(t.param_map);
  return c;
}

// The global temporaries of the whole variant, or the split's persisted buffer: one per
// variant, held by a launch for its duration (launch-inl.hpp, temps_turn). Under
// compile_only nothing runs (and a GPU backend has no device memory).
// `scratch`: bytes after the slots for deterministic GPU reductions, zeroed (their tickets).
QD_FUNC void allocate_temporaries(program& p, const analysis::task_plan& plan, variant& v, std::size_t scratch) {
  if ((plan.temps.empty() && scratch == 0) || p.config().compile_only) return;
  const std::size_t slots = static_cast<std::size_t>(limits::temp_slot_count) * limits::temp_slot_bytes;
  v.temps = p.device().allocate(slots + scratch);
  if (scratch > 0) {
    const std::vector<unsigned char> zeros(scratch, 0);
    p.device().copy_from_host(static_cast<unsigned char*>(v.temps) + slots, zeros.data(), scratch);
  }
}

// Whether a GPU combines this program's reductions in a fixed order (deterministic_reductions;
// the CPU always does, whatever the generated code says).
QD_FUNC bool deterministic_gpu_reductions(const program& p) {
  return p.config().deterministic_reductions && p.device().name() != "cpu";
}

// Whether a lowered task is a loop with reductions into global temporaries (codegen/reductions.hpp).
QD_FUNC bool has_chunk_reductions(const codegen::lowered_task& t) {
  return t.parallel && !codegen::find_chunk_reductions(t.fn, t.fn.at(t.fn.block(0).back()).block0).empty();
}

QD_FUNC std::vector<codegen::lowered_task> lower_all(const kernel_state& k, const analysis::task_plan& plan) {
  std::vector<codegen::lowered_task> lowered;
  lowered.reserve(plan.tasks.size());
  for (const auto& t : plan.tasks) {
    lowered.push_back(codegen::lower_task(k.ir, k.structure, t, plan));
    if constexpr (checked_build) codegen::verify(lowered.back());
  }
  return lowered;
}

QD_FUNC void build_whole(kernel_state& k, program& p, variant& v, build_counts& counts) {
  analysis::task_plan plan = analysis::plan_whole_kernel(k.ir, k.structure);
  if (plan.temps_needed > static_cast<std::size_t>(limits::temp_slot_count))
    throw user_error(fmt::format("kernel '{}': {} top-level values cross constructs; at most {} fit in the global "
                                 "temporaries. Split the kernel into several kernels",
                                 k.name, plan.temps_needed, limits::temp_slot_count));
  v.device = p.device_ptr();
  std::vector<codegen::lowered_task> lowered = lower_all(k, plan);
  std::vector<std::string> entries;  // one module per whole kernel: local names
  std::vector<std::string> bodies;
  std::string body;
  // Tasks of a whole kernel may run at once (concurrent regions): each reducing one its own scratch.
  std::size_t scratch = 0;
  for (std::size_t t = 0; t < lowered.size(); ++t) {
    entries.push_back(fmt::format("qd_task{}", t));
    codegen::emit_options options{.bounds_checks = p.config().check_out_of_bound};
    if (deterministic_gpu_reductions(p) && has_chunk_reductions(lowered[t])) {
      options.deterministic_reductions = true;
      options.reduction_scratch_offset = scratch;
      scratch += codegen::gpu_reduction_scratch_bytes;
    }
    bodies.push_back(codegen::emit_task(lowered[t], entries.back(), options));
    body += bodies.back();
  }
  const bool dump = p.config().print_ir;
  if (dump) dump_tasks(p, k, "whole", lowered, p.device().traits().runs_ir ? nullptr : &bodies);
  const int constructs = static_cast<int>(k.structure.constructs.size());
  const std::string what = fmt::format("kernel '{}'", k.name);
  cache::kernel_record record{{}, static_cast<std::uint32_t>(constructs), !plan.temps.empty(), {}};
  for (std::size_t t = 0; t < lowered.size(); ++t)
    record.tasks.push_back(task_record_of(lowered[t], entries[t], lowered[t].param_map));

  std::shared_ptr<backend::loaded_module> module;
  if (p.device().traits().runs_ir) {  // nothing to compile or cache
    module = p.device().load_ir(lowered, entries);
    counts.compiled = constructs;
    counts.tasks_compiled = static_cast<int>(lowered.size());
  } else {
    // The key covers the IR and the source generated from it, so a change in the
    // code generator is a different key, never stale native code.
    cache::key_builder kb = p.environment();
    record.module = kb.add("kernel").add(ir::canonical_bytes(k.ir)).add(body).finish();
    // The program is dumped even when it comes from a cache: its key covers this text.
    if (dump)
      dump_debug_file(p.config(), k.name, fmt::format("whole/program.{}", source_extension(p.device().name())),
                      p.device().prelude() + body);
    if ((module = p.find_module(record.module))) {  // this process holds it (another kernel object's)
      p.memory_hits.fetch_add(1, std::memory_order_relaxed);
    } else if (p.store()) {
      // [remote tier, issue 17] one round trip for the record and its module.
      if (p.store()->remote_tier()) p.store()->prefetch(cache::entry_kind::kernel, {&record.module, 1});
      if (auto bytes = p.store()->load(cache::entry_kind::kernel, record.module)) {
        // The stored record must describe exactly the tasks this IR lowers to.
        auto stored = cache::decode_kernel_record(*bytes);
        if (stored && stored->module == record.module && stored->tasks == record.tasks &&
            stored->constructs == record.constructs && stored->needs_temporaries == record.needs_temporaries)
          module = load_cached_module(p, record.module, what);
        if (module) counts.loaded = constructs;
      }
    }
    if (!module) {
      std::string source = p.device().prelude() + body;
      module_result built = compile_module(p, source, record.module, what);
      module = built.module;
      if (p.store()) p.store()->save(cache::entry_kind::kernel, record.module, cache::encode(record));
      (built.compiled ? counts.compiled : counts.loaded) = constructs;
      if (built.compiled) counts.tasks_compiled = static_cast<int>(lowered.size());
    } else if (dump) {
      log_nothing_dumped(k.name);  // from memory or the disk: nothing was compiled
    }
  }
  for (std::size_t t = 0; t < lowered.size(); ++t) v.tasks.push_back(launchable_task(*module, entries[t], lowered[t], plan.tasks[t]));
  v.modules.push_back(std::move(module));
  if (!p.device().traits().runs_ir) counts.records.push_back(record.module);
  counts.tasks = static_cast<int>(lowered.size());
  v.schedule = schedule_of(k, plan);
  allocate_temporaries(p, plan, v, scratch);
}

QD_FUNC offload_code offload_code_of(program& p, const codegen::lowered_task& t) {
  // Keyed on the IR and on the generated source, written with a placeholder
  // entry name that is then replaced by one derived from the key.
  constexpr std::string_view placeholder = "QD_OFFLOAD_ENTRY";
  offload_code o;
  // A split kernel's tasks run one after another: every one uses the scratch region at 0.
  o.body = codegen::emit_task(t, placeholder, {.bounds_checks = p.config().check_out_of_bound,
                                               .deterministic_reductions = deterministic_gpu_reductions(p) &&
                                                                           has_chunk_reductions(t)});
  cache::key_builder kb = p.environment();
  o.key = kb.add("offload").add(ir::canonical_bytes(t.fn)).add(o.body).finish();
  o.entry = "qd_o" + o.key.hex();
  for (std::size_t at = o.body.find(placeholder); at != std::string::npos; at = o.body.find(placeholder, at))
    o.body.replace(at, placeholder.size(), o.entry);
  return o;
}

QD_FUNC void dump_split_preview(const kernel_state& k, program& p, const analysis::task_plan& plan) {
  std::vector<codegen::lowered_task> lowered = lower_all(k, plan);
  std::vector<std::string> bodies;
  if (!p.device().traits().runs_ir)
    for (const auto& t : lowered) bodies.push_back(offload_code_of(p, t).body);
  dump_tasks(p, k, "split", lowered, p.device().traits().runs_ir ? nullptr : &bodies);
  dump_debug_file(p.config(), k.name, "split/about.txt",
                  "The per-offload (split) variant this kernel would use without print_ir or kernel_coverage.\n"
                  "It was not compiled: a diagnostic mode keeps the kernel whole (fallback 'diagnostic').\n");
}

QD_FUNC void build_split(kernel_state& k, program& p, const analysis::task_plan& plan, variant& v,
                         build_counts& counts) {
  v.device = p.device_ptr();
  const std::string what = fmt::format("kernel '{}'", k.name);
  std::vector<codegen::lowered_task> lowered = lower_all(k, plan);
  struct offload {
    cache::key key;
    std::string entry;
    std::string body;
    std::shared_ptr<backend::loaded_module> module;
    bool compiled = false;
  };
  std::vector<offload> offloads(lowered.size());
  std::vector<std::string> entries(lowered.size());
  for (std::size_t t = 0; t < lowered.size(); ++t) {
    offload& o = offloads[t];
    offload_code code = offload_code_of(p, lowered[t]);
    o.key = code.key;
    o.entry = std::move(code.entry);
    o.body = std::move(code.body);
    entries[t] = o.entry;
  }
  const bool dump = p.config().print_ir;
  if (dump) {
    std::vector<std::string> bodies;
    for (const offload& o : offloads) bodies.push_back(o.body);
    dump_tasks(p, k, "split", lowered, p.device().traits().runs_ir ? nullptr : &bodies);
  }
  if (p.device().traits().runs_ir) {  // nothing to compile or cache: every construct is "compiled" now
    std::shared_ptr<backend::loaded_module> module = p.device().load_ir(lowered, entries);
    for (std::size_t t = 0; t < lowered.size(); ++t) v.tasks.push_back(launchable_task(*module, entries[t], lowered[t], plan.tasks[t]));
    v.modules.push_back(std::move(module));
    counts.compiled = static_cast<int>(lowered.size());
    counts.tasks = counts.tasks_compiled = counts.compiled;
    v.schedule = schedule_of(k, plan);
    allocate_temporaries(p, plan, v, 0);
    return;
  }
  // [remote tier, issue 17] the records and modules this process lacks, in one round trip
  // (a fully warm disk costs one access() per key and no round trip).
  if (p.store() && p.store()->remote_tier()) {
    std::vector<cache::key> wanted;
    for (const offload& o : offloads)
      if (!p.find_module(o.key)) wanted.push_back(o.key);
    p.store()->prefetch(cache::entry_kind::offload, wanted);
  }
  // Memory, then disk.
  std::vector<std::size_t> misses;
  for (std::size_t i = 0; i < offloads.size(); ++i) {
    offload& o = offloads[i];
    if (auto m = p.find_module(o.key)) {  // the offload's own module, already loaded here
      o.module = m;
      p.memory_hits.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (p.store()) {
      if (auto bytes = p.store()->load(cache::entry_kind::offload, o.key)) {
        auto record = cache::decode_offload_record(*bytes);
        if (record && record->task == task_record_of(lowered[i], o.entry, identity_params(lowered[i]))) {
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
  const std::size_t threads = p.device().traits().concurrent_compile
                                  ? static_cast<std::size_t>(std::max(1, p.config().num_compile_threads))
                                  : 1;
  const std::size_t groups = unique.empty() ? 0 : std::max<std::size_t>(1, std::min(threads, unique.size() / 4));
  std::vector<std::vector<std::size_t>> batches(groups);
  for (std::size_t j = 0; j < unique.size(); ++j) batches[j % groups].push_back(unique[j]);
  std::vector<std::string> sources(groups);
  std::vector<cache::key> module_keys(groups);
  for (std::size_t g = 0; g < groups; ++g) {
    std::string body;
    for (std::size_t i : batches[g]) body += offloads[i].body;
    sources[g] = p.device().prelude() + body;
    cache::key_builder kb = p.environment();
    module_keys[g] = kb.add("module").add(sources[g]).finish();
  }
  if (dump)
    for (std::size_t g = 0; g < groups; ++g)
      dump_debug_file(p.config(), k.name, fmt::format("split/program_{}.{}", g, source_extension(p.device().name())),
                      sources[g]);
  std::vector<module_result> modules = compile_modules(p, sources, module_keys, what);
  for (std::size_t g = 0; g < groups; ++g)
    for (std::size_t i : batches[g]) {
      offload& o = offloads[i];
      o.module = modules[g].module;
      o.compiled = modules[g].compiled;
      if (!o.compiled) ++counts.loaded;
      p.remember_module(o.key, o.module);
      if (p.store())
        p.store()->save(cache::entry_kind::offload, o.key,
                        cache::encode(cache::offload_record{
                            module_keys[g], task_record_of(lowered[i], o.entry, identity_params(lowered[i]))}));
    }
  for (std::size_t i : misses) {
    offload& o = offloads[i];
    if (!o.module) o.module = p.find_module(o.key);  // a duplicate of a compiled one
    if (o.compiled) ++counts.compiled;
  }
  for (std::size_t t = 0; t < offloads.size(); ++t) {
    v.tasks.push_back(launchable_task(*offloads[t].module, offloads[t].entry, lowered[t], plan.tasks[t]));
    v.modules.push_back(offloads[t].module);
    counts.records.push_back(offloads[t].key);
  }
  counts.tasks = static_cast<int>(lowered.size());
  counts.tasks_compiled = counts.compiled;
  v.schedule = schedule_of(k, plan);
  bool reduces = false;
  for (const auto& t : lowered) reduces = reduces || has_chunk_reductions(t);
  allocate_temporaries(p, plan, v, deterministic_gpu_reductions(p) && reduces ? codegen::gpu_reduction_scratch_bytes : 0);
}

}  // namespace qd::detail
