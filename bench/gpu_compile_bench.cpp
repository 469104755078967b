// What per-offload caching buys on the GPU backends, measured in compile-only mode
// (no GPU needed: NVRTC and hipRTC compile for sm_90 and gfx90a anywhere): the
// incremental recompile of a 16- and 64-construct kernel after editing one
// construct (split against whole-kernel, and against the edited construct alone),
// the cold compile (split against whole), NVRTC's --minimal, and a warm process
// (qd::init to every kernel ready from the cache) run in a fresh child process
// that must not even load NVRTC. Configurations are interleaved; figures are medians.
#include <quadrants/quadrants.hpp>

#include "bench_support.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "quadrants/backend/amdgpu/hiprtc.hpp"
#include "quadrants/backend/cuda/nvrtc.hpp"
#include "quadrants/backend/cuda/prelude.hpp"

namespace {

using namespace qd_bench;  // bench_support.hpp

namespace fs = std::filesystem;
// The compile-only target of one GPU compiler.
struct target {
  const char* compiler;  // "NVRTC", "hipRTC"
  qd::arch arch;
  qd::config config(const fs::path& root, qd::per_offload_mode mode) const {
    qd::config c{.arch = arch,
                 .offline_cache_file_path = root.string(),
                 .per_offload = mode,
                 .compile_only = true,
                 .enable_fallback = false};
    qd_bench::target_benchmark_gpu(c);
    return c;
  }
};

bool library_mapped(std::string_view name) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find(name) != std::string::npos;
}

constexpr int warm_kernels = 20;

// The program of the warm measurement: compile-only for sm_90, or on the GPU
// (modules are then loaded by the driver too).
qd::config warm_config(const fs::path& root, bool on_gpu) {
  if (on_gpu) return {.arch = qd::arch::cuda, .offline_cache_file_path = root.string(), .enable_fallback = false};
  return {.arch = qd::arch::cuda,
          .offline_cache_file_path = root.string(),
          .compile_only = true,
          .cuda_arch = 90,
          .enable_fallback = false};
}

// The child process of the warm measurement: every entry is on disk already.
int warm_child(const fs::path& root, bool on_gpu) {
  double t = ms([&] {
    qd::init(warm_config(root, on_gpu));
    for (int k = 0; k < warm_kernels; ++k) make_kernel(fmt::format("k{}", k), 2, k).compile();
  });
  auto s = qd::offline_cache_statistics();
  fmt::print(
      "  warm process{}, {} kernels x 2 constructs: qd::init to all ready {:.2f} ms; compiler runs {}, disk "
      "hits {}; libnvrtc mapped in the process: {}\n",
      on_gpu ? " on the GPU (modules loaded)" : "", warm_kernels, t, s.compiles, s.hits,
      library_mapped("libnvrtc") ? "YES (unexpected)" : "no");
  return s.compiles == 0 && !library_mapped("libnvrtc") ? 0 : 1;
}

void warm_process(const fs::path& root, const std::string& self, bool on_gpu) {
  double cold = ms([&] {
    qd::init(warm_config(root, on_gpu));
    for (int k = 0; k < warm_kernels; ++k) make_kernel(fmt::format("k{}", k), 2, k).compile();
  });
  fmt::print("  cold process{}, {} kernels x 2 constructs: {:.0f} ms, compiler runs {}\n", on_gpu ? " on the GPU" : "",
             warm_kernels, cold, qd::offline_cache_statistics().compiles);
  qd::reset();
  std::fflush(stdout);
  for (int run = 0; run < 2; ++run) {
    std::string command =
        fmt::format("'{}' --warm-child '{}' {}", self, root.string(), on_gpu ? "gpu" : "compile-only");
    if (std::system(command.c_str()) != 0) fmt::print("  WARNING: the warm child compiled or loaded NVRTC\n");
  }
}

bool cuda_gpu_present() {
  try {
    qd::init({.arch = qd::arch::cuda, .offline_cache = false, .enable_fallback = false});
    qd::reset();
    return true;
  } catch (const qd::error&) {
    return false;
  }
}

