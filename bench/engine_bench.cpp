// An engine's start (issue 30): K kernels of C constructs each (default 100 x 50), CPU
// backend, per-construct caching (per_offload on). Each measurement is a process of its own, timed from
// its main to every kernel ready: cold with first calls one after another, cold with
// qd::compile_all, warm (all cached) both ways, and warm after one construct's edit, beside
// which the edited construct compiled alone (a one-construct kernel, new to the cache).
// Then NVRTC compile-only for sm_90, cold and warm with qd::compile_all (skipped where
// NVRTC is not found). With QD_PEER_PYTHON naming a Python that imports Python Quadrants,
// the same program in it (engine_peer.py) cold and warm in the same run, then both cold on
// one core.
// Usage: engine_bench [kernels] [constructs]
#include <fmt/format.h>
#include <fcntl.h>
#include <spawn.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_support.hpp"

extern char** environ;

namespace {

using clock_type = std::chrono::steady_clock;
const clock_type::time_point process_start = clock_type::now();

// One measurement, in this process: every kernel ready, then the time since main. Modes:
// seq (first calls one after another), all (qd::compile_all), edited (all, construct 0 of
// kernel 0 edited; then, after the time is taken, that construct compiled alone: the edit
// as a one-construct kernel with a salt no other run used), nvrtc (all, NVRTC compile-only
// for sm_90). Prints "<seconds> <compiles> <disk hits> <alone ms>".
int child(const std::string& mode, const std::string& dir, int kernels, int constructs) {
  try {
    if (mode == "nvrtc")
      qd::init({.arch = qd::arch::cuda, .offline_cache_file_path = dir, .compile_only = true, .cuda_arch = 90});
    else
      qd::init({.arch = qd::arch::cpu, .offline_cache_file_path = dir, .per_offload = qd::per_offload_mode::on});
    std::vector<decltype(qd_bench::make_kernel("", 1, 0))> ks;
    for (int k = 0; k < kernels; ++k)
      ks.push_back(qd_bench::make_kernel(fmt::format("engine_{}", k), constructs, k + 1,
                                         mode == "edited" && k == 0 ? 0 : -1, 999));
    if (mode == "seq") {
      for (auto& k : ks) k.compile();
    } else {
      qd::compile_all();
    }
    const double s = std::chrono::duration<double>(clock_type::now() - process_start).count();
    const auto stats = qd::offline_cache_statistics();
    double alone = 0;
    if (mode == "edited") {
      auto single = qd_bench::make_kernel("engine_alone", 1, 0, 0, 999 + 1 + static_cast<int>(getpid() % 100000));
      alone = qd_bench::ms([&] { single.compile(); });
    }
    fmt::print("{:.4f} {} {} {:.2f}\n", s, stats.compiles, stats.hits, alone);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
  return 0;
}

struct result {
  double seconds = 0;
  unsigned long compiles = 0, hits = 0;
  double alone_ms = 0;  // edited: the edited construct compiled alone
};

// A process of `args`, its output into `log`, that writes "<seconds> <a> <b> [<alone ms>]" into `out`
// (the same file for this program's children).
result spawn(std::vector<std::string> args, const std::string& log, const std::string& out) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  if (posix_spawn(&pid, args[0].c_str(), &actions, nullptr, argv.data(), environ) != 0) std::exit(2);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  waitpid(pid, &status, 0);
  result r;
  if (FILE* f = std::fopen(out.c_str(), "r")) {
    if (std::fscanf(f, "%lf %lu %lu %lf", &r.seconds, &r.compiles, &r.hits, &r.alone_ms) < 3) r.seconds = -1;
    std::fclose(f);
  }
  std::filesystem::remove(out);
  std::filesystem::remove(log);
  return r;
}

result run(const std::string& mode, const std::string& dir, int kernels, int constructs) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  return spawn({self, "--child", mode, dir, std::to_string(kernels), std::to_string(constructs)}, dir + ".out",
               dir + ".out");
}

// Python Quadrants on the same program: seconds from before its qd.init to every kernel
// compiled (its import, about half a second, is not counted: the second field, in ms).
result run_peer(const std::string& python, const std::string& dir, int kernels, int constructs) {
  return spawn({python, QD_ENGINE_PEER_SCRIPT, dir, std::to_string(kernels), std::to_string(constructs), dir + ".out"},
               dir + ".log", dir + ".out");
}

