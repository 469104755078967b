// The remote cache tier from the user's side (issue 17), with a redis-server each test
// starts on a unix socket: a fresh machine starts warm from the server, processes that
// start together compile each construct once, a killed lock holder or a killed server
// costs a bounded delay, read-only processes write nothing, and mistakes are clear.
#include <doctest/doctest.h>

#include <quadrants/quadrants.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "quadrants/cache/remote.hpp"
#include "runtime/runtime_test_support.hpp"
#include "runtime/worker_support.hpp"
#include "support/redis_server.hpp"

namespace fs = std::filesystem;
using qd_test::redis_server;

namespace {

bool can_test() {
  std::string why = qd_test::remote_tier_skip_reason();
  if (!why.empty()) MESSAGE(why);
  return why.empty();
}

// A worker's environment: its own disk cache under `disk`, the server, the team secret.
std::vector<std::string> worker_env(const redis_server& server, const fs::path& disk) {
  return {"QD_OFFLINE_CACHE_FILE_PATH=" + (disk / "qdcache").string(),
          "QD_REMOTE_CACHE=" + server.url(),
          "QD_REMOTE_CACHE_SECRET=team secret",
          "QD_LOG_LEVEL=warn",
          "QD_REMOTE_CACHE_RETRY_MS=200",
          "QD_PER_OFFLOAD=on"};
}

// A number printed by the worker as name=value.
long long field(const std::string& output, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex("(^|\\s)" + name + "=([0-9.]+)"))) return -1;
  return std::stoll(m[2]);
}

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

TEST_CASE("a fresh process with an empty disk cache gets every kernel from the server, one round trip each") {
  if (!can_test()) return;
  redis_server server;
  qd_test::temp_dir first("remote-first"), second("remote-second");
  auto cold = qd_test::run_worker(worker_env(server, first.path()), "4 2");
  REQUIRE_MESSAGE(cold.exit_code == 0, cold.output);
  CHECK(field(cold.output, "compiled") == 8);
  CHECK(field(cold.output, "remote_stores") >= 12);  // per kernel: a module and two records

  auto fresh = qd_test::run_worker(worker_env(server, second.path()), "4 2");
  INFO(cold.output, fresh.output);
  REQUIRE(fresh.exit_code == 0);
  CHECK(field(fresh.output, "compiles") == 0);
  CHECK(field(fresh.output, "loaded") == 8);
  CHECK(field(fresh.output, "remote_hits") == 12);
  CHECK(field(fresh.output, "round_trips") == 4);
  // Written through to disk: with the server gone, a third process is warm from disk
  // alone and never tries the server.
  server.stop();
  auto local = qd_test::run_worker(worker_env(server, second.path()), "4 2");
  INFO(local.output);
  CHECK(local.exit_code == 0);
  CHECK(field(local.output, "compiles") == 0);
  CHECK(field(local.output, "round_trips") == 0);
  CHECK(field(local.output, "remote_errors") == 0);
  CHECK(local.output.find("warn") == std::string::npos);
}

TEST_CASE("whole kernels come from the server too: a record and its module in one round trip") {
  if (!can_test()) return;
  redis_server server;
  qd_test::temp_dir first("remote-whole-first"), second("remote-whole-second");
  auto whole = [&](const qd_test::temp_dir& disk) {
    auto env = worker_env(server, disk.path());
    env.back() = "QD_PER_OFFLOAD=off";
    return qd_test::run_worker(env, "3 2");
  };
  auto cold = whole(first);
  REQUIRE_MESSAGE(cold.exit_code == 0, cold.output);
  CHECK(field(cold.output, "compiles") == 3);
  auto fresh = whole(second);
  INFO(cold.output, fresh.output);
  CHECK(fresh.exit_code == 0);
  CHECK(field(fresh.output, "compiles") == 0);
  CHECK(field(fresh.output, "loaded") == 6);
  CHECK(field(fresh.output, "remote_hits") == 6);  // per kernel: its record and its module
  CHECK(field(fresh.output, "round_trips") == 3);
}