void incremental(const target& t, const fs::path& base, int constructs, int rounds) {
  std::vector<double> split, whole, alone;
  for (int r = 0; r < rounds; ++r) {
    fs::path root = base / fmt::format("inc-{}-{}-{}", t.compiler, constructs, r);
    const int salt = 1000 + r;  // a fresh edit each round: always a miss
    qd::init(t.config(root, qd::per_offload_mode::on));
    make_kernel("big", constructs, 0).compile();
    qd::init(t.config(root, qd::per_offload_mode::on));
    auto edited = make_kernel("big", constructs, 0, constructs / 2, salt);
    split.push_back(ms([&] { edited.compile(); }));
    auto o = edited.per_offload_cache_observations();
    if (o.constructs_compiled != 1 || o.constructs_loaded != constructs - 1)
      fmt::print("  WARNING: split compiled {} loaded {}\n", o.constructs_compiled, o.constructs_loaded);
    qd::init(t.config(root, qd::per_offload_mode::off));
    auto edited_whole = make_kernel("big", constructs, 0, constructs / 2, salt);
    whole.push_back(ms([&] { edited_whole.compile(); }));
    qd::init(t.config(root, qd::per_offload_mode::off));
    auto single = make_kernel("single", 1, 0, 0, salt + 500);
    alone.push_back(ms([&] { single.compile(); }));
    qd::reset();
    fs::remove_all(root);
  }
  fmt::print(
      "  {} {:2} constructs, one edited: split {:6.1f} ms, whole kernel {:6.1f} ms (split/whole {:.2f}); the "
      "edited construct alone {:5.1f} ms (split/alone {:.2f}, target <= 1.3)\n",
      t.compiler, constructs, median(split), median(whole), median(split) / median(whole), median(alone),
      median(split) / median(alone));
}

// The 16-construct kernel with four reductions read by later constructs (issue 15),
// one reader or one reducer edited; see cache_flow_bench.cpp.
void incremental_reductions(const target& t, const fs::path& base, int rounds) {
  for (int edited : {9, 1}) {
    std::vector<double> split, whole, alone;
    edit_round last;
    for (int r = 0; r < rounds; ++r) {
      fs::path root = base / fmt::format("red-{}-{}-{}", t.compiler, edited, r);
      last =
          reduction_edit_round([&](qd::per_offload_mode mode) { return t.config(root, mode); }, 16, edited, 2000 + r);
      split.push_back(last.split), whole.push_back(last.whole), alone.push_back(last.alone);
      fs::remove_all(root);
    }
    fmt::print(
        "  {} 16 constructs, 4 reductions read later, {} edited: split {:6.1f} ms ({} of {} tasks compiled), "
        "whole kernel {:6.1f} ms (split/whole {:.2f}); one construct alone {:5.1f} ms (split/alone {:.2f}, "
        "target <= 1.3 for a reader)\n",
        t.compiler, edited < 4 ? "a reducer" : "a reader", median(split), last.compiled, last.tasks, median(whole),
        median(split) / median(whole), median(alone), median(split) / median(alone));
  }
}

// Split (with the default num_compile_threads, and with one: a single program)
// against whole, each from a cold cache.
void cold_compile(const target& t, const fs::path& base, int constructs, int rounds) {
  std::vector<double> split, split_one, whole;
  for (int r = 0; r < rounds; ++r) {
    for (int variant = 0; variant < 3; ++variant) {
      fs::path root = base / fmt::format("cold-{}-{}-{}-{}", t.compiler, constructs, r, variant);
      qd::config c = t.config(root, variant < 2 ? qd::per_offload_mode::on : qd::per_offload_mode::off);
      if (variant == 1) c.num_compile_threads = 1;
      qd::init(c);
      auto k = make_kernel("cold", constructs, 7 + r);
      std::vector<double>& out = variant == 0 ? split : variant == 1 ? split_one : whole;
      out.push_back(ms([&] { k.compile(); }));
      qd::reset();
      fs::remove_all(root);
    }
  }
  const std::string threads = t.arch == qd::arch::cuda
                                  ? fmt::format("{} compile threads", std::thread::hardware_concurrency())
                                  : std::string("hipRTC compiles one program at a time");
  fmt::print(
      "  {} cold compile of {} constructs: split {:.1f} ms ({}), split as one program {:.1f} ms, whole {:.1f} "
      "ms (split/whole {:.2f} and {:.2f}, target <= 1.15)\n",
      t.compiler, constructs, median(split), threads, median(split_one), median(whole), median(split) / median(whole),
      median(split_one) / median(whole));
}

