// Tests of cache/remote.hpp and of the tier list with the disk in front of it, against a
// real redis-server that each test starts on a unix socket: hits, write-through, one round
// trip per kernel, refused entries, read-only mode, compile locks, and every fault the tier
// must survive.
#include <doctest/doctest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "cache/cache_test_support.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/cache/records.hpp"
#include "cache/tier_test_support.hpp"
#include "quadrants/cache/disk_tier.hpp"
#include "quadrants/cache/remote.hpp"
#include "quadrants/cache/remote_tier.hpp"
#include "quadrants/cache/store.hpp"
#include "quadrants/cache/tier_list.hpp"
#include "support/redis_server.hpp"

using namespace qd::cache;
using bytes = std::vector<std::byte>;
using ms = std::chrono::milliseconds;
using qd_test::redis_server;

namespace {

// True when the tier can be tested here; otherwise says why, as a skip.
bool can_test() {
  std::string why = qd_test::remote_tier_skip_reason();
  if (!why.empty()) MESSAGE(why);
  return why.empty();
}

remote_options options_for(const redis_server& server, std::string secret = "team secret") {
  remote_options o;
  o.url = server.url();
  o.secret = std::move(secret);
  o.retry_after = ms(200);
  return o;
}

key key_of(std::uint64_t n) { return key_builder().add(n).finish(); }

// The disk at `root`, then `server`: the runtime's tiers below memory.
tier_list disk_then(const std::string& root, std::shared_ptr<remote> server) {
  tier_list tiers;
  tiers.add(make_disk_tier(std::make_shared<store>(store_options{.root = root})));
  tiers.add(make_remote_tier(std::move(server)));
  return tiers;
}

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

// A module and two offload records that name it, as the runtime writes them.
struct kernel_entries {
  key module = key_of(1000), first = key_of(1001), second = key_of(1002);
  bytes code = qd_test::code_like_payload(20 * 1024, 7);
  bytes record(const key& k) const { return encode(offload_record{module, {"qd_o" + k.hex(), true, false, {0, 1}}}); }
  void save(store& s) const {
    s.save(entry_kind::module, module, code);
    s.save(entry_kind::offload, first, record(first));
    s.save(entry_kind::offload, second, record(second));
  }
  void put(tier_list& tiers) const {
    tiers.put(entry_kind::module, module, code, nullptr);
    tiers.put(entry_kind::offload, first, record(first), nullptr);
    tiers.put(entry_kind::offload, second, record(second), nullptr);
  }
};

}  // namespace

TEST_CASE("remote_cache URLs: the accepted forms, and a clear error for the rest") {
  remote_address a = parse_remote_url("redis://cache.example:6380/3");
  CHECK(!a.unix_socket);
  CHECK(a.host == "cache.example");
  CHECK(a.port == 6380);
  CHECK(a.db == 3);
  a = parse_remote_url("redis://build-host");
  CHECK(a.port == 6379);
  CHECK(a.db == 0);
  a = parse_remote_url("redis://:p%40ss@[::1]:7000/1");
  CHECK(a.host == "::1");
  CHECK(a.port == 7000);
  CHECK(a.password == "p@ss");
  CHECK(a.text() == "redis://:***@[::1]:7000/1");  // never the password
  a = parse_remote_url("redis://ci:token@10.0.0.5/2");
  CHECK(a.user == "ci");
  CHECK(a.password == "token");
  a = parse_remote_url("unix:///run/redis/redis.sock?db=4");
  CHECK(a.unix_socket);
  CHECK(a.path == "/run/redis/redis.sock");
  CHECK(a.db == 4);
  for (const char* bad :
       {"", "localhost:6379", "http://host", "redis://", "redis://host:0", "redis://host:65536", "redis://host:port",
        "redis://host/x", "redis://user@host", "redis://::1:6379", "unix://relative.sock", "unix:///s.sock?timeout=1",
        "rediss://host", "redis://host?x=1", "redis://[::1", "redis://h%zz:1"}) {
    std::string text = bad;
    CAPTURE(text);
    CHECK_THROWS_AS(parse_remote_url(bad), qd::user_error);
  }
  CHECK_THROWS_WITH_AS(parse_remote_url("rediss://host"), doctest::Contains("TLS"), qd::user_error);
  CHECK_THROWS_WITH_AS(parse_remote_url("tcp://host"), doctest::Contains("redis://host:6379/0"), qd::user_error);
}

