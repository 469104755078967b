// The cache's tiers in lookup order and the one protocol over them: ask each in turn,
// write a hit to the tiers above it, build a miss once and store it everywhere.
#pragma once

#include <chrono>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/cache/tier.hpp"

namespace qd::inline v0::cache {

// Turns a payload into its module: validated against what the caller expects (a record
// must describe the tasks the IR lowers to) and loaded. Null: of no use, a miss there.
using opener = std::function<std::shared_ptr<backend::loaded_module>(std::span<const std::byte> payload)>;

// Builds a miss: the payload to store (empty: nothing worth storing) and its module.
struct built_entry {
  std::vector<std::byte> payload;
  std::shared_ptr<backend::loaded_module> module;
};
using builder = std::function<built_entry()>;

struct resolved {
  std::shared_ptr<backend::loaded_module> module;  // null: not found (get)
  bool loaded = false;                             // a payload was opened now (from a tier below memory)
  bool built = false;                              // resolve() built it
  explicit operator bool() const { return module != nullptr; }
};

class tier_list {
 public:
  // Appends a tier below those already listed.
  QD_FUNC void add(std::unique_ptr<tier> t);
  bool empty() const { return tiers_.empty(); }
  std::size_t size() const { return tiers_.size(); }
  tier& operator[](std::size_t i) const { return *tiers_[i]; }
  // The first tier named `name`, or null.
  QD_FUNC tier* find(std::string_view name) const;

  // Before a kernel's gets: each prefetching tier is told, in one call, the keys that no
  // tier above it holds.
  QD_FUNC void prefetch(entry_kind kind, std::span<const key> keys);
  // The first usable entry, from the top: a tier's module is used as it is, a payload is
  // opened; a payload that does not open is discarded from its tier and the next tier is
  // asked. A hit is written to the tiers above the one that had it.
  QD_FUNC resolved get(entry_kind kind, const key& k, const opener& open);
  // A record that stands for several modules (a variant record, put with put_record): the
  // first payload `use` accepts, from the top, asking no prefetching tier (a remote one
  // answers all of a kernel's records and modules in one round trip already, which such a
  // record would make two); a payload it refuses is discarded from its tier. A hit is
  // written to the tiers above the one that had it. The index of that tier, or nullopt: a miss.
  using record_user = std::function<bool(std::span<const std::byte> payload)>;
  QD_FUNC std::optional<std::size_t> get_record(entry_kind kind, const key& k, const record_user& use);
  // Writes such a record to every tier that does not prefetch.
  QD_FUNC void put_record(entry_kind kind, const key& k, std::span<const std::byte> payload);
  // Writes to the tiers above tier `index` (what a hit there stands for: a variant record's
  // offload records).
  QD_FUNC void put_above(std::size_t index, entry_kind kind, const key& k, std::span<const std::byte> payload);
  // Writes to every tier (an empty payload: only to the tiers that keep modules).
  QD_FUNC void put(entry_kind kind, const key& k, std::span<const std::byte> payload,
                   const std::shared_ptr<backend::loaded_module>& module);
  // get(); on a miss, build_once().
  QD_FUNC resolved resolve(entry_kind kind, const key& k, const opener& open, const builder& build);
  // The tiers' build locks, get() again (the holder may just have stored it), then `build`
  // and put() everywhere: identical misses in several processes are built once. For a
  // caller that has just missed `k` (or an entry that stands for it).
  QD_FUNC resolved build_once(entry_kind kind, const key& k, const opener& open, const builder& build);

  // How long resolve() waits for another process's build.
  static constexpr std::chrono::milliseconds build_wait{120000};

 private:
  std::vector<std::unique_ptr<tier>> tiers_;
};

}  // namespace qd::inline v0::cache

#ifdef QD_HEADER_ONLY
#include "quadrants/cache/tier_list-inl.hpp"
#endif