// The CUDA prelude and `tasks` generated-style tasks of ~30 float operations; `salt`
// makes each program new to NVRTC.
std::string prelude_and_tasks(int tasks, int salt) {
  std::string source = qd::backend::cuda::translation_unit_prelude();
  for (int t = 0; t < tasks; ++t) {
    source += fmt::format(R"(
struct t{0}_frame {{ qd_i64 qd_base; qd_i64 qd_dims[4]; qd_i64 qd_count; }};
QD_FN void t{0}_prologue(const qd_ctx* ctx, t{0}_frame* f) {{
  f->qd_base = 0; f->qd_dims[0] = ctx->arrays[3].shape[0]; f->qd_count = f->qd_dims[0] > 0 ? f->qd_dims[0] : 0;
}}
QD_PARALLEL_BEGIN(t{0}, 1, QD_BLOCK)
  const qd_i32 i = qd_i0;
  const qd_f32 p = ((qd_f32*)ctx->arrays[0].data)[i], q = ((qd_f32*)ctx->arrays[1].data)[i], s = ((qd_f32*)ctx->arrays[2].data)[i];
  qd_f32 acc = p * q + s * {1}.0f;
  for (int k = 0; k < 9; ++k) acc = acc * p - q * s + acc * 0.5f;
  ((qd_f32*)ctx->arrays[3].data)[i] = acc;
QD_PARALLEL_END(t{0}, 1, 0)
)",
                          t, t + 1 + salt * 1000);
  }
  return source;
}

std::vector<std::byte> nvrtc_compile(const std::string& source, qd::backend::cuda::nvrtc_options options) {
  return qd::backend::cuda::compile_cubin(source, options, "bench");
}

// NVRTC's --minimal (the prelude inline).
void minimal_option(int tasks, int rounds) {
  const std::string source = prelude_and_tasks(tasks, 0);
  std::vector<double> with, without;
  for (int r = 0; r < rounds; ++r)
    for (bool minimal : {true, false})
      (minimal ? with : without).push_back(ms([&] {
        nvrtc_compile(source, {.sm = 90, .minimal = minimal, .precompiled_prelude = false});
      }));
  fmt::print("  NVRTC --minimal, prelude + {:2} task(s): {:6.1f} ms with, {:6.1f} ms without ({:.2f}x)\n", tasks,
             median(with), median(without), median(with) / median(without));
}

// The first compile of a fresh process with the precompiled prelude (it creates the
// header) against the same program with the prelude inline, after one warm-up compile:
// "<first> <inline>" on stdout.
int pch_first_child(int salt) {
  nvrtc_compile(prelude_and_tasks(1, salt + 1), {.precompiled_prelude = false});
  const std::string source = prelude_and_tasks(1, salt);
  const double first = ms([&] { nvrtc_compile(source, {}); });
  const double plain = ms([&] { nvrtc_compile(source, {.precompiled_prelude = false}); });
  fmt::print("{} {}\n", first, plain);
  return qd::backend::cuda::nvrtc_prelude_pch_statistics().created == 1 ? 0 : 1;
}

// The prelude precompiled once per process against inline, per program of 1, 16 and 64
// tasks (every program new to NVRTC), interleaved, with the code compared; then the
// fixed cost of creating the header, in fresh processes.
void precompiled_prelude(const std::string& self, int rounds) {
  namespace cu = qd::backend::cuda;
  if (!cu::nvrtc_prelude_pch_statistics().supported) {
    fmt::print("  NVRTC precompiled prelude: skipped, NVRTC {} has no precompiled headers (12.8+)\n",
               cu::nvrtc_version());
    return;
  }
  int salt = 100;
  nvrtc_compile(prelude_and_tasks(1, salt++), {});  // creates it
  for (int tasks : {1, 16, 64}) {
    std::vector<double> inline_ms, pch_ms;
    bool same = true;
    for (int r = 0; r < rounds; ++r) {
      const std::string source = prelude_and_tasks(tasks, salt++);
      std::vector<std::byte> a, b;
      inline_ms.push_back(ms([&] { a = nvrtc_compile(source, {.precompiled_prelude = false}); }));
      pch_ms.push_back(ms([&] { b = nvrtc_compile(source, {}); }));
      same = same && a == b;
    }
    fmt::print(
        "  NVRTC prelude + {:2} task(s): inline {:7.1f} ms, precompiled {:7.1f} ms ({:.2f}x); per task {:5.1f} "
        "against {:5.1f} ms; saved {:5.1f} ms per program; same CUBIN: {}\n",
        tasks, median(inline_ms), median(pch_ms), median(pch_ms) / median(inline_ms), median(inline_ms) / tasks,
        median(pch_ms) / tasks, median(inline_ms) - median(pch_ms), same ? "yes" : "NO");
  }
  std::vector<double> first, plain;
  for (int r = 0; r < rounds; ++r) {
    const std::string command = fmt::format("'{}' --pch-first {}", self, 500 + r);
    std::FILE* child = ::popen(command.c_str(), "r");
    double f = 0, p = 0;
    if (child && std::fscanf(child, "%lf %lf", &f, &p) == 2) first.push_back(f), plain.push_back(p);
    if (child) ::pclose(child);
  }
  if (!first.empty())
    fmt::print(
        "  NVRTC precompiled prelude, first compile of a process (creates it), 1 task: {:.1f} ms against {:.1f} ms "
        "inline (fixed cost {:+.1f} ms, once per process)\n",
        median(first), median(plain), median(first) - median(plain));
}