TEST_CASE("the tier is refused without a secret unless unauthenticated is chosen") {
  remote_options o;
  o.url = "unix:///nonexistent/redis.sock";
  CHECK_THROWS_WITH_AS(check_remote_options(o), doctest::Contains("QD_REMOTE_CACHE_UNAUTHENTICATED=1"), qd::user_error);
  CHECK_THROWS_WITH_AS(remote{o}, doctest::Contains("remote_cache_secret"), qd::user_error);
  o.unauthenticated = true;
  CHECK_NOTHROW(check_remote_options(o));
  remote_options no_time{.url = o.url, .secret = "s", .timeout = ms(0)};
  CHECK_THROWS_WITH_AS(check_remote_options(no_time), doctest::Contains("remote_cache_timeout_ms"), qd::user_error);
}

TEST_CASE("an empty disk cache is filled from the server: hit, written through, then local") {
  if (!can_test()) return;
  redis_server server;
  REQUIRE(server.running());
  qd_test::temp_dir a, b;
  kernel_entries k;
  {
    auto writer = std::make_shared<remote>(options_for(server));
    tier_list tiers = disk_then(a / "root", writer);
    k.put(tiers);
    CHECK(writer->stats().stores == 3);
  }
  auto tier = std::make_shared<remote>(options_for(server));
  tier_list reader = disk_then(b / "root", tier);
  // One kernel: its two records and the module they name, in one round trip.
  key records[] = {k.first, k.second};
  reader.prefetch(entry_kind::offload, records);
  CHECK(tier->stats().round_trips == 1);
  CHECK(tier->stats().hits == 3);
  auto r1 = reader.get(entry_kind::offload, k.first, qd_test::open_any());
  auto r2 = reader.get(entry_kind::offload, k.second, qd_test::open_any());
  auto m = reader.get(entry_kind::module, k.module, qd_test::open_any());
  REQUIRE(r1);
  REQUIRE(r2);
  REQUIRE(m);
  CHECK(qd_test::found_bytes(r1) == k.record(k.first));
  CHECK(qd_test::found_bytes(m) == k.code);
  CHECK(tier->stats().round_trips == 1);  // the gets asked nothing more
  // Written through: the disk now holds valid entries, and a later lookup stays local.
  CHECK(verify_entry(entry_path(b / "root", entry_kind::module, k.module)));
  CHECK(verify_entry(entry_path(b / "root", entry_kind::offload, k.first)));
  reader.prefetch(entry_kind::offload, records);
  CHECK(qd_test::found_bytes(reader.get(entry_kind::module, k.module, qd_test::open_any())) == k.code);
  CHECK(tier->stats().round_trips == 1);
  CHECK(reader[0].stats().hits == 1);
}

TEST_CASE("a key prefetched as absent costs no second round trip, and a lone load asks once") {
  if (!can_test()) return;
  redis_server server;
  qd_test::temp_dir dir;
  auto tier = std::make_shared<remote>(options_for(server));
  tier_list tiers = disk_then(dir / "root", tier);
  key k = key_of(5);
  tiers.prefetch(entry_kind::offload, {&k, 1});
  CHECK(tier->stats().round_trips == 1);
  CHECK(!tiers.get(entry_kind::offload, k, qd_test::open_any()));
  CHECK(tier->stats().round_trips == 1);
  key other = key_of(6);
  CHECK(!tiers.get(entry_kind::module, other, qd_test::open_any()));
  CHECK(tier->stats().round_trips == 2);
}