TEST_CASE("eight processes started at once on a cold server compile each construct about once") {
  if (!can_test()) return;
  redis_server server;
  qd_test::temp_dir base("remote-eight");
  constexpr int constructs = 16;
  std::vector<std::future<qd_test::worker_result>> runs;
  for (int i = 0; i < 8; ++i) {
    auto env = worker_env(server, base.path() / std::to_string(i));
    runs.push_back(std::async(std::launch::async, [env] { return qd_test::run_worker(env, "1 16"); }));
  }
  long long compiled = 0;
  for (auto& r : runs) {
    auto result = r.get();
    INFO(result.output);
    CHECK(result.exit_code == 0);
    compiled += field(result.output, "compiled");
  }
  // Without the tier: 8 x 16 = 128.
  CHECK(compiled >= constructs);
  CHECK(compiled <= constructs * 11 / 10);
}

TEST_CASE("a killed lock holder delays the others by at most the lock's life") {
  if (!can_test()) return;
  redis_server server;
  qd_test::temp_dir base("remote-holder");
  // One compiler for both processes (its path is part of every key): slow and failing
  // while the marker file exists, the real one otherwise.
  fs::path marker = base.path() / "slow", wrapper = base.path() / "c++";
  std::ofstream(wrapper) << "#!/bin/sh\ncase \" $* \" in *\" --version \"*) exec c++ \"$@\";; esac\n"
                         << "if [ -f '" << marker.string() << "' ]; then sleep 4; exit 1; fi\nexec c++ \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  std::ofstream(marker) << "slow\n";
  auto env = worker_env(server, base.path() / "holder");
  env.push_back("QD_CXX=" + wrapper.string());
  env.push_back("QD_REMOTE_CACHE_LOCK_TTL_MS=1500");
  std::vector<std::string> args = {"/usr/bin/env"};
  args.insert(args.end(), env.begin(), env.end());
  args.insert(args.end(), {QD_KERNEL_WORKER, "1", "2"});
  int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  pid_t holder = qd_test::spawn_program(args, devnull);
  ::close(devnull);
  REQUIRE(holder > 0);
  bool locked = false;
  for (int i = 0; i < 500 && !locked; ++i) {
    locked = server.command({"--scan", "--pattern", "qd:*:lock"}).find(":lock") != std::string::npos;
    if (!locked) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(locked);
  ::kill(holder, SIGKILL);
  qd_test::wait_exit(holder);
  fs::remove(marker);
  auto other_env = worker_env(server, base.path() / "other");
  other_env.push_back("QD_CXX=" + wrapper.string());
  other_env.push_back("QD_REMOTE_CACHE_LOCK_TTL_MS=1500");
  auto t0 = std::chrono::steady_clock::now();
  auto other = qd_test::run_worker(other_env, "1 2");
  double took = elapsed_ms(t0);
  INFO(other.output);
  CHECK(other.exit_code == 0);
  CHECK(field(other.output, "compiled") == 2);  // compiled here once the lock expired
  CHECK(took < 1500 + 5000);
}

TEST_CASE("a server killed mid-run: launches go on with one warning, and the tier returns after a restart") {
  if (!can_test()) return;
  redis_server server;
  qd_test::temp_dir disk("remote-killed");
  qd_test::log_capture logs;
  qd_test::scoped_env retry("QD_REMOTE_CACHE_RETRY_MS", "300");
  qd_test::init_cpu({.offline_cache_file_path = disk.str(),
                     .per_offload = qd::per_offload_mode::on,
                     .remote_cache = server.url(),
                     .remote_cache_secret = "team secret"});
  auto make = [](float offset) {
    return qd::kernel("k", [offset](qd::types::ndarray<float, 1> x) {
      qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = qd::f32(i) + offset; });
      qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * 2.0f; });
    });
  };
  qd::ndarray<float, 1> x(8);
  make(1.0f)(x);
  CHECK(qd::offline_cache_statistics().remote_stores >= 3);
  server.stop(SIGKILL);
  make(2.0f)(x);
  CHECK(x.to_host()[3] == (3.0f + 2.0f) * 2.0f);
  make(3.0f)(x);
  CHECK(x.to_host()[3] == (3.0f + 3.0f) * 2.0f);
  INFO(logs.all());
  CHECK(logs.count(qd::log_level::warn) == 1);
  // At least the first fault; a loaded machine whose compiles outlast the 0.3 s back-off
  // retries the dead server once more (and doubles the back-off) without a new warning.
  CHECK(qd::offline_cache_statistics().remote_errors >= 1);
  REQUIRE(server.start());
  // The tier returns once its back-off has passed: new kernels are stored remotely again
  // (each offset is a new kernel, so each launch compiles and stores).
  const auto before = qd::offline_cache_statistics().remote_stores;
  const auto t0 = std::chrono::steady_clock::now();
  float offset = 4.0f;
  while (qd::offline_cache_statistics().remote_stores == before &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    make(offset)(x);
    CHECK(x.to_host()[3] == (3.0f + offset) * 2.0f);
    offset += 1.0f;
  }
  CHECK(qd::offline_cache_statistics().remote_stores > before);
  CHECK(logs.count(qd::log_level::warn) == 1);
  qd::reset();
}

