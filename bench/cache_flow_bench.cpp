// What the cache buys a user, on the CPU backend: a fully warm process with 20
// kernels (time from qd::init to all ready, and whether any compiler ran), and
// the incremental recompile of a 16-construct kernel after editing one
// construct: split against whole-kernel, and against compiling the edited
// construct alone. Every configuration runs in the same process, interleaved.
#include <quadrants/quadrants.hpp>

#include "bench_support.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace {

using namespace qd_bench;  // bench_support.hpp

namespace fs = std::filesystem;

void warm_process(const fs::path& root) {
  auto run = [&](bool measure) {
    double t = ms([&] {
      qd::init({.arch = qd::arch::cpu, .offline_cache_file_path = root.string()});
      for (int k = 0; k < 20; ++k) make_kernel(fmt::format("k{}", k), 2, k).compile();
    });
    auto s = qd::offline_cache_statistics();
    if (measure)
      fmt::print(
          "  warm process, 20 kernels: qd::init to all ready {:.2f} ms; compiler runs {}, disk hits {}, "
          "misses {}\n",
          t, s.compiles, s.hits, s.misses);
    else
      fmt::print("  cold process, 20 kernels: {:.0f} ms, compiler runs {}\n", t, s.compiles);
  };
  run(false);
  run(true);
  run(true);
}

void incremental(const fs::path& base, int constructs, int rounds) {
  std::vector<double> split, whole, alone;
  for (int r = 0; r < rounds; ++r) {
    fs::path root = base / fmt::format("inc{}-{}", constructs, r);
    const int salt = 1000 + r;  // a fresh edit each round: always a miss
    // Split: the other constructs are on disk; compile only the edited one.
    qd::init(
        {.arch = qd::arch::cpu, .offline_cache_file_path = root.string(), .per_offload = qd::per_offload_mode::on});
    make_kernel("big", constructs, 0).compile();
    qd::init(
        {.arch = qd::arch::cpu, .offline_cache_file_path = root.string(), .per_offload = qd::per_offload_mode::on});
    auto edited = make_kernel("big", constructs, 0, constructs / 2, salt);
    split.push_back(ms([&] { edited.compile(); }));
    auto o = edited.per_offload_cache_observations();
    if (o.constructs_compiled != 1 || o.constructs_loaded != constructs - 1)
      fmt::print("  WARNING: split compiled {} loaded {}\n", o.constructs_compiled, o.constructs_loaded);
    // Whole kernel: the edit recompiles everything.
    qd::init(
        {.arch = qd::arch::cpu, .offline_cache_file_path = root.string(), .per_offload = qd::per_offload_mode::off});
    auto edited_whole = make_kernel("big", constructs, 0, constructs / 2, salt);
    whole.push_back(ms([&] { edited_whole.compile(); }));
    // The limit: the edited construct alone, as its own one-construct kernel.
    qd::init(
        {.arch = qd::arch::cpu, .offline_cache_file_path = root.string(), .per_offload = qd::per_offload_mode::off});
    auto single = make_kernel("single", 1, 0, 0, salt + 500);
    alone.push_back(ms([&] { single.compile(); }));
    qd::reset();
    fs::remove_all(root);
  }
  fmt::print(
      "  {:2} constructs, one edited: split {:6.1f} ms, whole kernel {:6.1f} ms (split/whole {:.2f}); the "
      "edited construct alone {:5.1f} ms (split/alone {:.2f}, target <= 1.3)\n",
      constructs, median(split), median(whole), median(split) / median(whole), median(alone),
      median(split) / median(alone));
}

// A 16-construct kernel whose first four constructs reduce into top-level variables that
// the other twelve read (issue 15): editing a reader recompiles it alone; editing a
// reducer's update moves its sum's slot, so the sum's initialisation, the reducer and
// its three readers recompile.
void incremental_reductions(const fs::path& base, int rounds) {
  for (int edited : {9, 1}) {
    std::vector<double> split, whole, alone;
    edit_round last;
    for (int r = 0; r < rounds; ++r) {
      fs::path root = base / fmt::format("red-{}-{}", edited, r);
      last = reduction_edit_round(
          [&](qd::per_offload_mode mode) {
            return qd::config{.arch = qd::arch::cpu, .offline_cache_file_path = root.string(), .per_offload = mode};
          },
          16, edited, 2000 + r);
      split.push_back(last.split), whole.push_back(last.whole), alone.push_back(last.alone);
      fs::remove_all(root);
    }
    fmt::print(
        "  16 constructs, 4 reductions read later, {} edited: split {:6.1f} ms ({} of {} tasks compiled), whole "
        "kernel {:6.1f} ms (split/whole {:.2f}); one construct alone {:5.1f} ms (split/alone {:.2f}, target "
        "<= 1.3 for a reader)\n",
        edited < 4 ? "a reducer" : "a reader", median(split), last.compiled, last.tasks, median(whole),
        median(split) / median(whole), median(alone), median(split) / median(alone));
  }
}

void cold_compile(const fs::path& base, int constructs, int rounds) {
  std::vector<double> split, whole;
  for (int r = 0; r < rounds; ++r) {
    for (bool s : {true, false}) {
      fs::path root = base / fmt::format("cold{}-{}-{}", constructs, r, s);
      qd::init({.arch = qd::arch::cpu,
                .offline_cache_file_path = root.string(),
                .per_offload = s ? qd::per_offload_mode::on : qd::per_offload_mode::off});
      auto k = make_kernel("cold", constructs, 7 + r);
      (s ? split : whole).push_back(ms([&] { k.compile(); }));
      qd::reset();
      fs::remove_all(root);
    }
  }
  fmt::print("  cold compile of {} constructs: split {:.1f} ms, whole {:.1f} ms (split/whole {:.2f})\n", constructs,
             median(split), median(whole), median(split) / median(whole));
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  fs::path base = fs::temp_directory_path() / fmt::format("qd-cache-flow-{}", ::getpid());
  qd::set_log_level(qd::log_level::warn);
  fmt::print("Quadrants cache flow benchmark, CPU backend (host C++ compiler), medians of {} rounds\n", rounds);
  warm_process(base / "warm");
  for (int n : {16, 64}) incremental(base, n, rounds);
  incremental_reductions(base, rounds);
  cold_compile(base, 16, rounds);
  fs::remove_all(base);
  return 0;
}