TEST_CASE("tampered, foreign and unauthenticated entries are refused, logged once, and replaced") {
  if (!can_test()) return;
  redis_server server;
  qd_test::temp_dir dir;
  bytes payload = qd_test::code_like_payload(4096, 3);
  key k1 = key_of(11), k2 = key_of(12);
  remote team(options_for(server, "team secret"));
  REQUIRE(team.put(entry_kind::module, k1, payload));
  REQUIRE(team.put(entry_kind::module, k2, payload));

  SUBCASE("a byte changed on the server") {
    qd_test::log_capture logs;
    remote reader(options_for(server, "team secret"));
    for (const key& k : {k1, k2})  // one byte of the stored payload, then one of the tag
      server.command({"SETRANGE", team.redis_key(entry_kind::module, k), k == k1 ? "200" : "10", "Z"});
    key both[] = {k1, k2};
    remote_fetch f = reader.fetch(entry_kind::module, both, false);
    CHECK(f.status[0] == remote_status::absent);
    CHECK(f.status[1] == remote_status::absent);
    CHECK(f.entries.empty());
    CHECK(reader.stats().rejected == 2);
    CHECK(logs.count(qd::log_level::warn, "refused") == 1);
    // The next writer replaces it, and it is good again.
    REQUIRE(team.put(entry_kind::module, k1, payload));
    remote_fetch g = reader.fetch(entry_kind::module, {&k1, 1}, false);
    REQUIRE(g.entries.size() == 1);
    CHECK(g.entries[0].payload == payload);
  }
  SUBCASE("another secret: a namespace of its own, a warning, and a copied entry refused") {
    qd_test::log_capture logs;
    remote other(options_for(server, "another team"));
    CHECK(other.namespace_id() != team.namespace_id());
    remote_fetch f = other.fetch(entry_kind::module, {&k1, 1}, false);
    CHECK(f.status[0] == remote_status::absent);
    CHECK(logs.count(qd::log_level::warn, "another remote_cache_secret") == 1);
    // Copied under the other secret's name, the entry fails its HMAC.
    server.command({"COPY", team.redis_key(entry_kind::module, k1), other.redis_key(entry_kind::module, k1)});
    remote_fetch g = other.fetch(entry_kind::module, {&k1, 1}, false);
    CHECK(g.entries.empty());
    CHECK(other.stats().rejected == 1);
  }
  SUBCASE("an unauthenticated writer's entries are refused by a process with a secret") {
    remote_options o = options_for(server, "");
    o.unauthenticated = true;
    remote open(o);
    CHECK(open.namespace_id() == "unauthenticated");
    REQUIRE(open.put(entry_kind::module, k1, payload));
    remote_fetch same = open.fetch(entry_kind::module, {&k1, 1}, false);  // readable by its own kind
    REQUIRE(same.entries.size() == 1);
    remote reader(options_for(server, "team secret"));
    server.command({"SET", reader.redis_key(entry_kind::module, key_of(13)), "x"});
    server.command(
        {"COPY", open.redis_key(entry_kind::module, k1), reader.redis_key(entry_kind::module, k1), "REPLACE"});
    key both[] = {k1, key_of(13)};
    remote_fetch f = reader.fetch(entry_kind::module, both, false);
    CHECK(f.entries.empty());
    CHECK(reader.stats().rejected == 2);
  }
  SUBCASE("a valid entry stored under another key's name fails validation") {
    remote reader(options_for(server, "team secret"));
    server.command({"COPY", team.redis_key(entry_kind::module, k1), team.redis_key(entry_kind::offload, k1)});
    remote_fetch f = reader.fetch(entry_kind::offload, {&k1, 1}, false);
    CHECK(f.entries.empty());
    CHECK(reader.stats().rejected == 1);
  }
}

