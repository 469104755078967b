// The running program behind qd::init: the resolved settings, the backend and its
// device, and what kernels share (code for tasks, the launch counter). Internal.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <string>

#include "quadrants/backend/description.hpp"
#include "quadrants/backend/device.hpp"
#include "quadrants/runtime/config.hpp"

namespace qd::inline v0::cache {
class code_cache;
class tier;
struct remote_options;
}  // namespace qd::inline v0::cache

namespace qd::inline v0::detail {

class program {
 public:
  QD_FUNC program(settings s, std::uint64_t id);
  QD_FUNC ~program();

  const settings& config() const { return settings_; }
  std::uint64_t id() const { return id_; }
  backend::device& device() const { return *device_; }
  const std::shared_ptr<backend::device>& device_ptr() const { return device_; }
  // What the registry says about the backend (backend/description.hpp).
  const backend::description& backend() const { return *backend_; }
  std::uint64_t next_launch() { return launches_.fetch_add(1, std::memory_order_relaxed); }

  // Code for tasks: keys, the cache tiers in order, and the backend's builds. Thread-safe.
  cache::code_cache& code() const { return *code_; }

 private:
  settings settings_;
  std::uint64_t id_;
  const backend::description* backend_ = nullptr;
  std::shared_ptr<backend::device> device_;
  std::unique_ptr<cache::code_cache> code_;
  std::atomic<std::uint64_t> launches_{0};
};

// The program of the last qd::init, or null. Read without a lock on every launch.
inline std::atomic<program*> active_program{nullptr};

// The active program, held for the current thread's use while alive: a launch, a
// compile, an array's creation. qd::reset() and qd::init() wait until no thread
// holds the program they end (docs/architecture.md, "Threads and processes").
// Costs a store and a load on this thread's own slot: no shared write, no lock.
class program_use {
 public:
  // Throws the not-initialized qd::user_error naming `what` when there is no program.
  QD_FUNC explicit program_use(std::string_view what);
  // Holds nothing (operator bool is false) when there is no program.
  QD_FUNC explicit program_use(std::nothrow_t) noexcept;
  QD_FUNC ~program_use();
  program_use(const program_use&) = delete;
  program_use& operator=(const program_use&) = delete;

  explicit operator bool() const { return p_ != nullptr; }
  program& operator*() const { return *p_; }
  program* operator->() const { return p_; }

 private:
  program* p_ = nullptr;
  program* previous_ = nullptr;  // what this thread held before (nested uses)
};

[[noreturn]] QD_FUNC void throw_not_initialized(std::string_view what);

// The active program; a qd::user_error naming `what` before qd::init or after qd::reset.
// Only for callers that already hold a program_use, or that run no concurrent reset.
QD_FUNC program& current_program(std::string_view what);

// Test-only, never for users: programs started while `make` is set list one more cache
// tier after the registered ones (when offline_cache is on): a tier is one class.
QD_FUNC void set_extra_cache_tier(std::function<std::unique_ptr<cache::tier>()> make);

// Resolves a config against QD_* variables and defaults (logging overrides).
QD_FUNC settings resolve_settings(const config& c);
// The remote tier's options (cache/remote.hpp) from the settings.
QD_FUNC cache::remote_options remote_options_for(const settings& s);

}  // namespace qd::inline v0::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/pipeline/program-inl.hpp"
#endif
