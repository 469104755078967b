// The remote cache tier (issue 17), against a redis-server this program starts on a unix
// socket: (1) a fresh process with an empty disk cache and a warm server, 20 two-construct
// kernels, CPU and NVRTC compile-only; (2) eight processes with their own disk caches
// starting cold at once on one server, a 64-construct kernel; (3) a dead server.
//   remote_bench [ROUNDS]             (the child mode below is internal)
#include <quadrants/quadrants.hpp>

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "quadrants/cache/remote.hpp"
#include "support/redis_server.hpp"

namespace {

namespace fs = std::filesystem;
using qd_bench::median;

// A fresh process: `kernels` kernels of `constructs` constructs (salted), compiled.
int child(int argc, char** argv) {
  std::string arch = argv[2], disk = argv[3], url = argv[4];
  int kernels = std::atoi(argv[5]), constructs = std::atoi(argv[6]), salt = std::atoi(argv[7]);
  auto start = std::chrono::steady_clock::now();
  qd::config c{.offline_cache_file_path = disk};
  if (arch == "cuda") {
    c.arch = qd::arch::cuda;
    c.compile_only = true;
    c.cuda_arch = 90;
  } else {
    c.arch = qd::arch::cpu;
    c.per_offload = qd::per_offload_mode::on;
  }
  if (url != "-") {
    c.remote_cache = url;
    c.remote_cache_secret = "bench secret";
  }
  (void)argc;
  int compiled = 0;
  double ready = qd_bench::ms([&] {
    qd::init(c);
    for (int k = 0; k < kernels; ++k) {
      auto kernel = qd_bench::make_kernel(fmt::format("k{}", k), constructs, salt * 1000 + k);
      kernel.compile();
      compiled += kernel.per_offload_cache_observations().constructs_compiled;
    }
  });
  auto s = qd::offline_cache_statistics();
  double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  fmt::print(
      "ready_ms={:.2f} wall_ms={:.1f} compiles={} compiled={} round_trips={} remote_hits={} lock_waits={} "
      "errors={}\n",
      ready, wall, s.compiles, compiled, s.remote_round_trips, s.remote_hits, s.remote_lock_waits, s.remote_errors);
  return 0;
}

double number(const std::string& out, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("(^| )" + name + "=([0-9.]+)"))) return -1;
  return std::stod(m[2]);
}

std::string self;

std::string run_child(const std::string& arch, const fs::path& disk, const std::string& url, int kernels,
                      int constructs, int salt) {
  return qd_test::run_program({self, "child", arch, disk.string(), url, std::to_string(kernels),
                               std::to_string(constructs), std::to_string(salt)});
}

void fresh_process(qd_test::redis_server& server, const fs::path& base, const std::string& arch, int rounds) {
  server.command({"FLUSHALL"});
  std::string warm = run_child(arch, base / (arch + "-builder"), server.url(), 20, 2, 0);
  if (number(warm, "compiles") < 0) {
    fmt::print("  {}: skipped ({})\n", arch, warm.substr(0, 200));
    return;
  }
  std::vector<double> ready, trips, hits, compiles, disk_ready;
  for (int r = 0; r < rounds; ++r) {
    fs::path disk = base / fmt::format("{}-fresh-{}", arch, r);
    std::string out = run_child(arch, disk, server.url(), 20, 2, 0);
    ready.push_back(number(out, "ready_ms"));
    trips.push_back(number(out, "round_trips"));
    hits.push_back(number(out, "remote_hits"));
    compiles.push_back(number(out, "compiles"));
    // The same process again, now warm from its own disk (the server is not contacted).
    std::string again = run_child(arch, disk, server.url(), 20, 2, 0);
    disk_ready.push_back(number(again, "ready_ms"));
  }
  fmt::print(
      "  {}: 20 two-construct kernels, fresh process, empty disk, warm server: ready in {:.2f} ms "
      "(median of {}; min {:.2f}, max {:.2f}); round trips {}, remote hits {}, compiler runs {}; the same "
      "process warm from its disk: {:.2f} ms; the builder's cold run: {} ms\n",
      arch, median(ready), rounds, *std::min_element(ready.begin(), ready.end()),
      *std::max_element(ready.begin(), ready.end()), median(trips), median(hits), median(compiles), median(disk_ready),
      number(warm, "ready_ms"));
}