TEST_CASE("read-only mode reads but never writes: no entries, no locks, no counters") {
  if (!can_test()) return;
  redis_server server;
  qd_test::temp_dir dir;
  bytes payload = qd_test::code_like_payload(2048, 4);
  remote writer(options_for(server));
  REQUIRE(writer.put(entry_kind::module, key_of(1), payload));
  std::string before = server.command({"DBSIZE"});
  {
    remote_options o = options_for(server);
    o.read_only = true;
    auto tier = std::make_shared<remote>(o);
    tier_list tiers = disk_then(dir / "root", tier);
    CHECK(qd_test::found_bytes(tiers.get(entry_kind::module, key_of(1), qd_test::open_any())) == payload);
    tiers.put(entry_kind::module, key_of(2), payload, nullptr);  // to disk only
    CHECK(verify_entry(entry_path(dir / "root", entry_kind::module, key_of(2))));
    key absent = key_of(3);
    tiers.prefetch(entry_kind::offload, {&absent, 1});
    CHECK(tier->stats().locks_taken == 0);
    CHECK(tier->stats().stores == 0);
  }
  CHECK(server.command({"DBSIZE"}) == before);
}

TEST_CASE("compile locks: one process compiles, the other waits for its entry") {
  if (!can_test()) return;
  redis_server server;
  kernel_entries k;
  remote holder(options_for(server));
  key records[] = {k.first, k.second};
  remote_fetch f = holder.fetch(entry_kind::offload, records, true);
  CHECK(f.status[0] == remote_status::claimed);
  CHECK(f.status[1] == remote_status::claimed);
  std::string ttl = server.command({"PTTL", holder.redis_key(entry_kind::offload, k.first) + ":lock"});
  CHECK(std::stoi(ttl) > 0);  // the lock expires by itself

  remote waiter(options_for(server));
  auto t0 = std::chrono::steady_clock::now();
  auto waiting = std::async(std::launch::async, [&] { return waiter.prefetch(entry_kind::offload, records); });
  std::this_thread::sleep_for(ms(150));
  // The holder stores what it compiled: the module first, then the records.
  holder.put(entry_kind::module, k.module, k.code);
  holder.put(entry_kind::offload, k.first, k.record(k.first));
  holder.put(entry_kind::offload, k.second, k.record(k.second));
  CHECK(waiting.get() == 3);
  CHECK(elapsed_ms(t0) >= 150);
  CHECK(waiter.stats().waited == 2);
  CHECK(waiter.take(entry_kind::offload, k.first) == k.record(k.first));
  CHECK(waiter.take(entry_kind::module, k.module) == k.code);
  // Storing released the locks.
  CHECK(server.command({"EXISTS", holder.redis_key(entry_kind::offload, k.first) + ":lock"}) == "0");
}

TEST_CASE("a lock whose holder died frees at expiry: the waiter takes it over and compiles") {
  if (!can_test()) return;
  redis_server server;
  remote_options o = options_for(server);
  o.lock_ttl = ms(400);
  key k = key_of(77);
  std::string lock, value;
  {
    remote holder(o);
    REQUIRE(holder.fetch(entry_kind::offload, {&k, 1}, true).status[0] == remote_status::claimed);
    lock = holder.redis_key(entry_kind::offload, k) + ":lock";
    value = server.command({"GET", lock});
  }
  // A holder that dies releases nothing: its lock is put back as a killed process leaves it.
  server.command({"SET", lock, value, "PX", "400"});
  remote waiter(o);
  auto t0 = std::chrono::steady_clock::now();
  CHECK(waiter.prefetch(entry_kind::offload, {&k, 1}) == 0);
  double waited = elapsed_ms(t0);
  CHECK(waited >= 250);
  CHECK(waited < 400 + 1000);
  CHECK(waiter.stats().locks_taken == 1);       // taken over, so others wait for this one now
  CHECK(!waiter.take(entry_kind::offload, k));  // absent: compile it, no second round trip
}