// Candidate NVRTC options on top of the backend's (precompiled prelude, 16 tasks): time
// against without, and whether the CUBIN is the same.
void option_candidates(int rounds) {
  for (const char* option :
       {"-dopt=on", "-default-device", "--extra-device-vectorization", "--Ofast-compile=min", "--Ofast-compile=max"}) {
    std::vector<double> base_ms, with_ms;
    bool same = true;
    for (int r = 0; r < rounds; ++r) {
      const std::string source = prelude_and_tasks(16, 700 + r);
      std::vector<std::byte> a, b;
      base_ms.push_back(ms([&] { a = nvrtc_compile(source, {}); }));
      with_ms.push_back(ms([&] { b = nvrtc_compile(source, {.extra = {option}}); }));
      same = same && a == b;
    }
    fmt::print("  NVRTC {:30} 16 tasks: {:6.1f} ms against {:6.1f} ms without ({:.2f}x); same CUBIN: {}\n", option,
               median(with_ms), median(base_ms), median(with_ms) / median(base_ms), same ? "yes" : "no");
  }
}

bool available(const qd::backend::library_search& s, const char* what) {
  try {
    fmt::print("{}: {}\n", what, qd::backend::locate_library(s));
    return true;
  } catch (const qd::error& e) {
    fmt::print("{}: skipped, not installed ({})\n", what, e.what());
    return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  qd::set_log_level(qd::log_level::warn);
  if (argc > 3 && std::string(argv[1]) == "--warm-child") return warm_child(argv[2], std::string(argv[3]) == "gpu");
  if (argc > 2 && std::string(argv[1]) == "--pch-first") return pch_first_child(std::atoi(argv[2]));
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  fs::path base = fs::temp_directory_path() / fmt::format("qd-gpu-compile-{}", ::getpid());
  fmt::print("Quadrants GPU compile benchmark, compile-only mode (sm_90, gfx90a), medians of {} rounds\n", rounds);
  const target nvrtc{"NVRTC", qd::arch::cuda};
  const target hiprtc{"hipRTC", qd::arch::amdgpu};
  if (available(qd::backend::cuda::nvrtc_library(), "NVRTC")) {
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    fmt::print("  NVRTC {}\n", qd::backend::cuda::nvrtc_version());
    precompiled_prelude(self, rounds);
    warm_process(base / "warm", self, false);
    if (cuda_gpu_present())
      warm_process(base / "warm-gpu", self, true);
    else
      fmt::print("  warm process on the GPU: skipped, no CUDA GPU here\n");
    for (int tasks : {1, 16}) minimal_option(tasks, rounds);
    option_candidates(rounds);
    for (int n : {16, 64}) incremental(nvrtc, base, n, rounds);
    ::setenv("QD_NVRTC_PCH", "0", 1);  // the same with the prelude inline
    fmt::print("  the same with QD_NVRTC_PCH=0 (prelude inline):\n");
    for (int n : {16, 64}) incremental(nvrtc, base, n, rounds);
    ::unsetenv("QD_NVRTC_PCH");
    incremental_reductions(nvrtc, base, rounds);
    cold_compile(nvrtc, base, 16, rounds);
    const auto pch = qd::backend::cuda::nvrtc_prelude_pch_statistics();
    fmt::print("  NVRTC programs of this process with the precompiled prelude: {} ({} created it), fallbacks {}\n",
               pch.programs, pch.created, pch.fallbacks);
  }
  if (available(qd::backend::amdgpu::hiprtc_library(), "hipRTC")) {
    incremental(hiprtc, base, 16, rounds);
    cold_compile(hiprtc, base, 16, rounds);
  }
  fs::remove_all(base);
  return 0;
}