// The processes started while one lives run on the first core only.
struct one_core {
  cpu_set_t saved;
  one_core() {
    sched_getaffinity(0, sizeof(saved), &saved);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    sched_setaffinity(0, sizeof(one), &one);
  }
  ~one_core() { sched_setaffinity(0, sizeof(saved), &saved); }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc == 6 && std::string(argv[1]) == "--child")
    return child(argv[2], argv[3], std::atoi(argv[4]), std::atoi(argv[5]));
  const int kernels = argc > 1 ? std::atoi(argv[1]) : 100, constructs = argc > 2 ? std::atoi(argv[2]) : 50;
  const auto root = std::filesystem::temp_directory_path() / fmt::format("qd-engine-bench-{}", getpid());
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  const std::string seq = (root / "seq").string(), all = (root / "all").string();
  const double n = kernels * constructs;
  fmt::print("engine start, CPU backend: {} kernels x {} constructs = {} constructs; each line one process\n", kernels,
             constructs, kernels * constructs);
  auto show = [&](const char* what, const result& r) {
    fmt::print("{:<44} {:9.3f} s  {:8.1f} us/construct  ({} compiles, {} disk hits)\n", what, r.seconds,
               r.seconds / n * 1e6, r.compiles, r.hits);
  };
  auto show_peer = [&](const char* what, const result& r) {
    fmt::print("{:<44} {:9.3f} s  {:8.1f} us/construct  (its import: {} ms more)\n", what, r.seconds,
               r.seconds / n * 1e6, r.compiles);
  };
  const result cold_seq = run("seq", seq, kernels, constructs);
  show("cold, first calls one after another", cold_seq);
  const result cold_all = run("all", all, kernels, constructs);
  show("cold, qd::compile_all()", cold_all);
  fmt::print("  compile_all / one after another: {:.2f}\n", cold_all.seconds / cold_seq.seconds);
  const result warm_seq = run("seq", all, kernels, constructs);
  show("warm, kernel.compile() one after another", warm_seq);
  const result warm_all = run("all", all, kernels, constructs);
  show("warm, qd::compile_all()", warm_all);
  const result edited = run("edited", all, kernels, constructs);
  show("warm, one construct edited", edited);
  fmt::print("  the edited construct compiled alone: {:.1f} ms; edited - alone = {:.1f} ms (target <= 50)\n",
             edited.alone_ms, edited.seconds * 1e3 - edited.alone_ms);
  const std::string nvrtc = (root / "nvrtc").string();
  const result nvrtc_cold = run("nvrtc", nvrtc, kernels, constructs);
  if (nvrtc_cold.seconds < 0) {
    fmt::print("NVRTC compile-only: skipped (its first process failed: is libnvrtc installed?)\n");
  } else {
    show("NVRTC compile-only sm_90, cold, compile_all", nvrtc_cold);
    show("NVRTC compile-only sm_90, warm, compile_all", run("nvrtc", nvrtc, kernels, constructs));
  }
  if (const char* python = std::getenv("QD_PEER_PYTHON"); python != nullptr && *python != '\0') {
    const std::string peer = (root / "peer").string(), peer1 = (root / "peer1").string(), one = (root / "one").string();
    const result peer_cold = run_peer(python, peer, kernels, constructs);
    show_peer("Python Quadrants, cold", peer_cold);
    const result peer_warm = run_peer(python, peer, kernels, constructs);
    show_peer("Python Quadrants, warm", peer_warm);
    fmt::print("  cold / Python Quadrants' cold: {:.2f} one after another, {:.2f} compile_all (target <= 0.35)\n",
               cold_seq.seconds / peer_cold.seconds, cold_all.seconds / peer_cold.seconds);
    fmt::print("  warm / Python Quadrants' warm: {:.4f} one after another, {:.4f} compile_all\n",
               warm_seq.seconds / peer_warm.seconds, warm_all.seconds / peer_warm.seconds);
    one_core pin;
    const result cold_one = run("all", one, kernels, constructs);
    show("one core: cold, qd::compile_all()", cold_one);
    const result peer_one = run_peer(python, peer1, kernels, constructs);
    show_peer("one core: Python Quadrants, cold", peer_one);
    fmt::print("  one core: cold / Python Quadrants' cold: {:.2f} (target <= 0.7)\n",
               cold_one.seconds / peer_one.seconds);
  } else {
    fmt::print("Python Quadrants: skipped (set QD_PEER_PYTHON to a Python that imports quadrants)\n");
  }
  std::filesystem::remove_all(root);
  return 0;
}