TEST_CASE("a dead server costs at most the timeout once, then nothing until the retry") {
  if (!can_test()) return;
  redis_server server;
  qd_test::log_capture logs;
  remote_options o = options_for(server);
  o.retry_after = ms(300);
  remote tier(o);
  bytes payload = qd_test::code_like_payload(1024, 5);
  REQUIRE(tier.put(entry_kind::module, key_of(1), payload));
  server.stop(SIGKILL);  // killed mid-run
  auto t0 = std::chrono::steady_clock::now();
  CHECK(!tier.take(entry_kind::module, key_of(1)));
  CHECK(elapsed_ms(t0) <= o.timeout.count());
  CHECK(!tier.available());
  // Skipped while backing off: no attempt is made (an attempt at a dead server is an
  // error, counted; the time is a loose second check, 50 us a call, that holds under the
  // sanitizers too).
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) tier.take(entry_kind::module, key_of(1));
  CHECK(elapsed_ms(t0) < 50);
  CHECK(tier.stats().errors == 1);
  CHECK(logs.count(qd::log_level::warn) == 1);
  // Restarted: after the back-off the tier comes back on its own (the data is gone).
  REQUIRE(server.start());
  std::this_thread::sleep_for(ms(350));
  CHECK(tier.available());
  CHECK(tier.put(entry_kind::module, key_of(1), payload));
  CHECK(tier.take(entry_kind::module, key_of(1)) == payload);
  CHECK(logs.count(qd::log_level::warn) == 1);
}

TEST_CASE("a slow server (DEBUG SLEEP) costs the timeout once, with one warning") {
  if (!can_test()) return;
  redis_server server;
  qd_test::log_capture logs;
  remote tier(options_for(server));
  bytes payload = qd_test::code_like_payload(1024, 6);
  REQUIRE(tier.put(entry_kind::module, key_of(1), payload));
  pid_t sleeper = server.command_async({"DEBUG", "SLEEP", "1.5"});
  std::this_thread::sleep_for(ms(100));
  auto t0 = std::chrono::steady_clock::now();
  CHECK(!tier.take(entry_kind::module, key_of(1)));
  double first = elapsed_ms(t0);
  CHECK(first >= 80);
  CHECK(first <= 100 + 20);
  const std::uint64_t errors = tier.stats().errors;  // the second take is not tried
  t0 = std::chrono::steady_clock::now();
  CHECK(!tier.take(entry_kind::module, key_of(1)));
  CHECK(elapsed_ms(t0) < 10);
  CHECK(tier.stats().errors == errors);
  CHECK(logs.count(qd::log_level::warn, "remote_cache_timeout_ms") == 1);
  qd_test::wait_exit(sleeper);
}

TEST_CASE("a full server (maxmemory, noeviction) refuses writes with one warning; reads go on") {
  if (!can_test()) return;
  redis_server server({"--maxmemory-policy", "noeviction"});
  qd_test::log_capture logs;
  remote tier(options_for(server));
  bytes small = qd_test::code_like_payload(1024, 8);
  REQUIRE(tier.put(entry_kind::module, key_of(1), small));
  std::string info = server.command({"INFO", "memory"});
  long long used = std::stoll(info.substr(info.find("used_memory:") + 12));
  server.command({"CONFIG", "SET", "maxmemory", std::to_string(used + 4096)});
  bytes big = qd_test::code_like_payload(512 * 1024, 9);
  auto t0 = std::chrono::steady_clock::now();
  CHECK(!tier.put(entry_kind::module, key_of(2), big));
  CHECK(elapsed_ms(t0) <= 100);
  CHECK(!tier.put(entry_kind::module, key_of(3), big));  // writes paused: not even sent
  CHECK(logs.count(qd::log_level::warn, "refused to store") == 1);
  CHECK(tier.take(entry_kind::module, key_of(1)) == small);  // still read
  // The lock a full server cannot take is simply not taken.
  key k = key_of(4);
  remote_fetch f = tier.fetch(entry_kind::offload, {&k, 1}, true);
  CHECK((f.status[0] == remote_status::absent || f.status[0] == remote_status::claimed));
}

