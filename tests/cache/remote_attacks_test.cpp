// The remote tier under attack: fake Redis servers written here (tests/support/fake_redis.hpp)
// that trickle, flood, nest, hang or answer nil; locks planted on a real server; and a
// process that forks with the tier connected. Each must cost a bounded time and memory,
// fault cleanly with a reason, and never mix up replies.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "cache/cache_test_support.hpp"
#include "quadrants/cache/remote.hpp"
#include "support/fake_redis.hpp"
#include "support/log_capture.hpp"
#include "support/redis_server.hpp"

using namespace qd::cache;
using bytes = std::vector<std::byte>;
using ms = std::chrono::milliseconds;
using qd_test::fake_redis;
using qd_test::redis_server;

namespace {

bool can_test() {
  std::string why = qd_test::remote_tier_skip_reason();
  if (!why.empty()) MESSAGE(why);
  return why.empty();
}

key key_of(std::uint64_t n) { return key_builder().add(n).finish(); }

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

remote_options options_for(const std::string& url) {
  remote_options o;
  o.url = url;
  o.secret = "team secret";
  o.retry_after = ms(60000);  // one fault per test: nothing is retried
  return o;
}

// Restarts the count of this process's peak resident memory (Linux 4.0+; otherwise the
// peak since the process started stands, which only makes the checks below stricter).
void reset_peak_memory() { std::ofstream("/proc/self/clear_refs") << "5"; }

// This process's peak resident memory since reset_peak_memory(), in bytes: freed buffers count.
std::uint64_t peak_memory() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("VmHWM:")) return std::stoull(line.substr(6)) * 1024;
  return 0;
}

// The memory a lookup may take beyond what the process held before it.
constexpr std::uint64_t memory_allowance = std::uint64_t{32} << 20;

// One lookup through the tier: what a store's miss costs. Returns its duration.
double one_lookup(remote& tier) {
  key k = key_of(1);
  auto t0 = std::chrono::steady_clock::now();
  remote_fetch f = tier.fetch(entry_kind::module, {&k, 1}, true);
  double took = elapsed_ms(t0);
  CHECK(f.status[0] == remote_status::unavailable);
  return took;
}

// Answers anything with arrays of 2^31 - 1 elements nested 7 deep, then nothing more.
bool nest_huge_arrays(fake_redis& self, int fd, const std::vector<std::string>&) {
  std::string nested;
  for (int i = 0; i < 7; ++i) nested += "*2147483647\r\n";
  self.send_all(fd, nested);
  self.hang();
  return false;
}

}  // namespace

TEST_CASE("a reply trickled one byte every 50 ms costs the timeout, not the reply's length") {
  if (!can_test()) return;
  // A valid answer to the fetch script (one 40-byte value), 51 bytes: 2.5 s at this pace.
  fake_redis server([](fake_redis& self, int fd, const std::vector<std::string>&) {
    self.trickle(fd, "*1\r\n$40\r\n" + std::string(40, 'v') + "\r\n", ms(50));
    return false;
  });
  qd_test::log_capture logs;
  remote tier(options_for(server.url()));
  double took = one_lookup(tier);
  CHECK(took >= 90);
  CHECK(took < 400);  // the whole exchange is bounded by remote_cache_timeout_ms (100)
  CHECK(tier.stats().errors == 1);
  CHECK(logs.count(qd::log_level::warn, "remote_cache_timeout_ms = 100") == 1);
  CHECK(tier.last_error().find("remote_cache_timeout_ms") != std::string::npos);
}

TEST_CASE("a server that never answers costs the timeout once") {
  if (!can_test()) return;
  fake_redis server([](fake_redis& self, int, const std::vector<std::string>&) {
    self.hang();
    return false;
  });
  qd_test::log_capture logs;
  remote tier(options_for(server.url()));
  double took = one_lookup(tier);
  CHECK(took >= 90);
  CHECK(took < 400);
  CHECK(one_lookup(tier) < 5);  // then backing off: nothing is asked
  CHECK(tier.stats().errors == 1);
  CHECK(logs.count(qd::log_level::warn) == 1);
}

