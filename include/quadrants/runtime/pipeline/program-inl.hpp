// Implementation of runtime/pipeline/program.hpp, qd::init and qd::reset.
#pragma once

#include <chrono>
#include <thread>
#include <vector>

#include "quadrants/backend/registry.hpp"
#include "quadrants/cache/code_cache.hpp"
#include "quadrants/cache/disk_tier.hpp"
#include "quadrants/cache/memory_tier.hpp"
#include "quadrants/cache/remote_tier.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/lang/trace.hpp"
#include "quadrants/runtime/diagnostics/coverage.hpp"
#include "quadrants/runtime/pipeline/program.hpp"

namespace qd::inline v0 {
namespace detail {

QD_FUNC std::unique_ptr<program>& program_slot() {
  static std::unique_ptr<program> slot;
  return slot;
}

QD_FUNC std::mutex& init_mutex() {
  static std::mutex m;
  return m;
}

// The backend-specific settings, by their qd::config name: each backend reads its own
// (backend/<name>/description.hpp).
QD_FUNC std::vector<std::pair<std::string, std::string>> backend_options(const settings& s) {
  return {{"cuda_arch", s.cuda_arch ? std::to_string(s.cuda_arch) : std::string()}, {"amdgpu_arch", s.amdgpu_arch}};
}

// The backend and device for the requested arch, or the CPU's with one warning when that
// arch is unavailable and fallback is enabled. Settings the device decides (bounds checks
// of a backend that always checks) are written back.
QD_FUNC std::shared_ptr<backend::device> make_device(settings& s, const backend::description*& chosen) {
  backend::device_request r;
  r.compile_only = s.compile_only;
  r.opt_level = s.opt_level;
  r.fast_math = s.fast_math;
  r.threads = static_cast<unsigned>(s.cpu_max_num_threads);
  r.compile_timeout_seconds = s.compile_timeout;
  r.options = backend_options(s);
  std::shared_ptr<backend::device> d;
  std::string why;
  chosen = backend::find_backend(s.arch);
  try {
    if (chosen) d = chosen->make(r);
    if (!d)
      why = fmt::format("the {} backend is not available in this build of Quadrants (not supported on this platform)",
                        name(s.arch));
  } catch (const driver_error& e) {  // a library, a symbol or the GPU is missing
    why = e.what();
  }
  if (!d) {
    if (!s.enable_fallback || s.arch == arch::cpu)
      throw user_error(
          fmt::format("qd::init(arch = {}): {}. Use arch = cpu, or set enable_fallback = true to fall "
                      "back to the CPU",
                      name(s.arch), why));
    log_fmt(log_level::warn, "qd::init(arch = {}): {}; falling back to arch = cpu", name(s.arch), why);
    s.arch = arch::cpu;
    chosen = backend::find_backend(arch::cpu);
    if (!chosen) throw internal_error("this build of Quadrants has no CPU backend");
    d = chosen->make(r);
  }
  if (d->traits().always_checks_bounds) s.check_out_of_bound = true;  // errors then name the parameter
  return d;
}

QD_FUNC std::unique_ptr<cache::tier> memory_tier_for(const settings&) { return cache::make_memory_tier(); }

QD_FUNC std::unique_ptr<cache::tier> disk_tier_for(const settings& s) {
  if (!s.offline_cache) return nullptr;
  return cache::make_disk_tier(std::make_shared<cache::store>(
      cache::store_options{.root = s.offline_cache_file_path, .max_size = s.offline_cache_max_size}));
}

// Behind the disk (docs/cache.md); it connects at its first use.
QD_FUNC std::unique_ptr<cache::tier> remote_tier_for(const settings& s) {
  if (s.remote_cache.empty()) return nullptr;
  if (!s.offline_cache) {
    log_fmt(log_level::warn, "remote_cache is ignored: offline_cache = false turns every cache tier off");
    return nullptr;
  }
  return cache::make_remote_tier(std::make_shared<cache::remote>(remote_options_for(s)));
}

// The cache tiers in lookup order, each made from the settings or left off (null): a new
// tier is one more line (docs/architecture.md, "Adding a cache tier").
using tier_maker = std::unique_ptr<cache::tier> (*)(const settings&);
inline constexpr tier_maker cache_tiers[] = {
    &memory_tier_for,
    &disk_tier_for,
    &remote_tier_for,
};

QD_FUNC std::function<std::unique_ptr<cache::tier>()>& extra_tier_maker() {
  static std::function<std::unique_ptr<cache::tier>()> make;
  return make;
}

QD_FUNC void set_extra_cache_tier(std::function<std::unique_ptr<cache::tier>()> make) {
  std::lock_guard lock(init_mutex());
  extra_tier_maker() = std::move(make);
}

// None for a backend whose code is not worth caching.
QD_FUNC cache::tier_list make_tiers(const settings& s, const backend::description& b) {
  cache::tier_list tiers;
  if (!b.caches_code) return tiers;
  for (tier_maker make : cache_tiers)
    if (std::unique_ptr<cache::tier> t = make(s)) tiers.add(std::move(t));
  if (extra_tier_maker() && s.offline_cache) tiers.add(extra_tier_maker()());
  return tiers;
}

QD_FUNC program::program(settings s, std::uint64_t id) : settings_(std::move(s)), id_(id) {
  device_ = make_device(settings_, backend_);
  // As many builds at once as compile threads, where the backend's compiler may run on several.
  const std::size_t builds =
      device_->traits().concurrent_compile ? static_cast<std::size_t>(std::max(1, settings_.num_compile_threads)) : 1;
  code_ = std::make_unique<cache::code_cache>(device_, settings_.check_out_of_bound, make_tiers(settings_, *backend_),
                                              builds);
}

QD_FUNC program::~program() = default;

[[noreturn]] QD_FUNC void throw_not_initialized(std::string_view what) {
  throw user_error(
      fmt::format("{}: Quadrants is not initialized; call qd::init() first (qd::reset() ends a "
                  "program, and a new qd::init() starts another)",
                  what));
}

QD_FUNC program& current_program(std::string_view what) {
  program* p = active_program.load(std::memory_order_acquire);
  if (p == nullptr) throw_not_initialized(what);
  return *p;
}

// Per-thread slots naming the program a thread uses. Slots live for the process
// (a thread that exits returns its slot for reuse), so a reset may read any of them.
struct use_slot {
  alignas(64) std::atomic<program*> in_use{nullptr};
  use_slot* next_free = nullptr;
};

struct use_slots {
  std::mutex mutex;
  std::vector<use_slot*> all;
  use_slot* free = nullptr;
};

QD_FUNC use_slots& slots() {
  static use_slots* s = new use_slots;  // never destroyed: threads may outlive static destruction
  return *s;
}

class thread_slot {
 public:
  thread_slot() {
    use_slots& s = slots();
    std::lock_guard lock(s.mutex);
    if (s.free) {
      slot_ = s.free;
      s.free = slot_->next_free;
    } else {
      slot_ = new use_slot;
      s.all.push_back(slot_);
    }
  }
  ~thread_slot() {
    use_slots& s = slots();
    std::lock_guard lock(s.mutex);
    slot_->in_use.store(nullptr, std::memory_order_release);
    slot_->next_free = s.free;
    s.free = slot_;
  }
  thread_slot(const thread_slot&) = delete;
  thread_slot& operator=(const thread_slot&) = delete;
  use_slot& get() { return *slot_; }

