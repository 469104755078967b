// Implementation of cache/memory_tier.hpp.
#pragma once

#include <atomic>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "quadrants/cache/memory_tier.hpp"

namespace qd::inline v0::cache {
namespace detail {

class memory_tier final : public tier {
 public:
  std::string_view name() const override { return "memory"; }
  bool keeps_modules() const override { return true; }

  std::optional<tier_item> get(entry_kind, const key& k) override {
    std::lock_guard lock(mutex_);
    if (auto it = modules_.find(k); it != modules_.end()) {
      hits_.fetch_add(1, std::memory_order_relaxed);
      return tier_item{{}, it->second};
    }
    if (auto it = records_.find(k); it != records_.end()) {
      hits_.fetch_add(1, std::memory_order_relaxed);
      return tier_item{it->second, nullptr};
    }
    return std::nullopt;
  }
  bool put(entry_kind kind, const key& k, std::span<const std::byte> payload,
           const std::shared_ptr<backend::loaded_module>& module) override {
    std::lock_guard lock(mutex_);
    if (module) return modules_.emplace(k, module).second;
    // A record that stands for several modules (a variant record): its bytes. Not an
    // explanation's (never read by a launch).
    if (payload.empty() || kind != entry_kind::variant) return false;
    return records_.emplace(k, std::vector<std::byte>(payload.begin(), payload.end())).second;
  }
  void discard(entry_kind, const key& k, std::span<const std::byte>) override {
    std::lock_guard lock(mutex_);
    records_.erase(k);
  }
  bool holds(entry_kind, const key& k) override {
    std::lock_guard lock(mutex_);
    return modules_.count(k) > 0 || records_.count(k) > 0;
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
  // Records put without a module (variant records), as bytes.
  std::unordered_map<key, std::vector<std::byte>, key_hash> records_;
  std::atomic<std::uint64_t> hits_{0};
};

}  // namespace detail

QD_FUNC std::unique_ptr<tier> make_memory_tier() { return std::make_unique<detail::memory_tier>(); }

}  // namespace qd::inline v0::cache