TEST_CASE("a flooded reply is refused at its header: the client's memory does not grow") {
  if (!can_test()) return;
  // Each server sends `head`, then 256 MiB as fast as the socket takes them.
  struct flood_case {
    std::string head, reason, warning;
  };
  const std::vector<flood_case> cases = {
      {"*1\r\n$2000000000\r\n", "a string of 2000000000 bytes", "larger than any entry"},
      {"+", "a line longer than 65536 bytes", "a line longer than"},
  };
  const std::string chunk(std::size_t{1} << 20, 'x');
  for (const flood_case& c : cases) {
    INFO(c.reason);
    fake_redis server([&](fake_redis& self, int fd, const std::vector<std::string>&) {
      if (!self.send_all(fd, c.head)) return false;
      for (std::size_t sent = 0; sent < (std::size_t{256} << 20) && self.send_all(fd, chunk); sent += chunk.size()) {
      }
      return false;
    });
    qd_test::log_capture logs;
    remote tier(options_for(server.url()));
    reset_peak_memory();
    std::uint64_t before = peak_memory();
    double took = one_lookup(tier);
    CHECK(peak_memory() < before + memory_allowance);
    CHECK(took < 400);
    CHECK(tier.stats().errors == 1);
    CHECK(tier.last_error().find(c.reason) != std::string::npos);
    CHECK(logs.count(qd::log_level::warn, c.warning) == 1);
  }
}

TEST_CASE("arrays of 2^31 - 1 elements nested 7 deep are refused before anything is allocated") {
  if (!can_test()) return;
  fake_redis server(nest_huge_arrays);
  qd_test::log_capture logs;
  remote tier(options_for(server.url()));
  reset_peak_memory();
  std::uint64_t before = peak_memory();
  double took = one_lookup(tier);
  CHECK(took < 90);  // refused at the first header, not at the timeout
  CHECK(peak_memory() < before + memory_allowance);
  CHECK(tier.stats().errors == 1);
  CHECK(tier.last_error().find("2147483647 elements") != std::string::npos);
}

TEST_CASE("a server answering nil: lookups fault with the reason, and qd-cache says why") {
  if (!can_test()) return;
  fake_redis server(
      [](fake_redis& self, int fd, const std::vector<std::string>&) { return self.send_all(fd, "$-1\r\n"); });
  qd_test::log_capture logs;
  remote tier(options_for(server.url()));
  one_lookup(tier);
  CHECK(tier.stats().errors == 1);
  CHECK(tier.last_error().find("nil") != std::string::npos);
  remote lister(options_for(server.url()));
  CHECK(!lister.list());
  CHECK(lister.last_error().find("nil") != std::string::npos);
  remote reporter(options_for(server.url()));
  CHECK(!reporter.report());
  CHECK(reporter.last_error().find("nil") != std::string::npos);
#ifdef QD_CACHE_TOOL
  qd_test::temp_dir dir;
  ::setenv("QD_REMOTE_CACHE_SECRET", "team secret", 1);
  for (const char* command : {"stats", "pull"}) {
    int status = -1;
    std::string out =
        qd_test::run_program({QD_CACHE_TOOL, "--root", dir / "root", "--remote", server.url(), command}, &status);
    INFO(command << ": " << out);
    CHECK(WEXITSTATUS(status) == 1);
    std::size_t at = out.find("unreachable: ");
    REQUIRE(at != std::string::npos);
    CHECK(out.find("nil", at) != std::string::npos);
  }
  ::unsetenv("QD_REMOTE_CACHE_SECRET");
#endif
}

#ifdef QD_CACHE_TOOL
TEST_CASE("qd-cache stats against a server nesting huge arrays ends at once, saying why") {
  if (!can_test()) return;
  fake_redis server(nest_huge_arrays);
  qd_test::temp_dir dir;
  ::setenv("QD_REMOTE_CACHE_SECRET", "team secret", 1);
  int status = -1;
  auto t0 = std::chrono::steady_clock::now();
  std::string out =
      qd_test::run_program({QD_CACHE_TOOL, "--root", dir / "root", "--remote", server.url(), "stats"}, &status);
  INFO(out);
  CHECK(elapsed_ms(t0) < 2000);
  CHECK(WEXITSTATUS(status) == 1);
  CHECK(out.find("2147483647 elements") != std::string::npos);
  ::unsetenv("QD_REMOTE_CACHE_SECRET");
}
#endif

TEST_CASE("a lock planted without expiry, or without this secret's tag, is ignored: nobody waits for it") {
  if (!can_test()) return;
  redis_server server;
  qd_test::log_capture logs;
  remote_options o = options_for(server.url());
  o.lock_ttl = ms(3000);
  remote tier(o);
  key planted_forever = key_of(10), planted_forged = key_of(11);
  // Namespaces are visible on the server, so anyone who can write to it can plant these.
  server.command({"SET", tier.redis_key(entry_kind::offload, planted_forever) + ":lock", "planted"});
  server.command({"SET", tier.redis_key(entry_kind::offload, planted_forged) + ":lock",
                  "0123456789abcdef-1:1:30000:" + std::string(64, '0'), "PX", "30000"});
  key both[] = {planted_forever, planted_forged};
  auto t0 = std::chrono::steady_clock::now();
  remote_fetch f = tier.fetch(entry_kind::offload, both, true);
  CHECK(f.status[0] == remote_status::absent);
  CHECK(f.status[1] == remote_status::absent);
  CHECK(tier.prefetch(entry_kind::offload, both) == 0);
  CHECK(elapsed_ms(t0) < 1000);  // not the lock's life (3 s), nor the planted lock's (forever)
  CHECK(!tier.take(entry_kind::offload, planted_forever));  // compiled here, no second round trip
  CHECK(logs.count(qd::log_level::warn, "ignored") == 1);   // once per process, with the first reason
  CHECK(logs.count(qd::log_level::warn, "it has no expiry") == 1);
}

