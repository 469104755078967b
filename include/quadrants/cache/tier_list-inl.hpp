// Implementation of cache/tier_list.hpp.
#pragma once

#include "quadrants/cache/tier_list.hpp"

namespace qd::inline v0::cache {

QD_FUNC void tier_list::add(std::unique_ptr<tier> t) { tiers_.push_back(std::move(t)); }

QD_FUNC tier* tier_list::find(std::string_view name) const {
  for (const auto& t : tiers_)
    if (t->name() == name) return t.get();
  return nullptr;
}

QD_FUNC void tier_list::prefetch(entry_kind kind, std::span<const key> keys) {
  for (std::size_t i = 0; i < tiers_.size(); ++i) {
    tier& t = *tiers_[i];
    if (!t.prefetches() || !t.available()) continue;
    std::vector<key> wanted;
    for (const key& k : keys) {
      bool held = false;
      for (std::size_t above = 0; above < i && !held; ++above) held = tiers_[above]->holds(kind, k);
      if (!held) wanted.push_back(k);
    }
    if (!wanted.empty()) t.prefetch(kind, wanted);
  }
}

QD_FUNC resolved tier_list::get(entry_kind kind, const key& k, const opener& open) {
  for (std::size_t i = 0; i < tiers_.size(); ++i) {
    tier& t = *tiers_[i];
    if (!t.available()) continue;
    std::optional<tier_item> item = t.get(kind, k);
    if (!item) continue;
    resolved r;
    r.module = item->module;
    if (!r.module) {
      r.module = open(item->payload);
      r.loaded = true;
    }
    if (!r.module) {
      t.discard(kind, k, item->payload);
      continue;
    }
    for (std::size_t above = 0; above < i; ++above) tiers_[above]->put(kind, k, item->payload, r.module);
    return r;
  }
  return {};
}

QD_FUNC std::optional<std::size_t> tier_list::get_record(entry_kind kind, const key& k, const record_user& use) {
  for (std::size_t i = 0; i < tiers_.size(); ++i) {
    tier& t = *tiers_[i];
    if (!t.available() || t.prefetches()) continue;
    std::optional<tier_item> item = t.get(kind, k);
    if (!item || item->payload.empty()) continue;
    if (!use(item->payload)) {
      t.discard(kind, k, item->payload);
      continue;
    }
    put_above(i, kind, k, item->payload);
    return i;
  }
  return std::nullopt;
}

QD_FUNC void tier_list::put_record(entry_kind kind, const key& k, std::span<const std::byte> payload) {
  for (const auto& t : tiers_)
    if (!t->prefetches()) t->put(kind, k, payload, nullptr);
}

QD_FUNC void tier_list::put_above(std::size_t index, entry_kind kind, const key& k,
                                  std::span<const std::byte> payload) {
  for (std::size_t above = 0; above < index && above < tiers_.size(); ++above)
    tiers_[above]->put(kind, k, payload, nullptr);
}

QD_FUNC void tier_list::put(entry_kind kind, const key& k, std::span<const std::byte> payload,
                            const std::shared_ptr<backend::loaded_module>& module) {
  for (const auto& t : tiers_)
    if (!payload.empty() || (module && t->keeps_modules())) t->put(kind, k, payload, module);
}

QD_FUNC resolved tier_list::resolve(entry_kind kind, const key& k, const opener& open, const builder& build) {
  if (resolved r = get(kind, k, open)) return r;
  return build_once(kind, k, open, build);
}

QD_FUNC resolved tier_list::build_once(entry_kind kind, const key& k, const opener& open, const builder& build) {
  std::vector<std::unique_ptr<build_lock>> locks;
  for (const auto& t : tiers_)
    if (t->available())
      if (auto lock = t->lock_for_build(kind, k, build_wait)) locks.push_back(std::move(lock));
  if (resolved r = get(kind, k, open)) return r;
  built_entry b = build();
  put(kind, k, b.payload, b.module);
  resolved r;
  r.module = std::move(b.module);
  r.built = true;
  return r;
}

}  // namespace qd::inline v0::cache
