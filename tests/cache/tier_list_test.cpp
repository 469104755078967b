// Tests of cache/tier_list.hpp, the one lookup protocol over the cache tiers, with the real
// memory and disk tiers and a third tier written here in a few lines (a map standing in for
// an object store): hits are written to the tiers above, misses are built once and stored
// everywhere, and a bad entry in any tier is a miss there.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "cache/cache_test_support.hpp"
#include "cache/tier_test_support.hpp"
#include "quadrants/cache/disk_tier.hpp"
#include "quadrants/cache/memory_tier.hpp"
#include "quadrants/cache/store.hpp"
#include "quadrants/cache/tier_list.hpp"

using namespace qd::cache;
using bytes = std::vector<std::byte>;

namespace {

// A third tier: all it takes is this class. It batches like a remote tier, so the list
// tells it which keys to prefetch.
class object_store_tier final : public tier {
 public:
  std::string_view name() const override { return "object store"; }
  bool available() const override { return up; }
  std::optional<tier_item> get(entry_kind kind, const key& k) override {
    std::lock_guard lock(mutex);
    ++gets;
    auto it = objects.find({kind, k.hex()});
    if (it == objects.end()) return std::nullopt;
    return tier_item{it->second, nullptr};
  }
  bool put(entry_kind kind, const key& k, std::span<const std::byte> payload,
           const std::shared_ptr<qd::backend::loaded_module>&) override {
    std::lock_guard lock(mutex);
    objects[{kind, k.hex()}].assign(payload.begin(), payload.end());
    return true;
  }
  void discard(entry_kind kind, const key& k, std::span<const std::byte> payload) override {
    std::lock_guard lock(mutex);
    auto it = objects.find({kind, k.hex()});
    if (it != objects.end() && std::equal(it->second.begin(), it->second.end(), payload.begin(), payload.end()))
      objects.erase(it);
  }
  bool prefetches() const override { return true; }
  void prefetch(entry_kind, std::span<const key> keys) override {
    std::lock_guard lock(mutex);
    prefetched.insert(prefetched.end(), keys.begin(), keys.end());
  }

  std::mutex mutex;
  std::map<std::pair<entry_kind, std::string>, bytes> objects;
  std::vector<key> prefetched;
  int gets = 0;
  bool up = true;
};

key key_of(std::uint64_t n) { return key_builder().add("tier list test").add(n).finish(); }

// memory, disk, then the object store: the runtime's list with a third tier registered.
struct three_tiers {
  qd_test::temp_dir dir;
  std::shared_ptr<store> disk = std::make_shared<store>(store_options{.root = dir / "root"});
  object_store_tier* objects = nullptr;
  tier_list list;
  three_tiers() {
    list.add(make_memory_tier());
    list.add(make_disk_tier(disk));
    auto o = std::make_unique<object_store_tier>();
    objects = o.get();
    list.add(std::move(o));
  }
  tier& memory() { return list[0]; }
};

// Accepts only payloads that start with `good`: what a record's check or a loader does.
opener open_if(std::byte good, int* opened = nullptr) {
  return [=](std::span<const std::byte> payload) -> std::shared_ptr<qd::backend::loaded_module> {
    if (payload.empty() || payload[0] != good) return nullptr;
    return qd_test::open_any(opened)(payload);
  };
}

bytes payload_of(std::byte first, std::size_t size, std::uint64_t seed) {
  bytes b = qd_test::code_like_payload(size, seed);
  b[0] = first;
  return b;
}

constexpr std::byte good{0x42}, bad{0x13};

}  // namespace

TEST_CASE("a hit in the lowest tier is written to every tier above it, and then found at the top") {
  three_tiers t;
  const key k = key_of(1);
  const bytes payload = payload_of(good, 3000, 1);
  t.objects->objects[{entry_kind::module, k.hex()}] = payload;
  int opened = 0;
  resolved r = t.list.get(entry_kind::module, k, open_if(good, &opened));
  REQUIRE(r);
  CHECK(r.loaded);
  CHECK(opened == 1);
  CHECK(qd_test::found_bytes(r) == payload);
  // Promoted: the disk holds a valid entry with these bytes, the memory the module itself.
  CHECK(t.disk->load(entry_kind::module, k) == payload);
  CHECK(t.memory().holds(entry_kind::module, k));
  const int gets = t.objects->gets;
  resolved again = t.list.get(entry_kind::module, k, open_if(good, &opened));
  CHECK(again.module == r.module);  // the same loaded module, not opened again
  CHECK(!again.loaded);
  CHECK(opened == 1);
  CHECK(t.objects->gets == gets);  // the lower tiers were not asked
  CHECK(t.memory().stats().hits == 1);
}

