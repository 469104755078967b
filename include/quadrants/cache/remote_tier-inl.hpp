// Implementation of cache/remote_tier.hpp.
#pragma once

#include "quadrants/cache/remote_tier.hpp"

namespace qd::inline v0::cache {
namespace detail {

class remote_tier final : public tier {
 public:
  explicit remote_tier(std::shared_ptr<remote> server) : server_(std::move(server)) {}
  std::string_view name() const override { return "remote"; }
  bool available() const override { return server_->available(); }

  std::optional<tier_item> get(entry_kind kind, const key& k) override {
    std::optional<std::vector<std::byte>> payload = server_->take(kind, k);
    if (!payload) return std::nullopt;
    return tier_item{std::move(*payload), nullptr};
  }
  bool put(entry_kind kind, const key& k, std::span<const std::byte> payload,
           const std::shared_ptr<backend::loaded_module>&) override {
    return server_->put(kind, k, payload);
  }
  bool prefetches() const override { return true; }
  void prefetch(entry_kind kind, std::span<const key> keys) override { server_->prefetch(kind, keys); }
  tier_stats stats() const override {
    remote_stats r = server_->stats();
    tier_stats s;
    s.hits = r.hits;
    s.misses = r.misses;
    s.stores = r.stores;
    s.rejected = r.rejected;
    s.errors = r.errors;
    s.bytes_read = r.bytes_read;
    s.bytes_written = r.bytes_written;
    s.round_trips = r.round_trips;
    s.lock_waits = r.waited;
    s.writable = !server_->read_only();
    return s;
  }

 private:
  std::shared_ptr<remote> server_;
};

}  // namespace detail

QD_FUNC std::unique_ptr<tier> make_remote_tier(std::shared_ptr<remote> server) {
  return std::make_unique<detail::remote_tier>(std::move(server));
}

}  // namespace qd::inline v0::cache
