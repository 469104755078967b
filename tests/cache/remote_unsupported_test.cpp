// The cache layer built without hiredis and libsodium (header-only mode, no
// QD_WITH_REMOTE_CACHE): the same API compiles, and remote_cache is one warning.
#include <doctest/doctest.h>

#include "cache/cache_test_support.hpp"
#include "quadrants/base/error.hpp"
#include "cache/tier_test_support.hpp"
#include "quadrants/cache/disk_tier.hpp"
#include "quadrants/cache/remote.hpp"
#include "quadrants/cache/remote_tier.hpp"
#include "quadrants/cache/store.hpp"

#ifdef QD_WITH_REMOTE_CACHE
#error "this test checks a build without the remote tier"
#endif

using namespace qd::cache;

TEST_CASE("without hiredis and libsodium, a remote tier is one warning and the disk tier stays local") {
  CHECK(!remote_supported());
  CHECK(!hmac_supported());
  qd_test::log_capture logs;
  remote_options o;
  o.url = "redis://cache.example:6379/0";
  o.secret = "s";
  auto tier = std::make_shared<remote>(o);
  CHECK(logs.count(qd::log_level::warn, "no remote cache tier") == 1);
  CHECK(!tier->available());
  qd_test::temp_dir dir;
  tier_list tiers;
  tiers.add(make_disk_tier(std::make_shared<store>(store_options{.root = dir / "root"})));
  tiers.add(make_remote_tier(tier));
  CHECK(!tiers[1].available());
  key k = key_builder().add(std::uint64_t{1}).finish();
  auto payload = qd_test::code_like_payload(1000, 1);
  tiers.prefetch(entry_kind::offload, {&k, 1});
  CHECK(!tiers.get(entry_kind::module, k, qd_test::open_any()));
  tiers.put(entry_kind::module, k, payload, nullptr);
  CHECK(qd_test::found_bytes(tiers.get(entry_kind::module, k, qd_test::open_any())) == payload);
  CHECK(tier->stats().round_trips == 0);
  CHECK(logs.count(qd::log_level::warn) == 1);
  // Configuration mistakes are still errors.
  o.secret.clear();
  CHECK_THROWS_AS(remote{o}, qd::user_error);
}