 private:
  use_slot* slot_;
};

QD_FUNC use_slot& this_thread_slot() {
  thread_local thread_slot slot;
  return slot.get();
}

QD_FUNC program_use::program_use(std::nothrow_t) noexcept {
  use_slot& slot = this_thread_slot();
  previous_ = slot.in_use.load(std::memory_order_relaxed);
  // Announce, then confirm: a reset stores null and then reads every slot (both
  // sequentially consistent), so either it sees this use or this sees its null.
  for (;;) {
    program* p = active_program.load(std::memory_order_seq_cst);
    if (p == nullptr) return;
    slot.in_use.store(p, std::memory_order_seq_cst);
    if (active_program.load(std::memory_order_seq_cst) == p) {
      p_ = p;
      return;
    }
    slot.in_use.store(previous_, std::memory_order_seq_cst);
  }
}

QD_FUNC program_use::program_use(std::string_view what) : program_use(std::nothrow) {
  if (p_ == nullptr) throw_not_initialized(what);
}

QD_FUNC program_use::~program_use() {
  if (p_ != nullptr) this_thread_slot().in_use.store(previous_, std::memory_order_release);
}

// Ends the active program: no new use can start, running ones finish, then it is destroyed.
QD_FUNC void end_program(std::string_view caller) {
  program* p = program_slot().get();
  if (p == nullptr) return;
  if (active_tracer != nullptr)
    throw user_error(
        fmt::format("{} called while tracing kernel '{}': a kernel lambda runs once, at its first "
                    "launch, to record the kernel; start and end Quadrants outside it",
                    caller, active_tracer->kernel));
  if (this_thread_slot().in_use.load(std::memory_order_relaxed) == p)
    throw user_error(
        fmt::format("{} called while this thread is launching or compiling a kernel (from a log sink?); "
                    "call it after the launch returns",
                    caller));
  active_program.store(nullptr, std::memory_order_seq_cst);
  std::vector<use_slot*> all;
  {
    std::lock_guard lock(slots().mutex);
    all = slots().all;
  }
  for (use_slot* slot : all)
    while (slot->in_use.load(std::memory_order_seq_cst) == p)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  end_program_coverage(*p);  // kernel_coverage: read back and merge the counts while the device lives
  program_slot().reset();
}

}  // namespace detail

QD_FUNC void init(const config& c) {
  std::lock_guard lock(detail::init_mutex());
  static std::uint64_t next_id = 1;
  detail::end_program("qd::init");
  settings s = detail::resolve_settings(c);
  auto p = std::make_unique<detail::program>(std::move(s), next_id++);
  detail::active_program.store(p.get(), std::memory_order_seq_cst);
  detail::program_slot() = std::move(p);
  detail::log_fmt(log_level::debug, "qd::init: arch = {}", name(detail::program_slot()->config().arch));
}

QD_FUNC void reset() {
  std::lock_guard lock(detail::init_mutex());
  detail::end_program("qd::reset()");
}

QD_FUNC bool is_initialized() noexcept { return detail::active_program.load(std::memory_order_acquire) != nullptr; }

QD_FUNC const settings& current_settings() { return detail::current_program("qd::current_settings").config(); }

}  // namespace qd::inline v0
