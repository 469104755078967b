// Implementation of cache/code_cache.hpp.
#pragma once

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>

#include "quadrants/base/error.hpp"
#include "quadrants/base/log.hpp"
#include "quadrants/cache/code_cache.hpp"
#include "quadrants/cache/key_recipe.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::cache {

QD_FUNC code_cache::code_cache(std::shared_ptr<backend::device> backend, bool bounds_checks, tier_list tiers,
                               std::size_t builds)
    : backend_(std::move(backend)),
      bounds_checks_(bounds_checks),
      tiers_(std::move(tiers)),
      build_slots_(static_cast<std::ptrdiff_t>(std::max<std::size_t>(1, builds))) {}

QD_FUNC const key_builder& code_cache::environment() {
  std::call_once(environment_once_,
                 [&] { environment_ = std::make_unique<key_builder>(environment_key(*backend_, bounds_checks_)); });
  return *environment_;
}

// A module's payload is its binary; one that does not load (another library version's
// object?) is a miss, and the tier list discards it before the build.
QD_FUNC opener code_cache::loader(std::string_view what) {
  return [this, what](std::span<const std::byte> binary) -> std::shared_ptr<backend::loaded_module> {
    try {
      return backend_->load(binary, what);
    } catch (const error& e) {
      qd::detail::log_fmt(log_level::warn, "{}: a cached module did not load ({}); recompiling", what, e.what());
      return nullptr;
    }
  };
}

