// Implementation of cache/memory_tier.hpp.
#pragma once

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "quadrants/cache/memory_tier.hpp"

namespace qd::inline v0::cache {
namespace detail {

class memory_tier final : public tier {
 public:
  std::string_view name() const override { return "memory"; }
  bool keeps_modules() const override { return true; }

  std::optional<tier_item> get(entry_kind, const key& k) override {
    std::lock_guard lock(mutex_);
    auto it = modules_.find(k);
    if (it == modules_.end()) return std::nullopt;
    hits_.fetch_add(1, std::memory_order_relaxed);
    return tier_item{{}, it->second};
  }
  bool put(entry_kind, const key& k, std::span<const std::byte>,
           const std::shared_ptr<backend::loaded_module>& module) override {
    if (!module) return false;
    std::lock_guard lock(mutex_);
    return modules_.emplace(k, module).second;
  }
  bool holds(entry_kind, const key& k) override {
    std::lock_guard lock(mutex_);
    return modules_.count(k) > 0;
  }
  tier_stats stats() const override {
    tier_stats s;
    s.hits = hits_.load(std::memory_order_relaxed);
    s.writable = true;
    return s;
  }

 private:
  std::mutex mutex_;
  // One key space for every kind: a whole kernel's record and module share a key, and an
  // offload's key maps to the module that holds it.
  std::unordered_map<key, std::shared_ptr<backend::loaded_module>, key_hash> modules_;
  std::atomic<std::uint64_t> hits_{0};
};

}  // namespace detail

QD_FUNC std::unique_ptr<tier> make_memory_tier() { return std::make_unique<detail::memory_tier>(); }

}  // namespace qd::inline v0::cache
