// Implementation of cache/disk_tier.hpp.
#pragma once

#include "quadrants/cache/disk_tier.hpp"

namespace qd::inline v0::cache {
namespace detail {

class disk_lock final : public build_lock {
 public:
  explicit disk_lock(store::compile_lock lock) : lock_(std::move(lock)) {}

 private:
  store::compile_lock lock_;
};

class disk_tier final : public tier {
 public:
  explicit disk_tier(std::shared_ptr<store> disk) : disk_(std::move(disk)) {}
  std::string_view name() const override { return "disk"; }

  std::optional<tier_item> get(entry_kind kind, const key& k) override {
    std::optional<std::vector<std::byte>> payload = disk_->load(kind, k);
    if (!payload) return std::nullopt;
    return tier_item{std::move(*payload), nullptr};
  }
  bool put(entry_kind kind, const key& k, std::span<const std::byte> payload,
           const std::shared_ptr<backend::loaded_module>&) override {
    return disk_->save(kind, k, payload);
  }
  void discard(entry_kind kind, const key& k, std::span<const std::byte> payload) override {
    disk_->discard(kind, k, payload);
  }
  bool holds(entry_kind kind, const key& k) override { return disk_->contains(kind, k); }
  std::unique_ptr<build_lock> lock_for_build(entry_kind, const key& k, std::chrono::milliseconds timeout) override {
    store::compile_lock lock = disk_->lock_for_compile(k, timeout);
    if (!lock) return nullptr;
    return std::make_unique<disk_lock>(std::move(lock));
  }
  tier_stats stats() const override {
    store_stats d = disk_->stats();
    tier_stats s;
    s.hits = d.hits;
    s.misses = d.misses;
    s.stores = d.stores;
    s.evictions = d.evictions;
    s.rejected = d.rejected;
    s.bytes_read = d.bytes_read;
    s.bytes_written = d.bytes_written;
    s.writable = disk_->writable();
    return s;
  }

 private:
  std::shared_ptr<store> disk_;
};

}  // namespace detail

QD_FUNC std::unique_ptr<tier> make_disk_tier(std::shared_ptr<store> disk) {
  return std::make_unique<detail::disk_tier>(std::move(disk));
}

}  // namespace qd::inline v0::cache
