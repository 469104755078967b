// qd_fuzz: an open-ended differential fuzzing campaign (make fuzz). Generates kernels,
// checks each on the reference backend (and every Nth on the CPU), shrinks and saves
// what it finds, and prints its figures as it goes and at the end.
//
//   qd_fuzz [--seed S] [--kernels N] [--seconds T] [--cpu-every K] [--save DIR] [--replay FILE]
//           [--gpu cuda|amdgpu|vulkan]   (each comparable kernel on that GPU too; see gpu_comparable)
// The tests' shared precompiled header (tests/CMakeLists.txt) brings doctest's
// declarations into every TU, and their static test-suite registration refers to
// doctest's implementation: this program, which has no doctest main, implements it.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "fuzz/differential.hpp"
#include "fuzz/kernel_generator.hpp"
#include "fuzz/shrink.hpp"

namespace {

struct options {
  std::uint64_t seed = 0;
  long kernels = 0;     // 0: until --seconds (or forever)
  double seconds = 0;   // 0: until --kernels
  long cpu_every = 25;  // 0: never
  std::string save;     // where shrunk findings go
  std::string replay;   // check one .qdfuzz file and exit
  int shrink_budget = 400;
  int explain = 0;              // shrink and print this many unnecessary fallbacks, then stop
  std::optional<qd::arch> gpu;  // also run on this GPU, whole and split
};

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: qd_fuzz [--seed S] [--kernels N] [--seconds T] [--cpu-every K] [--save DIR] [--replay FILE]\n"
               "               [--shrink-budget N] [--explain-fallbacks N] [--gpu cuda|amdgpu|vulkan]\n");
  std::exit(2);
}

