// What a launch costs on the emulated GPUs against the CPU backend (issue 16's target:
// a 1M-element saxpy at most 10x the CPU backend's time per call). The same kernel on
// arch = cpu, cuda and amdgpu (each one present; run it under scripts/with-emulated-gpu),
// medians of `rounds` rounds of 20 calls. The emulated default stream runs a launch
// before cuLaunchKernel returns, so a call's time is its whole run.
#include <quadrants/quadrants.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "bench_support.hpp"

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  const std::int64_t n = std::int64_t{1} << 20;
  qd::set_log_level(qd::log_level::warn);
  const auto cache = std::filesystem::temp_directory_path() / fmt::format("qd-emulated-bench-{}", ::getpid());
  fmt::print("Emulated GPU launch cost: saxpy over 2^20 floats, medians of {} rounds of 20 calls\n", rounds);
  double cpu_ms = 0;
  struct target {
    qd::arch arch;
    const char* name;
  };
  for (target t : {target{qd::arch::cpu, "cpu"}, target{qd::arch::cuda, "cuda"}, target{qd::arch::amdgpu, "amdgpu"}}) {
    try {
      qd::init({.arch = t.arch, .offline_cache_file_path = cache.string(), .enable_fallback = false});
    } catch (const qd::error& e) {
      fmt::print("  {}: skipped ({})\n", t.name, e.what());
      continue;
    }
    auto saxpy = qd::kernel("saxpy", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y, qd::f32 a) {
      qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = a * x[i] + y[i]; });
    });
    std::vector<float> hx(static_cast<std::size_t>(n)), hy(static_cast<std::size_t>(n), 1.0f);
    for (std::int64_t i = 0; i < n; ++i) hx[static_cast<std::size_t>(i)] = static_cast<float>(i % 1000) * 0.001f;
    qd::ndarray<float, 1> x(n), y(n);
    x.from_host(hx);
    y.from_host(hy);
    const float a = 1.5f;
    saxpy(x, y, a);  // compile and load
    const auto got = y.to_host();
    int wrong = 0;
    for (std::size_t i = 0; i < got.size(); ++i) wrong += got[i] != a * hx[i] + 1.0f;
    std::vector<double> per_call;
    for (int r = 0; r < rounds; ++r)
      per_call.push_back(qd_bench::ms([&] {
                           for (int k = 0; k < 20; ++k) saxpy(x, y, a);
                           (void)y.to_host();
                         }) /
                         20);
    const double ms = qd_bench::median(per_call);
    if (t.arch == qd::arch::cpu) cpu_ms = ms;
    fmt::print("  {}: {:.3f} ms per call{}; results {}\n", t.name, ms,
               t.arch == qd::arch::cpu || cpu_ms == 0
                   ? std::string()
                   : fmt::format(" ({:.1f}x the CPU backend; target <= 10)", ms / cpu_ms),
               wrong == 0 ? "right" : "WRONG");
    qd::reset();
  }
  std::filesystem::remove_all(cache);
  return 0;
}