TEST_CASE("a read-only process reads the server and writes nothing to it") {
  if (!can_test()) return;
  redis_server server;
  qd_test::temp_dir a("remote-ro-a"), b("remote-ro-b");
  auto env = worker_env(server, a.path());
  env.push_back("QD_REMOTE_CACHE_READ_ONLY=1");
  auto ro = qd_test::run_worker(env, "2 2");
  INFO(ro.output);
  CHECK(ro.exit_code == 0);
  CHECK(server.command({"DBSIZE"}) == "0");
  auto writer = qd_test::run_worker(worker_env(server, b.path()), "2 2");
  REQUIRE(writer.exit_code == 0);
  std::string size = server.command({"DBSIZE"});
  qd_test::temp_dir c("remote-ro-c");
  auto env_c = worker_env(server, c.path());
  env_c.push_back("QD_REMOTE_CACHE_READ_ONLY=1");
  auto reader = qd_test::run_worker(env_c, "2 2");
  INFO(reader.output);
  CHECK(field(reader.output, "compiles") == 0);
  CHECK(server.command({"DBSIZE"}) == size);
}

TEST_CASE("remote_cache mistakes are errors at qd::init; an unreachable server is one warning") {
  using qd_test::init_cpu;
  CHECK_THROWS_WITH_AS(init_cpu({.remote_cache = "localhost:6379", .remote_cache_secret = "s"}),
                       doctest::Contains("redis://host:6379/0"), qd::user_error);
  CHECK_THROWS_WITH_AS(init_cpu({.remote_cache = "redis://localhost:6379/0"}), doctest::Contains("remote_cache_secret"),
                       qd::user_error);
  CHECK_THROWS_WITH_AS(
      init_cpu({.remote_cache = "redis://localhost/0", .remote_cache_secret = "s", .remote_cache_timeout_ms = 0}),
      doctest::Contains("remote_cache_timeout_ms"), qd::user_error);
  {
    qd_test::scoped_env v("QD_REMOTE_CACHE_READ_ONLY", "maybe");
    CHECK_THROWS_AS(init_cpu({.remote_cache = "redis://localhost/0", .remote_cache_secret = "s"}), qd::user_error);
  }
  if (!can_test()) return;
  qd_test::temp_dir disk("remote-unreachable");
  qd_test::log_capture logs;
  init_cpu({.offline_cache_file_path = disk.str(),
            .per_offload = qd::per_offload_mode::on,
            .remote_cache = "unix://" + disk.str() + "/no-server.sock",
            .remote_cache_secret = "s"});
  CHECK(qd::current_settings().remote_cache_timeout_ms == 100);
  auto k = qd::kernel(
      "k", [](qd::types::ndarray<float, 1> x) { qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 1.0f; }); });
  qd::ndarray<float, 1> x(4);
  k(x);
  CHECK(x.to_host()[2] == 1.0f);
  CHECK(logs.count(qd::log_level::warn, "cannot connect") == 1);
  qd::reset();
}