QD_FUNC builder code_cache::program_builder(std::span<const task_code* const> tasks, const std::string& text,
                                            std::string_view what) {
  return [this, tasks, &text, what]() -> built_entry {
    std::vector<const codegen::lowered_task*> lowered;
    std::vector<std::string> entries;
    for (const task_code* t : tasks) {
      lowered.push_back(t->task);
      entries.push_back(t->entry);
    }
    build_slots_.acquire();
    struct release_slot {
      std::counting_semaphore<>& slots;
      ~release_slot() { slots.release(); }
    } slot{build_slots_};
    auto t0 = std::chrono::steady_clock::now();
    backend::built_program b = backend_->build({lowered, entries, text}, what);
    if (!b.binary.empty()) {
      compiles_.fetch_add(1, std::memory_order_relaxed);
      qd::detail::log_fmt(log_level::debug, "{}: compiled in {:.1f} ms", what,
                          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return {std::move(b.binary), std::move(b.module)};
  };
}

QD_FUNC task_module code_cache::resolve_kernel(const key& k, const kernel_record& expected,
                                               std::span<const task_code> tasks, std::string_view what) {
  // The record and the module share the key; one round trip brings both.
  tiers_.prefetch(entry_kind::kernel, {&k, 1});
  const opener load = loader(what);
  resolved r = tiers_.get(entry_kind::kernel, k, [&](std::span<const std::byte> payload) {
    std::optional<kernel_record> stored = decode_kernel_record(payload);
    if (!stored || *stored != expected) return std::shared_ptr<backend::loaded_module>();
    return tiers_.get(entry_kind::module, k, load).module;
  });
  if (r) return {r.module, r.loaded ? code_origin::loaded : code_origin::reused};
  std::vector<const task_code*> all;
  std::vector<std::string> codes;
  for (const task_code& t : tasks) {
    all.push_back(&t);
    codes.push_back(t.code());
    generated_.fetch_add(1, std::memory_order_relaxed);
  }
  const std::string text = backend_->program(codes);
  // The record missed, and its module shares its key: straight to the build lock.
  resolved m = tiers_.build_once(entry_kind::module, k, load, program_builder(all, text, what));
  tiers_.put(entry_kind::kernel, k, encode(expected), m.module);
  return {m.module, m.built ? code_origin::built : code_origin::loaded};
}

QD_FUNC std::vector<task_module> code_cache::resolve_offloads(std::span<const key> keys,
                                                              std::span<const task_code> tasks, std::size_t programs,
                                                              std::string_view what, const program_hook& on_program) {
  if (keys.size() != tasks.size()) throw internal_error("resolve_offloads: one key per task");
  std::vector<task_module> out(keys.size());
  // The records and modules no tier above the remote one holds, in one round trip.
  tiers_.prefetch(entry_kind::offload, keys);
  const opener load = loader(what);
  std::vector<std::size_t> misses;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::optional<key> module;
    resolved r = tiers_.get(entry_kind::offload, keys[i], [&](std::span<const std::byte> payload) {
      std::optional<offload_record> stored = decode_offload_record(payload);
      if (!stored || stored->task != tasks[i].record) return std::shared_ptr<backend::loaded_module>();
      module = stored->module;
      return tiers_.get(entry_kind::module, stored->module, load).module;
    });
    if (r && module) {
      std::lock_guard lock(module_of_mutex_);
      module_of_[keys[i]] = *module;
    }
    if (r)
      out[i] = {r.module, r.loaded ? code_origin::loaded : code_origin::reused};
    else
      misses.push_back(i);
  }
  // Identical offloads are built once.
  std::vector<std::size_t> unique;
  for (std::size_t i : misses)
    if (std::none_of(unique.begin(), unique.end(), [&](std::size_t u) { return keys[u] == keys[i]; }))
      unique.push_back(i);
  // The misses as programs: one, unless there are enough to keep several compilers busy
  // (each program pays the compiler's fixed cost once).
  const std::size_t groups = unique.empty() ? 0 : std::max<std::size_t>(1, std::min(programs, unique.size() / 4));
  std::vector<std::vector<const task_code*>> batches(groups);
  std::vector<std::vector<std::size_t>> members(groups);
  for (std::size_t j = 0; j < unique.size(); ++j) {
    batches[j % groups].push_back(&tasks[unique[j]]);
    members[j % groups].push_back(unique[j]);
  }
  std::vector<std::string> texts(groups);
  std::vector<key> module_keys(groups);
  for (std::size_t g = 0; g < groups; ++g) {
    std::vector<std::string> codes;
    for (const task_code* t : batches[g]) codes.push_back(t->code());
    generated_.fetch_add(1, std::memory_order_relaxed);
    texts[g] = backend_->program(codes);
    module_keys[g] = module_key(environment(), texts[g]);
    if (on_program) on_program(g, texts[g]);
  }
  std::vector<resolved> modules(groups);
  std::vector<std::exception_ptr> failures(groups);
  auto one = [&](std::size_t g) {
    try {
      modules[g] =
          tiers_.resolve(entry_kind::module, module_keys[g], load, program_builder(batches[g], texts[g], what));
    } catch (...) {
      failures[g] = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  for (std::size_t g = 1; g < groups; ++g) workers.emplace_back(one, g);
  if (groups > 0) one(0);
  for (auto& w : workers) w.join();
  for (auto& f : failures)
    if (f) std::rethrow_exception(f);
  // The module first, then the records that name it: a process waiting for them finds both.
  for (std::size_t g = 0; g < groups; ++g)
    for (std::size_t i : members[g]) {
      out[i] = {modules[g].module, modules[g].built ? code_origin::built : code_origin::loaded};
      tiers_.put(entry_kind::offload, keys[i], encode(offload_record{module_keys[g], tasks[i].record}), out[i].module);
      std::lock_guard lock(module_of_mutex_);
      module_of_[keys[i]] = module_keys[g];
    }
  for (std::size_t i : misses)
    if (!out[i].module)  // a duplicate of one built above
      for (std::size_t u : unique)
        if (keys[u] == keys[i]) out[i] = {out[u].module, code_origin::reused};
  std::lock_guard lock(module_of_mutex_);
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (auto it = module_of_.find(keys[i]); it != module_of_.end()) out[i].module_key = it->second;
  return out;
}

QD_FUNC std::optional<variant_hit> code_cache::find_variant(const key& k, std::size_t tasks, std::string_view what) {
  const opener load = loader(what);
  variant_hit hit;
  const std::optional<std::size_t> found =
      tiers_.get_record(entry_kind::variant, k, [&](std::span<const std::byte> payload) {
        std::optional<variant_record> r = decode_variant_record(payload);
        if (!r || r->tasks.size() != tasks) return false;
        // The modules it names, in one round trip where a tier prefetches (remote).
        std::vector<key> modules;
        for (const variant_task& vt : r->tasks)
          if (std::find(modules.begin(), modules.end(), vt.module) == modules.end()) modules.push_back(vt.module);
        tiers_.prefetch(entry_kind::module, modules);
        hit.modules.assign(tasks, {});
        for (std::size_t t = 0; t < tasks; ++t) {
          const variant_task& vt = r->tasks[t];
          // The entry point derives from the offload key; a record saying otherwise is not ours.
          if (vt.task.entry != offload_entry(vt.offload)) return false;
          resolved m = tiers_.get(entry_kind::module, vt.module, load);
          if (!m) return false;
          try {
            (void)m.module->entry(vt.task.entry);  // throws when absent (compile_only modules have none to look up)
          } catch (const error&) {
            return false;
          }
          // As an offload's own lookup would count it: reused when this program resolved that
          // offload already, else loaded (its record was read now).
          std::lock_guard lock(module_of_mutex_);
          const bool known = !module_of_.emplace(vt.offload, vt.module).second;
          hit.modules[t] = {std::move(m.module), known ? code_origin::reused : code_origin::loaded, vt.module};
        }
        hit.record = std::move(*r);
        return true;
      });
  if (!found) return std::nullopt;
  // Found below the top (a tier listed after the disk, with a cold disk): the offload
  // records it stands for go up with it, so an edit resolved offload by offload later
  // finds them there too.
  bool payload_tier_above = false;
  for (std::size_t i = 0; i < *found; ++i) payload_tier_above |= !tiers_[i].keeps_modules();
  if (payload_tier_above)
    for (const variant_task& vt : hit.record.tasks)
      tiers_.put_above(*found, entry_kind::offload, vt.offload, encode(offload_record{vt.module, vt.task}));
  return hit;
}

QD_FUNC void code_cache::store_variant(const key& k, const variant_record& r) {
  tiers_.put_record(entry_kind::variant, k, encode(r));
}

}  // namespace qd::inline v0::cache