options parse(int argc, char** argv) {
  options o;
  o.seed = static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) & 0xffffffffu;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    if (a == "--seed")
      o.seed = std::stoull(value());
    else if (a == "--kernels")
      o.kernels = std::stol(value());
    else if (a == "--seconds")
      o.seconds = std::stod(value());
    else if (a == "--cpu-every")
      o.cpu_every = std::stol(value());
    else if (a == "--save")
      o.save = value();
    else if (a == "--replay")
      o.replay = value();
    else if (a == "--shrink-budget")
      o.shrink_budget = std::stoi(value());
    else if (a == "--explain-fallbacks")
      o.explain = std::stoi(value());
    else if (a == "--gpu") {
      const std::string g = value();
      if (g != "cuda" && g != "amdgpu" && g != "vulkan") usage();
      o.gpu = g == "cuda" ? qd::arch::cuda : g == "amdgpu" ? qd::arch::amdgpu : qd::arch::vulkan;
      qd_fuzz::gpu_under_test() = o.gpu;
    } else
      usage();
  }
  return o;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  options o = parse(argc, argv);
  if (!o.replay.empty()) {
    qd_fuzz::fuzz_case c = qd_fuzz::from_file_text(read_file(o.replay));
    qd_fuzz::case_report r;
    for (int opt = 0; opt <= 3 && r.what == qd_fuzz::finding::none; ++opt) {
      qd_fuzz::check_options co;
      co.cpu = true;
      co.opt_level = opt;
      co.gpu = o.gpu;  // --gpu: the replay runs on it too
      r = qd_fuzz::check(c, co);
    }
    std::printf("%s\ndecision: %s\nfinding: %s %s\n", qd::ir::to_text(c.fn).c_str(),
                std::string(qd::name(r.decision)).c_str(), qd_fuzz::name(r.what), r.detail.c_str());
    return r.what == qd_fuzz::finding::none ? 0 : 1;
  }
  std::printf("qd_fuzz: seed %llu%s\n", static_cast<unsigned long long>(o.seed),
              o.kernels ? (", " + std::to_string(o.kernels) + " kernels").c_str() : "");
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  qd_fuzz::figures f;
  double last_report = 0;
  for (long k = 0;; ++k) {
    if (o.kernels && k >= o.kernels) break;
    if (o.seconds > 0 && elapsed() >= o.seconds) break;
    const std::uint64_t seed = o.seed + static_cast<std::uint64_t>(k);
    qd_fuzz::fuzz_case c = qd_fuzz::generate(seed);
    qd_fuzz::check_options co;
    co.cpu = o.cpu_every > 0 && k % o.cpu_every == 0;
    co.opt_level = o.cpu_every > 0 ? static_cast<int>((k / o.cpu_every) % 4) : 2;  // each CPU case at the next level
    if (o.gpu && qd_fuzz::gpu_comparable(c)) co.gpu = o.gpu;
    qd_fuzz::case_report r;
    try {
      r = qd_fuzz::check(c, co);
    } catch (const std::exception& e) {
      std::printf("seed %llu: the check itself failed: %s\n", static_cast<unsigned long long>(seed), e.what());
      r.what = qd_fuzz::finding::invalid_kernel;
      r.detail = e.what();
    }
    f.add(c, r);
    if (o.explain > 0 && r.what == qd_fuzz::finding::none && r.unchecked_equal.value_or(false)) {
      // A fallback the split did not need: shrink it while it stays so, to see why.
      const auto reason = r.decision;
      qd_fuzz::fuzz_case small = qd_fuzz::shrink(
          c,
          [&](const qd_fuzz::fuzz_case& x) {
            try {
              auto rx = qd_fuzz::check(x, {});
              return rx.what == qd_fuzz::finding::none && rx.decision == reason && rx.unchecked_equal.value_or(false);
            } catch (const qd::error&) {
              return false;
            }
          },
          o.shrink_budget);
      std::printf("\nseed %llu: an unnecessary %s fallback, shrunk to %zu nodes:\n%s",
                  static_cast<unsigned long long>(seed), std::string(qd::name(reason)).c_str(), small.fn.nodes.size(),
                  qd::ir::to_text(small.fn).c_str());
      if (--o.explain == 0) break;
      continue;
    }
    if (r.what != qd_fuzz::finding::none) {
      std::printf("\nseed %llu: %s: %s\n", static_cast<unsigned long long>(seed), qd_fuzz::name(r.what),
                  r.detail.c_str());
      qd_fuzz::fuzz_case small = c;
      if (r.what != qd_fuzz::finding::invalid_kernel) {
        const auto what = r.what;
        const int opt = co.opt_level;
        small = qd_fuzz::shrink(
            c, [&](const qd_fuzz::fuzz_case& x) { return qd_fuzz::still_shows(x, what, opt); }, o.shrink_budget);
      }
      small.note = "seed " + std::to_string(seed) + " (qd_fuzz --seed " + std::to_string(seed) +
                   " --kernels 1); finding: " + qd_fuzz::name(r.what) + "\n" + r.detail;
      std::printf("shrunk to %zu nodes:\n%s", small.fn.nodes.size(), qd::ir::to_text(small.fn).c_str());
      if (!o.save.empty()) {
        std::filesystem::create_directories(o.save);
        std::string path = o.save + "/seed_" + std::to_string(seed) + ".qdfuzz";
        std::ofstream(path) << qd_fuzz::to_file_text(small);
        std::printf("saved %s\n", path.c_str());
      }
      std::fflush(stdout);
    }
    if (elapsed() - last_report >= 30) {
      last_report = elapsed();
      std::printf("[%.0f s]\n%s", elapsed(), f.text().c_str());
      std::fflush(stdout);
    }
  }
  std::printf("\nqd_fuzz: %.1f s, seeds %llu..%llu\n%s", elapsed(), static_cast<unsigned long long>(o.seed),
              static_cast<unsigned long long>(o.seed + static_cast<std::uint64_t>(f.kernels) - 1), f.text().c_str());
  return f.mismatches() == 0 ? 0 : 1;
}
