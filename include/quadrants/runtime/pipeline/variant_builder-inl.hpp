// Implementation of runtime/pipeline/variant_builder.hpp.
#pragma once

#include <algorithm>
#include <string_view>

#include "quadrants/base/error.hpp"
#include "quadrants/base/limits.hpp"
#include "quadrants/cache/code_cache.hpp"
#include "quadrants/cache/key_recipe.hpp"
#include "quadrants/codegen/cpp_emitter.hpp"
#include "quadrants/codegen/lower.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/codegen/reductions.hpp"
#include "quadrants/ir/printer.hpp"
#include "quadrants/ir/walk.hpp"
#include "quadrants/runtime/diagnostics/debug_dump.hpp"
#include "quadrants/runtime/diagnostics/dump_path.hpp"
#include "quadrants/runtime/pipeline/variant_builder.hpp"

namespace qd::inline v0::detail {

QD_FUNC bool has_op(const ir::function& fn, ir::op code) {
  bool found = false;
  ir::walk(fn, 0, [&](ir::id i, int) { found |= fn.at(i).code == code; });
  return found;
}

// A variant's schedule (analysis/graph.hpp); a graph kernel walks one even without marks
// (its tasks, in order), so that a GPU records them as a device graph.
QD_FUNC std::vector<analysis::schedule_step> schedule_of(const kernel_state& k, const analysis::task_plan& plan) {
  std::vector<analysis::schedule_step> s = analysis::build_schedule(k.ir, k.structure, plan.tasks);
  if (s.empty() && k.graph)
    for (std::size_t t = 0; t < plan.tasks.size(); ++t)
      s.push_back({.is_task = true, .task = static_cast<std::int32_t>(t)});
  return s;
}

// Random streams are numbered by construct (or, outside constructs, by the serial run's
// first statement), so every variant draws alike.
QD_FUNC std::uint64_t rng_salt(const analysis::task& t) {
  return t.construct >= 0 ? static_cast<std::uint64_t>(t.construct)
                          : 0x100000000ull + static_cast<std::uint64_t>(t.run >= 0 ? t.run : 0);
}

// What a launch needs of a lowered task besides its code, as a split variant's record keeps
// it (so that a warm start does not lower).
QD_FUNC cache::variant_task launch_facts(const codegen::lowered_task& t) {
  cache::variant_task f;
  f.draws_random = has_op(t.fn, ir::op::random);
  if (t.parallel) f.block_dim = static_cast<std::uint32_t>(std::max(0, t.fn.at(t.fn.block(0).back()).param));
  f.param_map = t.param_map;
  return f;
}

// A task ready to launch from `module`: `facts` from launch_facts (its parameter map is taken).
QD_FUNC compiled_task launchable_task(const backend::loaded_module& module, const std::string& entry, bool parallel,
                                      cache::variant_task& facts, const analysis::task& planned) {
  compiled_task c;
  c.entry = module.entry(entry);
  c.parallel = parallel;
  c.rng_salt = rng_salt(planned);
  c.construct = planned.construct;
  c.draws_random = facts.draws_random;
  if (parallel) c.block_dim = facts.block_dim;
  c.param_map = std::move(facts.param_map);
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
// the CPU and the reference backend always do, whatever the generated code says).
QD_FUNC bool deterministic_gpu_reductions(const program& p) {
  const qd::arch a = p.backend().arch;
  return p.config().deterministic_reductions && a != qd::arch::cpu && a != qd::arch::reference;
}

// Whether a lowered task is a loop with reductions into global temporaries (codegen/reductions.hpp).
QD_FUNC bool has_chunk_reductions(const codegen::lowered_task& t) {
  return t.parallel && !codegen::find_chunk_reductions(t.fn, t.fn.at(t.fn.block(0).back()).block0).empty();
}

// ---- Lower: each task of a plan as standalone IR, then as the backend's code.

struct lowered_variant {
  std::vector<codegen::lowered_task> ir;       // one per task of the plan
  std::vector<cache::task_code> code;          // the same tasks as the backend's code (pointing into `ir`)
  std::vector<cache::key> keys;                // the split's offload keys, one per task
  std::vector<codegen::emit_options> options;  // how each task's code is generated
  std::size_t reduction_scratch = 0;           // bytes after the temporaries for deterministic GPU reductions
};

// A task's launch metadata, as the cache records it and checks it on a hit.
QD_FUNC cache::task_record task_record_of(const codegen::lowered_task& t, const std::string& entry,
                                          std::vector<std::int32_t> params) {
  return {entry, t.parallel, has_op(t.fn, ir::op::print), std::move(params)};
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

// The whole kernel: one module, its entry points named by task index; records carry the
// kernel's parameter numbering.
QD_FUNC lowered_variant lower_whole(const kernel_state& k, program& p, const analysis::task_plan& plan,
                                    bool wide_offsets) {
  lowered_variant v;
  v.ir = lower_all(k, plan);
  for (std::size_t t = 0; t < v.ir.size(); ++t) {
    cache::task_code c;
    c.task = &v.ir[t];
    c.entry = fmt::format("qd_task{}", t);
    codegen::emit_options options{
        .bounds_checks = p.config().check_out_of_bound, .kernel = k.name, .wide_offsets = wide_offsets};
    // Tasks of a whole kernel may run at once (concurrent regions): each its own scratch.
    if (deterministic_gpu_reductions(p) && has_chunk_reductions(v.ir[t])) {
      options.deterministic_reductions = true;
      options.reduction_scratch_offset = v.reduction_scratch;
      v.reduction_scratch += codegen::gpu_reduction_scratch_bytes;
    }
    c.code = [&device = p.device(), task = c.task, entry = c.entry, options] {
      return device.emit(*task, entry, options);
    };
    c.record = task_record_of(v.ir[t], c.entry, v.ir[t].param_map);
    v.code.push_back(std::move(c));
    v.options.push_back(options);
  }
  return v;
}

// The split: each task keyed on its own IR and code, written with a placeholder entry
// point that is then replaced by one derived from the key (identical offloads share it).
// An offload is compiled from its own parameters, numbered in first-use order.
QD_FUNC lowered_variant lower_split(const kernel_state& k, program& p, const analysis::task_plan& plan) {
  lowered_variant v;
  v.ir = lower_all(k, plan);
  for (std::size_t t = 0; t < v.ir.size(); ++t) {
    cache::task_code c;
    c.task = &v.ir[t];
    // A split kernel's tasks run one after another: every one uses the scratch region at 0.
    const bool det = deterministic_gpu_reductions(p) && has_chunk_reductions(v.ir[t]);
    if (det) v.reduction_scratch = codegen::gpu_reduction_scratch_bytes;
    const codegen::emit_options options{
        .bounds_checks = p.config().check_out_of_bound, .kernel = k.name, .deterministic_reductions = det};
    v.keys.push_back(cache::offload_key(p.code().environment(), v.ir[t], options));
    c.entry = cache::offload_entry(v.keys.back());
    c.code = [&device = p.device(), task = c.task, entry = c.entry, options] {
      const std::string_view placeholder = cache::offload_entry_placeholder;
      std::string code = device.emit(*task, placeholder, options);
      for (std::size_t at = code.find(placeholder); at != std::string::npos; at = code.find(placeholder, at))
        code.replace(at, placeholder.size(), entry);
      return code;
    };
    std::vector<std::int32_t> identity(v.ir[t].fn.params.size());
    for (std::size_t i = 0; i < identity.size(); ++i) identity[i] = static_cast<std::int32_t>(i);
    c.record = task_record_of(v.ir[t], c.entry, std::move(identity));
    v.code.push_back(std::move(c));
    v.options.push_back(options);
  }
  return v;
}

// print_ir: each task's lowered IR and, when the backend has source to show, the code of
// each task as it stands alone (a program of one task) under <kernel>/<variant>/.
QD_FUNC void dump_tasks(const program& p, const kernel_state& k, std::string_view variant, const lowered_variant& v) {
  const std::string_view ext = p.backend().source_extension;
  for (std::size_t t = 0; t < v.ir.size(); ++t) {
    dump_debug_file(p.config(), k.name, fmt::format("{}/task_{}.ir.txt", variant, t), ir::to_text(v.ir[t].fn));
    if (!ext.empty())
      dump_debug_file(p.config(), k.name, fmt::format("{}/task_{}.{}", variant, t, ext),
                      p.device().program(std::vector<std::string>{v.code[t].code()}));
  }
}

// print_ir: a program's text, when the backend has source to show.
QD_FUNC void dump_program(const program& p, const kernel_state& k, std::string_view stem, const std::string& text) {
  const std::string_view ext = p.backend().source_extension;
  if (!ext.empty()) dump_debug_file(p.config(), k.name, fmt::format("{}.{}", stem, ext), text);
}

// ---- The variants: plan, lower, resolve.

QD_FUNC void build_whole(kernel_state& k, program& p, variant& v, build_counts& counts, bool wide_offsets) {
  // Plan.
  analysis::task_plan plan = analysis::plan_whole_kernel(k.ir, k.structure);
  if (plan.temps_needed > static_cast<std::size_t>(limits::temp_slot_count))
    throw user_error(
        fmt::format("kernel '{}': {} top-level values cross constructs; at most {} fit in the global "
                    "temporaries. Split the kernel into several kernels",
                    k.name, plan.temps_needed, limits::temp_slot_count));
  v.device = p.device_ptr();
  // Lower. The key covers the IR and what its code is made from (the lowered tasks and the
  // generator's fingerprint: cache::add_code_identity), so no code is generated on a hit.
  lowered_variant lowered = lower_whole(k, p, plan, wide_offsets);
  std::vector<const codegen::lowered_task*> tasks;
  for (const cache::task_code& c : lowered.code) tasks.push_back(c.task);
  const int constructs = static_cast<int>(k.structure.constructs.size());
  cache::kernel_record record{cache::kernel_key(p.code().environment(), k.ir, tasks, lowered.options),
                              static_cast<std::uint32_t>(constructs),
                              !plan.temps.empty(),
                              {}};
  for (const cache::task_code& c : lowered.code) record.tasks.push_back(c.record);
  const bool dump = p.config().print_ir;
  const std::string_view stem = wide_offsets ? "wide" : "whole";
  if (dump) {
    dump_tasks(p, k, stem, lowered);
    // Dumped even when the code comes from a cache: its key covers this text.
    std::vector<std::string> codes;
    for (const cache::task_code& c : lowered.code) codes.push_back(c.code());
    dump_program(p, k, fmt::format("{}/program", stem), p.device().program(codes));
  }
  // Resolve.
  cache::task_module m =
      p.code().resolve_kernel(record.module, record, lowered.code, fmt::format("kernel '{}'", k.name));
  if (m.origin == cache::code_origin::built) {
    counts.compiled = constructs;
    counts.tasks_compiled = static_cast<int>(lowered.ir.size());
  } else {
    if (m.origin == cache::code_origin::loaded) counts.loaded = constructs;
    if (dump) log_nothing_dumped(k.name);  // from memory or a cache tier: nothing was compiled
  }
  for (std::size_t t = 0; t < lowered.ir.size(); ++t) {
    cache::variant_task facts = launch_facts(lowered.ir[t]);
    v.tasks.push_back(launchable_task(*m.module, lowered.code[t].entry, lowered.ir[t].parallel, facts, plan.tasks[t]));
  }
  v.modules.push_back(std::move(m.module));
  counts.records.push_back(record.module);
  counts.tasks = static_cast<int>(lowered.ir.size());
  v.schedule = schedule_of(k, plan);
  allocate_temporaries(p, plan, v, lowered.reduction_scratch);
}

QD_FUNC void dump_split_preview(const kernel_state& k, program& p, const analysis::task_plan& plan) {
  dump_tasks(p, k, "split", lower_split(k, p, plan));
  dump_debug_file(p.config(), k.name, "split/about.txt",
                  "The per-offload (split) variant this kernel would use without print_ir or kernel_coverage.\n"
                  "It was not compiled: a diagnostic mode keeps the kernel whole (fallback 'diagnostic').\n");
}

// The plan as numbers, for the variant key: every task's kind, construct, serial run and
// statements, and the temporaries.
QD_FUNC std::vector<std::uint64_t> plan_shape(const analysis::task_plan& plan) {
  std::vector<std::uint64_t> shape;
  auto put = [&](std::int64_t v) { shape.push_back(static_cast<std::uint64_t>(v)); };
  for (const analysis::task& t : plan.tasks) {
    put(t.parallel ? 1 : 0);
    put(t.construct);
    put(t.run);
    put(static_cast<std::int64_t>(t.statements.size()));
    for (std::int32_t s : t.statements) put(s);
  }
  put(static_cast<std::int64_t>(plan.temps.size()));
  for (const analysis::temp_assignment& a : plan.temps) {
    put(a.node);
    put(a.slot);
  }
  return shape;
}

// A warm split variant from its one record (cache::code_cache::find_variant): no lowering,
// no key per offload, one read for the record and one per module not yet loaded.
QD_FUNC bool split_from_record(const kernel_state& k, program& p, const analysis::task_plan& plan,
                               const cache::key& record_key, std::string_view what, variant& v, build_counts& counts) {
  std::optional<cache::variant_hit> hit = p.code().find_variant(record_key, plan.tasks.size(), what);
  if (!hit) return false;
  for (std::size_t t = 0; t < plan.tasks.size(); ++t) {
    cache::variant_task& facts = hit->record.tasks[t];
    v.tasks.push_back(
        launchable_task(*hit->modules[t].module, facts.task.entry, facts.task.parallel, facts, plan.tasks[t]));
    if (hit->modules[t].origin == cache::code_origin::loaded) ++counts.loaded;
    v.modules.push_back(std::move(hit->modules[t].module));
    counts.records.push_back(facts.offload);
  }
  counts.tasks = static_cast<int>(plan.tasks.size());
  v.schedule = schedule_of(k, plan);
  allocate_temporaries(p, plan, v, static_cast<std::size_t>(hit->record.reduction_scratch));
  return true;
}

QD_FUNC void build_split(kernel_state& k, program& p, const analysis::task_plan& plan, variant& v,
                         build_counts& counts) {
  v.device = p.device_ptr();
  const bool dump = p.config().print_ir;
  const std::string what = fmt::format("kernel '{}'", k.name);
  // The whole variant from one record, when a process resolved it before.
  const cache::key record_key =
      cache::variant_key(p.code().environment(), k.ir, plan_shape(plan), deterministic_gpu_reductions(p));
  if (!dump && split_from_record(k, p, plan, record_key, what, v, counts)) return;
  // Lower.
  lowered_variant lowered = lower_split(k, p, plan);
  if (dump) dump_tasks(p, k, "split", lowered);
  // Resolve: the misses as compiler programs, as many as may run at once.
  std::size_t programs = p.device().traits().concurrent_compile
                             ? static_cast<std::size_t>(std::max(1, p.config().num_compile_threads))
                             : 1;
  if (compile_programs_limit > 0) programs = std::min(programs, compile_programs_limit);
  cache::code_cache::program_hook on_program;
  if (dump)
    on_program = [&](std::size_t g, const std::string& text) {
      dump_program(p, k, fmt::format("split/program_{}", g), text);
    };
  std::vector<cache::task_module> modules =
      p.code().resolve_offloads(lowered.keys, lowered.code, programs, what, on_program);
  cache::variant_record record{.tasks = {}, .reduction_scratch = lowered.reduction_scratch};
  bool recordable = !dump;
  for (std::size_t t = 0; t < lowered.ir.size(); ++t) {
    if (modules[t].origin == cache::code_origin::built) ++counts.compiled;
    if (modules[t].origin == cache::code_origin::loaded) ++counts.loaded;
    cache::variant_task facts = launch_facts(lowered.ir[t]);
    if (modules[t].module_key) {
      cache::variant_task r = facts;
      r.offload = lowered.keys[t];
      r.module = *modules[t].module_key;
      r.task = lowered.code[t].record;
      record.tasks.push_back(std::move(r));
    } else {
      recordable = false;
    }
    v.tasks.push_back(
        launchable_task(*modules[t].module, lowered.code[t].entry, lowered.ir[t].parallel, facts, plan.tasks[t]));
    v.modules.push_back(std::move(modules[t].module));
    counts.records.push_back(lowered.keys[t]);
  }
  // After the offloads and their modules: a process that finds the record finds them too.
  if (recordable && !record.tasks.empty()) p.code().store_variant(record_key, record);
  counts.tasks = static_cast<int>(lowered.ir.size());
  counts.tasks_compiled = counts.compiled;
  v.schedule = schedule_of(k, plan);
  allocate_temporaries(p, plan, v, lowered.reduction_scratch);
}

}  // namespace qd::inline v0::detail