TEST_CASE("a miss is built once, stored in every tier, and found by the next program without a build") {
  three_tiers t;
  const key k = key_of(2);
  const bytes payload = payload_of(good, 5000, 2);
  std::atomic<int> builds{0};
  const builder build = [&] {
    ++builds;
    built_entry b;
    b.payload = payload;
    b.module = qd_test::open_any()(payload);
    return b;
  };
  // Several threads miss at once: the disk's build lock lets one build while the others wait.
  std::vector<std::thread> threads;
  std::vector<resolved> results(4);
  for (std::size_t i = 0; i < results.size(); ++i)
    threads.emplace_back([&, i] { results[i] = t.list.resolve(entry_kind::module, k, open_if(good), build); });
  for (auto& th : threads) th.join();
  CHECK(builds == 1);
  int built = 0;
  for (const resolved& r : results) {
    REQUIRE(r);
    built += r.built;
    CHECK(qd_test::found_bytes(r) == payload);
  }
  CHECK(built == 1);
  CHECK(t.memory().holds(entry_kind::module, k));
  CHECK(t.disk->load(entry_kind::module, k) == payload);
  CHECK(t.objects->objects.at({entry_kind::module, k.hex()}) == payload);
  // Another program (a new memory tier) on the same disk: found there, no build.
  tier_list next;
  next.add(make_memory_tier());
  next.add(make_disk_tier(t.disk));
  resolved r = next.resolve(entry_kind::module, k, open_if(good), build);
  CHECK(r.loaded);
  CHECK(!r.built);
  CHECK(builds == 1);
}

TEST_CASE("a bad entry in any tier is a miss there: discarded, and the next tier asked") {
  three_tiers t;
  const key k = key_of(3);
  const bytes stale = payload_of(bad, 2000, 3), fresh = payload_of(good, 2000, 4);
  SUBCASE("on disk, with a good one below: the good one is used and replaces it") {
    REQUIRE(t.disk->save(entry_kind::offload, k, stale));
    t.objects->objects[{entry_kind::offload, k.hex()}] = fresh;
    resolved r = t.list.get(entry_kind::offload, k, open_if(good));
    REQUIRE(r);
    CHECK(qd_test::found_bytes(r) == fresh);
    CHECK(t.disk->load(entry_kind::offload, k) == fresh);
  }
  SUBCASE("in the lowest tier: a miss, discarded, then built and stored everywhere") {
    t.objects->objects[{entry_kind::offload, k.hex()}] = stale;
    CHECK(!t.list.get(entry_kind::offload, k, open_if(good)));
    CHECK(t.objects->objects.count({entry_kind::offload, k.hex()}) == 0);
    CHECK(!t.disk->contains(entry_kind::offload, k));  // never promoted
    int builds = 0;
    resolved r = t.list.resolve(entry_kind::offload, k, open_if(good), [&] {
      ++builds;
      return built_entry{fresh, qd_test::open_any()(fresh)};
    });
    CHECK(r.built);
    CHECK(builds == 1);
    CHECK(t.objects->objects.at({entry_kind::offload, k.hex()}) == fresh);
    CHECK(t.disk->load(entry_kind::offload, k) == fresh);
  }
  SUBCASE("everywhere: a miss, and each tier drops its copy") {
    REQUIRE(t.disk->save(entry_kind::offload, k, stale));
    t.objects->objects[{entry_kind::offload, k.hex()}] = stale;
    CHECK(!t.list.get(entry_kind::offload, k, open_if(good)));
    CHECK(!t.disk->contains(entry_kind::offload, k));
    CHECK(t.objects->objects.empty());
  }
}

TEST_CASE("a prefetching tier is told only the keys no tier above holds; an unavailable tier is skipped") {
  three_tiers t;
  const key in_memory = key_of(10), on_disk = key_of(11), nowhere = key_of(12);
  const bytes payload = payload_of(good, 1000, 5);
  t.memory().put(entry_kind::module, in_memory, {}, qd_test::open_any()(payload));
  REQUIRE(t.disk->save(entry_kind::module, on_disk, payload));
  const key all[] = {in_memory, on_disk, nowhere};
  t.list.prefetch(entry_kind::module, all);
  CHECK(t.objects->prefetched == std::vector<key>{nowhere});
  // Down: neither prefetched nor asked.
  t.objects->up = false;
  t.objects->prefetched.clear();
  t.objects->objects[{entry_kind::module, nowhere.hex()}] = payload;
  t.list.prefetch(entry_kind::module, all);
  CHECK(t.objects->prefetched.empty());
  const int gets = t.objects->gets;
  CHECK(!t.list.get(entry_kind::module, nowhere, open_if(good)));
  CHECK(t.objects->gets == gets);
  t.objects->up = true;
  CHECK(qd_test::found_bytes(t.list.get(entry_kind::module, nowhere, open_if(good))) == payload);
}

TEST_CASE("an empty payload (an interpreter's build) is kept only by the tiers that keep modules") {
  three_tiers t;
  const key k = key_of(20);
  resolved r = t.list.resolve(entry_kind::module, k, open_if(good), [] {
    return built_entry{{}, qd_test::open_any()(bytes{})};
  });
  CHECK(r.built);
  CHECK(t.memory().holds(entry_kind::module, k));
  CHECK(!t.disk->contains(entry_kind::module, k));
  CHECK(t.objects->objects.empty());
}
