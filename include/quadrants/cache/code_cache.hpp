// Code for a kernel's tasks, as one service: keyed by cache/key_recipe.hpp, found in the
// tiers (this process's memory, the disk, a remote server) or built once by the backend
// and stored in every tier. The runtime plans and lowers; this finds or builds the code.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <semaphore>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "quadrants/backend/device.hpp"
#include "quadrants/base/api.hpp"
#include "quadrants/cache/key.hpp"
#include "quadrants/cache/records.hpp"
#include "quadrants/cache/tier_list.hpp"

namespace qd::inline v0::cache {

// One task as the lower step hands it over: its lowered IR, its entry point, how to get
// the backend's code for it (called on a miss only: a warm start generates no code), and
// the metadata a stored record must repeat.
struct task_code {
  const codegen::lowered_task* task = nullptr;
  std::string entry;
  std::function<std::string()> code;
  task_record record;
};

// Where a task's code came from, for the observations.
enum class code_origin : std::uint8_t {
  reused,  // loaded in this program already (the memory tier, or another task of the same request)
  loaded,  // read from a tier (disk, remote) and loaded now
  built,   // built now by the backend
};

struct task_module {
  std::shared_ptr<backend::loaded_module> module;
  code_origin origin = code_origin::reused;
  std::optional<key> module_key;  // the module's own key, where known (resolve_offloads: for a variant record)
};

// A split variant found whole (code_cache::find_variant): its record and each task's module.
struct variant_hit {
  variant_record record;
  std::vector<task_module> modules;  // one per task, in the record's order
};

class code_cache {
 public:
  // `backend` emits, builds and loads; `tiers` in lookup order (none: nothing is kept and
  // every request is built, as for an interpreter). At most `builds` programs are built at
  // once, whichever kernels and threads ask (qd::compile_all; first calls that overlap).
  QD_FUNC code_cache(std::shared_ptr<backend::device> backend, bool bounds_checks, tier_list tiers,
                     std::size_t builds = 1);

  // The environment every key starts from (cache::environment_key), made on first use.
  QD_FUNC const key_builder& environment();
  tier_list& tiers() { return tiers_; }
  // Builds that produced a binary (compiler runs), for qd::cache_statistics.
  std::uint64_t compiles() const { return compiles_.load(std::memory_order_relaxed); }
  // Tasks whose code was generated (a miss's; a warm start generates none).
  std::uint64_t generated() const { return generated_.load(std::memory_order_relaxed); }

  // A whole kernel under `k` (cache::kernel_key): one module holding `tasks`, whose stored
  // record must equal `expected` (a stale or foreign record is a miss).
  QD_FUNC task_module resolve_kernel(const key& k, const kernel_record& expected, std::span<const task_code> tasks,
                                     std::string_view what);

  // Offloads: `keys[i]` (cache::offload_key) for `tasks[i]`. A stored offload record must
  // repeat its task's record. Identical keys share one module; the misses are built as at
  // most `programs` programs, each on its own thread, and each program's text is shown to
  // `on_program` (print_ir) before any is built. Rethrows the first failure.
  using program_hook = std::function<void(std::size_t index, const std::string& text)>;
  QD_FUNC std::vector<task_module> resolve_offloads(std::span<const key> keys, std::span<const task_code> tasks,
                                                    std::size_t programs, std::string_view what,
                                                    const program_hook& on_program = {});

  // A split variant's record under `k` (cache::variant_key) for a plan of `tasks` tasks, with
  // every module it names found in the tiers and holding its task's entry point: a warm
  // start's one read per kernel, with no lowering, keys per offload or code. Nothing is
  // built: a missing record, or one naming a module no tier has (evicted) or that does not
  // load, is a miss (discarded), and the caller resolves the offloads one by one. Variant
  // records live in the tiers that do not prefetch (memory, disk): tier_list::get_record.
  QD_FUNC std::optional<variant_hit> find_variant(const key& k, std::size_t tasks, std::string_view what);
  // Stores a split variant's record once its offloads resolved.
  QD_FUNC void store_variant(const key& k, const variant_record& r);

 private:
  QD_FUNC opener loader(std::string_view what);
  QD_FUNC builder program_builder(std::span<const task_code* const> tasks, const std::string& text,
                                  std::string_view what);

  std::shared_ptr<backend::device> backend_;
  bool bounds_checks_;
  tier_list tiers_;
  std::once_flag environment_once_;
  std::unique_ptr<key_builder> environment_;
  // The module key of each offload this process resolved (its memory tier maps an offload
  // straight to the loaded module), so a variant record can name them all.
  std::mutex module_of_mutex_;
  std::unordered_map<key, key, key_hash> module_of_;
  std::atomic<std::uint64_t> compiles_{0};
  std::atomic<std::uint64_t> generated_{0};
  std::counting_semaphore<> build_slots_;
};

}  // namespace qd::inline v0::cache

#ifdef QD_HEADER_ONLY
#include "quadrants/cache/code_cache-inl.hpp"
#endif