void eight_processes(qd_test::redis_server& server, const fs::path& base, bool with_tier) {
  server.command({"FLUSHALL"});
  constexpr int constructs = 64;
  std::vector<pid_t> pids;
  std::vector<std::string> outputs(8);
  std::vector<int> fds;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 8; ++i) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) std::abort();
    fs::path disk = base / fmt::format("eight-{}-{}", with_tier ? "tier" : "alone", i);
    pids.push_back(qd_test::spawn_program(
        {self, "child", "cpu", disk.string(), with_tier ? server.url() : "-", "1", std::to_string(constructs), "7"},
        p[1]));
    ::close(p[1]);
    fds.push_back(p[0]);
  }
  for (int i = 0; i < 8; ++i) {
    char buffer[4096];
    for (ssize_t n; (n = ::read(fds[static_cast<std::size_t>(i)], buffer, sizeof buffer)) > 0;)
      outputs[static_cast<std::size_t>(i)].append(buffer, static_cast<std::size_t>(n));
    ::close(fds[static_cast<std::size_t>(i)]);
    qd_test::wait_exit(pids[static_cast<std::size_t>(i)]);
  }
  double all = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  double slowest = 0, compiles = 0, compiled = 0, waits = 0;
  for (const std::string& out : outputs) {
    slowest = std::max(slowest, number(out, "wall_ms"));
    compiles += number(out, "compiles");
    compiled += number(out, "compiled");
    waits += number(out, "lock_waits");
  }
  fmt::print(
      "  {}: constructs compiled {} (target <= 1.1 x {} = {:.0f}; 8 x {} = {} without sharing), compiler "
      "runs {}, constructs received after a lock wait {}; slowest process {:.0f} ms, all eight done {:.0f} "
      "ms\n",
      with_tier ? "with the tier   " : "without the tier", compiled, constructs, 1.1 * constructs, constructs,
      8 * constructs, compiles, waits, slowest, all);
}

void dead_server(const fs::path& base) {
  // Nothing listening, and a socket that accepts but never answers (the timeout case).
  std::string listening = (base / "silent.sock").string();
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, listening.c_str(), sizeof addr.sun_path - 1);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0) std::abort();
  qd::set_log_level(qd::log_level::error);
  for (auto [label, url] : {std::pair{"no server (connection refused)", "unix://" + (base / "none.sock").string()},
                            std::pair{"a server that never answers", "unix://" + listening}}) {
    qd::cache::remote_options o;
    o.url = url;
    o.secret = "s";
    qd::cache::remote tier(o);
    qd::cache::key k = qd::cache::key_builder().add(std::uint64_t{1}).finish();
    double first = qd_bench::ms([&] { tier.prefetch(qd::cache::entry_kind::offload, {&k, 1}); });
    constexpr int later_calls = 100000;
    double later = qd_bench::ms([&] {
      for (int i = 0; i < later_calls; ++i) tier.prefetch(qd::cache::entry_kind::offload, {&k, 1});
    });
    fmt::print("  {}: first lookup {:.2f} ms (timeout 100 ms), later lookups {:.1f} ns each (back-off)\n", label, first,
               later * 1e6 / later_calls);
  }
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  self = fs::canonical("/proc/self/exe").string();
  if (argc >= 8 && std::string(argv[1]) == "child") return child(argc, argv);
  int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  if (!qd::cache::remote_supported() || qd_test::redis_server::binary().empty()) {
    fmt::print("remote_bench: skipped (needs the remote tier built in and redis-server installed)\n");
    return 0;
  }
  qd_test::redis_server server;
  char pattern[] = "/tmp/qd-remote-bench-XXXXXX";
  if (!::mkdtemp(pattern)) return 1;
  fs::path base = pattern;
  fmt::print("remote cache tier (redis-server {} on a unix socket, same machine)\n",
             server.command({"INFO", "server"}).find("redis_version") != std::string::npos ? "7" : "?");
  fresh_process(server, base, "cpu", rounds);
  fresh_process(server, base, "cuda", rounds);
  fmt::print("eight processes with their own disk caches, cold at once, one 64-construct kernel (CPU):\n");
  eight_processes(server, base, true);
  eight_processes(server, base, false);
  fmt::print("a dead server (cache layer, remote::prefetch of one key):\n");
  dead_server(base);
  std::error_code ec;
  fs::remove_all(base, ec);
  return 0;
}
