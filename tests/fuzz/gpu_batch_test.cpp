// The differential fuzzer's GPU batch (docs/testing.md): generated kernels (200, or
// QD_FUZZ_GPU_KERNELS from seed QD_FUZZ_GPU_SEED) run whole and split on a GPU and compared bitwise with the reference backend's whole
// kernel. In CI the CUDA and AMD GPUs are emulated, their blocks run in order on one host
// thread (tests/emulated_gpus.cmake), and Vulkan is lavapipe (fuzz/vulkan_batch); the
// kernels whose results depend on the order of float additions are left out
// (gpu_comparable), and on Vulkan so are the libm functions (generator_options::libm):
// its own are within their documented ulps of libm's, and an ulp can turn a comparison.
// QD_FUZZ_GPU_TRACE=1 writes each seed to stderr before it runs (a driver that aborts
// the process names no case). QD_FUZZ_GPU=cuda, amdgpu or vulkan picks the GPU; without it CUDA and AMD are tried
// where present, Vulkan only when chosen (make test's fuzz/vulkan_batch). Lavapipe runs
// invocations at once, so kernels whose iterations race on an element (which the
// reference and the emulated GPUs run in order) would differ: on Vulkan every top-level
// loop is serialized (generator_options::serial_loops; docs/testing.md). A GPU that is
// absent is reported skipped.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz/differential.hpp"
#include "fuzz/kernel_generator.hpp"
#include "fuzz/shrink.hpp"

namespace {

bool available(qd::arch arch, const char* name) {
  try {
    qd::init({.arch = arch, .log_level = qd::log_level::error, .enable_fallback = false});
    qd::reset();
    return true;
  } catch (const qd::error& e) {
    const std::string why = std::string("skipped on ") + name + ": " + e.what();
    MESSAGE(why);
    return false;
  }
}

void report(const qd_fuzz::fuzz_case& c, const qd_fuzz::case_report& r) {
  qd_fuzz::fuzz_case small = qd_fuzz::shrink(
      c, [&](const qd_fuzz::fuzz_case& x) { return qd_fuzz::still_shows(x, r.what); }, 300);
  small.note = c.note + "; finding: " + qd_fuzz::name(r.what) + "\n" + r.detail;
  FAIL_CHECK(c.name << ": " << std::string(qd_fuzz::name(r.what)) << ": " << r.detail
                    << "\nshrunk (save it as tests/fuzz/regressions/<what>.qdfuzz):\n"
                    << qd_fuzz::to_file_text(small));
}

struct gpu {
  qd::arch arch;
  const char* name;
  bool libm;          // the generator's libm functions: bit for bit only where they are libm's
  bool serial_loops;  // every top-level loop serialized: where parallel iterations run at once
  bool by_default;    // tried without QD_FUZZ_GPU
};

// The GPUs QD_FUZZ_GPU picks.
std::vector<gpu> gpus_chosen() {
  std::vector<gpu> gpus;
  const char* chosen = std::getenv("QD_FUZZ_GPU");
  for (gpu g : {gpu{qd::arch::cuda, "cuda", true, false, true}, gpu{qd::arch::amdgpu, "amdgpu", true, false, true},
                gpu{qd::arch::vulkan, "vulkan", false, true, false}})
    if ((!chosen || !*chosen) ? g.by_default : std::string(chosen) == g.name) gpus.push_back(g);
  return gpus;
}

}  // namespace

// The cases a GPU batch found (tests/fuzz/gpu_regressions/*.qdfuzz, shrunk): whole and
// split on every GPU the batch runs on give the reference's whole kernel's results.
TEST_CASE("saved GPU findings: whole and split give the reference backend's results on the GPU") {
  const std::vector<gpu> gpus = gpus_chosen();
  REQUIRE_MESSAGE(!gpus.empty(), "QD_FUZZ_GPU must be cuda, amdgpu or vulkan");
  const auto cases = qd_fuzz::saved_cases(QD_FUZZ_GPU_REGRESSIONS);
  REQUIRE(cases.size() >= 3);
  for (const gpu& g : gpus) {
    const std::string gpu_name = g.name;
    CAPTURE(gpu_name);
    if (!available(g.arch, g.name)) continue;
    qd_fuzz::gpu_under_test() = g.arch;
    for (const auto& saved : cases) {
      const std::string& file = saved.first;  // not a structured binding: Clang 14 cannot capture one (CAPTURE)
      const qd_fuzz::fuzz_case& c = saved.second;
      CAPTURE(file);
      qd_fuzz::check_options o;
      o.gpu = g.arch;
      o.unchecked = false;
      o.source = false;
      const qd_fuzz::case_report r = qd_fuzz::check(c, o);
      CHECK_MESSAGE(r.what == qd_fuzz::finding::none, qd_fuzz::name(r.what) << ": " << r.detail);
    }
  }
  qd_fuzz::gpu_under_test().reset();
}

TEST_CASE("generated kernels on a GPU: whole and split give the reference backend's results, bit for bit") {
  const std::vector<gpu> gpus = gpus_chosen();
  REQUIRE_MESSAGE(!gpus.empty(), "QD_FUZZ_GPU must be cuda, amdgpu or vulkan");
  // For a quicker or a longer look; make test runs 50 per GPU, from different seeds.
  const char* count = std::getenv("QD_FUZZ_GPU_KERNELS");
  const long kernels = count && *count ? std::atol(count) : 200;
  const char* first_seed = std::getenv("QD_FUZZ_GPU_SEED");
  const std::uint64_t first = first_seed && *first_seed ? std::strtoull(first_seed, nullptr, 10) : 3000001;
  const char* trace_env = std::getenv("QD_FUZZ_GPU_TRACE");  // each seed on stderr before it runs
  const bool trace = trace_env && *trace_env && std::string(trace_env) != "0";
  for (const gpu& g : gpus) {
    const std::string gpu_name = g.name;  // doctest shows a const char* as its address
    CAPTURE(gpu_name);
    if (!available(g.arch, g.name)) continue;
    qd_fuzz::gpu_under_test() = g.arch;
    qd_fuzz::figures f;
    long left_out = 0;
    std::uint64_t seed = first;
    for (; f.kernels < kernels; ++seed) {
      const qd_fuzz::fuzz_case c = qd_fuzz::generate(seed, {.libm = g.libm, .serial_loops = g.serial_loops});
      if (!qd_fuzz::gpu_comparable(c)) {
        ++left_out;
        continue;
      }
      if (trace) std::fprintf(stderr, "seed %llu\n", static_cast<unsigned long long>(seed));  // a driver may abort
      qd_fuzz::check_options o;
      o.gpu = g.arch;
      o.unchecked = false;  // the reference-only checks belong to the reference batch
      o.source = false;
      const qd_fuzz::case_report r = qd_fuzz::check(c, o);
      f.add(c, r);
      if (r.what != qd_fuzz::finding::none) report(c, r);
    }
    MESSAGE(std::string(g.name) << " batch (seeds " << first << ".." << seed - 1 << ", " << left_out
                                << " left out for float reductions):\n"
                                << f.text());
    CHECK(f.gpu_kernels == kernels);
    CHECK(f.mismatches() == 0);
    CHECK(f.split_ran > kernels / 10);
  }
  qd_fuzz::gpu_under_test().reset();
}