TEST_CASE("a genuine lock is waited for, and a wait longer than a second is a warning") {
  if (!can_test()) return;
  redis_server server;
  qd_test::log_capture logs;
  remote_options o = options_for(server.url());
  o.lock_ttl = ms(1300);
  remote holder(o), waiter(o);
  key k = key_of(20);
  REQUIRE(holder.fetch(entry_kind::offload, {&k, 1}, true).status[0] == remote_status::claimed);
  CHECK(waiter.fetch(entry_kind::offload, {&k, 1}, true).status[0] == remote_status::locked_elsewhere);
  // The holder never stores: the waiter waits for the lock's life, then takes it over.
  auto t0 = std::chrono::steady_clock::now();
  CHECK(waiter.prefetch(entry_kind::offload, {&k, 1}) == 0);
  CHECK(elapsed_ms(t0) >= 1000);
  CHECK(logs.count(qd::log_level::warn, "waited") == 1);
  CHECK(waiter.stats().locks_taken == 1);
}

TEST_CASE("after fork() parent and child each talk over a connection of their own") {
  if (!can_test()) return;
  redis_server server;
  auto tier = std::make_unique<remote>(options_for(server.url()));
  const key mine = key_of(30), theirs = key_of(31), locked = key_of(32);
  const bytes parent_value = qd_test::code_like_payload(4096, 1), child_value = qd_test::code_like_payload(4096, 2);
  REQUIRE(tier->put(entry_kind::module, mine, parent_value));
  REQUIRE(tier->put(entry_kind::module, theirs, child_value));
  REQUIRE(tier->fetch(entry_kind::offload, {&locked, 1}, true).status[0] == remote_status::claimed);
  const std::string lock = tier->redis_key(entry_kind::offload, locked) + ":lock";
  const std::string lock_value = server.command({"GET", lock});
  // Both processes fetch at once over what was one connection; each checks every reply.
  auto hammer = [](remote& t, const key& k, const bytes& expected) {
    int wrong = 0;
    for (int i = 0; i < 300; ++i) {
      remote_fetch f = t.fetch(entry_kind::module, {&k, 1}, false);
      wrong += f.status[0] != remote_status::hit || f.entries.size() != 1 || f.entries[0].payload != expected;
    }
    remote_stats s = t.stats();
    return wrong + static_cast<int>(s.rejected + s.errors);
  };
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int failures = hammer(*tier, theirs, child_value);
    tier.reset();  // the child's end releases no lock of its parent's
    ::_exit(failures == 0 ? 0 : 1);
  }
  int failures = hammer(*tier, mine, parent_value);
  int status = qd_test::wait_exit(child);
  CHECK(failures == 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(server.command({"GET", lock}) == lock_value);  // still the parent's
  tier.reset();
  CHECK(server.command({"EXISTS", lock}) == "0");  // released by its holder
}

TEST_CASE("without scripting (EVAL disabled) locks are judged the same way, in two round trips") {
  if (!can_test()) return;
  redis_server server({"--rename-command", "EVAL", ""});
  qd_test::log_capture logs;
  remote_options o = options_for(server.url());
  o.lock_ttl = ms(3000);
  remote holder(o), waiter(o);
  key planted = key_of(40), genuine = key_of(41);
  server.command({"SET", waiter.redis_key(entry_kind::offload, planted) + ":lock", "planted"});
  REQUIRE(holder.fetch(entry_kind::offload, {&genuine, 1}, true).status[0] == remote_status::claimed);
  CHECK(server.command({"PTTL", holder.redis_key(entry_kind::offload, genuine) + ":lock"}) != "-1");
  key both[] = {planted, genuine};
  remote_fetch f = waiter.fetch(entry_kind::offload, both, true);
  CHECK(f.status[0] == remote_status::absent);            // no expiry: ignored
  CHECK(f.status[1] == remote_status::locked_elsewhere);  // the holder's, signed: waited for
  CHECK(logs.count(qd::log_level::warn, "it has no expiry") == 1);
  // The holder stores its entry; the waiter gets it.
  holder.put(entry_kind::offload, genuine, qd_test::code_like_payload(64, 3));
  CHECK(waiter.prefetch(entry_kind::offload, {&genuine, 1}) == 1);
  CHECK(waiter.stats().errors == 0);
}
