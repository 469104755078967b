// The running program behind qd::init: the resolved settings, the device, and
// what kernels share (compiled modules, the launch counter). Internal.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "quadrants/backend/device.hpp"
#include "quadrants/runtime/config.hpp"

namespace qd::detail {

class program {
 public:
  QD_FUNC program(settings s, std::uint64_t id);
  QD_FUNC ~program();

  const settings& config() const { return settings_; }
  std::uint64_t id() const { return id_; }
  backend::device& device() const { return *device_; }
  const std::shared_ptr<backend::device>& device_ptr() const { return device_; }
  std::uint64_t next_launch() { return launches_.fetch_add(1, std::memory_order_relaxed); }

  // Modules compiled in this process, by cache key: a kernel compiled twice
  // (or by two kernel objects) is compiled once.
  QD_FUNC std::shared_ptr<backend::loaded_module> find_module(const std::string& key);
  QD_FUNC void remember_module(const std::string& key, std::shared_ptr<backend::loaded_module> m);

 private:
  settings settings_;
  std::uint64_t id_;
  std::shared_ptr<backend::device> device_;
  std::atomic<std::uint64_t> launches_{0};
  std::mutex modules_mutex_;
  std::unordered_map<std::string, std::shared_ptr<backend::loaded_module>> modules_;
};

// The program of the last qd::init, or null. Read without a lock on every launch.
inline std::atomic<program*> active_program{nullptr};

// The active program; a qd::user_error naming `what` before qd::init or after qd::reset.
QD_FUNC program& current_program(std::string_view what);

// Resolves a config against QD_* variables and defaults (logging overrides).
QD_FUNC settings resolve_settings(const config& c);

}  // namespace qd::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/program-inl.hpp"
#endif