TEST_CASE("a server answering garbage, or closing connections, is a fault like a dead one") {
  if (!can_test()) return;
  qd_test::temp_dir dir;
  std::string path = dir / "garbage.sock";
  int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(listener, 8) == 0);
  std::atomic<bool> close_at_once{false};
  std::thread answering([&] {
    for (int i = 0; i < 2; ++i) {
      int c = ::accept(listener, nullptr, nullptr);
      if (c < 0) return;
      if (!close_at_once) {
        char buffer[4096];
        [[maybe_unused]] ssize_t n = ::read(c, buffer, sizeof buffer);
        const char reply[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
        [[maybe_unused]] ssize_t w = ::write(c, reply, sizeof reply - 1);
      }
      ::close(c);
    }
  });
  qd_test::log_capture logs;
  remote_options o{.url = "unix://" + path, .secret = "s", .retry_after = ms(50)};
  remote tier(o);
  auto t0 = std::chrono::steady_clock::now();
  CHECK(!tier.take(entry_kind::module, key_of(1)));
  CHECK(elapsed_ms(t0) <= 150);
  CHECK(tier.stats().errors == 1);
  CHECK(logs.count(qd::log_level::warn, "not the Redis protocol") == 1);
  close_at_once = true;
  std::this_thread::sleep_for(ms(80));
  CHECK(!tier.put(entry_kind::module, key_of(1), qd_test::code_like_payload(64, 1)));
  CHECK(tier.stats().errors == 2);
  CHECK(logs.count(qd::log_level::warn) == 1);
  ::shutdown(listener, SHUT_RDWR);
  ::close(listener);
  answering.join();
}

#ifdef QD_CACHE_TOOL
TEST_CASE("qd-cache push uploads what the server lacks, pull downloads it, and stats shows the remote tier") {
  if (!can_test()) return;
  redis_server server;
  qd_test::temp_dir dir;
  kernel_entries k;
  {
    store local({.root = dir / "root"});  // a compile-only build machine's cache
    k.save(local);
  }
  ::setenv("QD_REMOTE_CACHE_SECRET", "team secret", 1);
  std::vector<std::string> base = {QD_CACHE_TOOL, "--root", dir / "root", "--remote", server.url()};
  auto run = [&](std::string command, int* status) {
    std::vector<std::string> args = base;
    args.push_back(std::move(command));
    return qd_test::run_program(args, status);
  };
  int status = -1;
  std::string pushed = run("push", &status);
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(pushed.find("3 entries checked, 3 uploaded") != std::string::npos);
  CHECK(run("push", &status).find("0 uploaded") != std::string::npos);
  // What was pushed is what a process with the secret fetches.
  remote reader(options_for(server));
  key records[] = {k.first, k.second};
  CHECK(reader.prefetch(entry_kind::offload, records) == 3);
  CHECK(reader.take(entry_kind::module, k.module) == k.code);
  std::string stats = run("stats", &status);
  INFO(stats);
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(stats.find("namespace " + reader.namespace_id()) != std::string::npos);
  CHECK(stats.find("Redis ") != std::string::npos);
  CHECK(stats.find("stores 3") != std::string::npos);  // the push's own counters
  // pull fills an empty root with validated entries.
  qd_test::temp_dir node;
  std::vector<std::string> pull = {QD_CACHE_TOOL, "--root", node / "root", "--remote", server.url(), "pull"};
  std::string pulled = qd_test::run_program(pull, &status);
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(pulled.find("3 entries on the server, 3 downloaded") != std::string::npos);
  CHECK(verify_entry(entry_path(node / "root", entry_kind::module, k.module)));
  CHECK(verify_entry(entry_path(node / "root", entry_kind::offload, k.second)));
  CHECK(qd_test::run_program(pull, &status).find("0 downloaded, 3 already here") != std::string::npos);
  ::unsetenv("QD_REMOTE_CACHE_SECRET");
  // No secret: refused, as for the runtime.
  CHECK(run("push", &status).find("remote_cache_secret") != std::string::npos);
  CHECK(WEXITSTATUS(status) == 2);
  server.stop();
  ::setenv("QD_REMOTE_CACHE_SECRET", "team secret", 1);
  CHECK(run("stats", &status).find("unreachable") != std::string::npos);
  CHECK(WEXITSTATUS(status) == 1);
  ::unsetenv("QD_REMOTE_CACHE_SECRET");
}
#endif
