// What per-offload caching buys on the GPU backends, measured in compile-only mode
// (no GPU needed: NVRTC and hipRTC compile for sm_90 and gfx90a anywhere): the
// incremental recompile of a 16- and 64-construct kernel after editing one
// construct (split against whole-kernel, and against the edited construct alone),
// the cold compile (split against whole), and a warm process (qd::init to every
// kernel ready from the cache) run in a fresh child process that must not even
// load NVRTC. Configurations are interleaved; figures are medians.
#include <quadrants/quadrants.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "quadrants/backend/amdgpu/hiprtc.hpp"
#include "quadrants/backend/cuda/nvrtc.hpp"

namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

double ms(const std::function<void()>& f) {
  auto t0 = clock_type::now();
  f();
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The compile-only target of one GPU compiler.
struct target {
  const char* compiler;  // "NVRTC", "hipRTC"
  qd::arch arch;
  qd::config config(const fs::path& root, qd::per_offload_mode mode) const {
    qd::config c{.arch = arch, .offline_cache_file_path = root.string(), .per_offload = mode, .compile_only = true,
                 .enable_fallback = false};
    if (arch == qd::arch::cuda) c.cuda_arch = 90;
    else c.amdgpu_arch = "gfx90a";
    return c;
  }
};

// A construct of about 30 floating-point operations reading three arrays, as in
// LIMITS.md and bench/cache_flow_bench.cpp; `salt` makes constructs differ.
void construct(qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> b, qd::types::ndarray<float, 1> c,
               qd::types::ndarray<float, 1> out, int salt) {
  qd::range_for(out.shape(0), [&](qd::i32 i) {
    qd::f32 p = a[i], q = b[i], s = c[i];
    qd::f32 acc = p * q + s * static_cast<float>(salt + 1);
    for (int k = 0; k < 9; ++k) acc = acc * p - q * s + acc * 0.5f;
    out[i] = acc;
  });
}

auto make_kernel(std::string name, int n, int kernel_salt, int edited = -1, int edit_salt = 0) {
  return qd::kernel(std::move(name), [=](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> b,
                                         qd::types::ndarray<float, 1> c, qd::types::ndarray<float, 1> out) {
    for (int k = 0; k < n; ++k) construct(a, b, c, out, k == edited ? edit_salt : kernel_salt * 100 + k);
  });
}

bool library_mapped(std::string_view name) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find(name) != std::string::npos;
}

constexpr int warm_kernels = 20;

// The child process of the warm measurement: every entry is on disk already.
int warm_child(const fs::path& root) {
  double t = ms([&] {
    qd::init({.arch = qd::arch::cuda, .offline_cache_file_path = root.string(), .compile_only = true,
              .cuda_arch = 90, .enable_fallback = false});
    for (int k = 0; k < warm_kernels; ++k) make_kernel(fmt::format("k{}", k), 2, k).compile();
  });
  auto s = qd::offline_cache_statistics();
  fmt::print("  warm process, {} kernels x 2 constructs: qd::init to all ready {:.2f} ms; compiler runs {}, disk hits "
             "{}; libnvrtc mapped in the process: {}\n",
             warm_kernels, t, s.compiles, s.hits, library_mapped("libnvrtc") ? "YES (unexpected)" : "no");
  return s.compiles == 0 && !library_mapped("libnvrtc") ? 0 : 1;
}

void warm_process(const fs::path& root, const std::string& self) {
  double cold = ms([&] {
    qd::init({.arch = qd::arch::cuda, .offline_cache_file_path = root.string(), .compile_only = true, .cuda_arch = 90,
              .enable_fallback = false});
    for (int k = 0; k < warm_kernels; ++k) make_kernel(fmt::format("k{}", k), 2, k).compile();
  });
  fmt::print("  cold process, {} kernels x 2 constructs: {:.0f} ms, compiler runs {}\n", warm_kernels, cold,
             qd::offline_cache_statistics().compiles);
  qd::reset();
  std::fflush(stdout);
  for (int run = 0; run < 2; ++run) {
    std::string command = fmt::format("'{}' --warm-child '{}'", self, root.string());
    if (std::system(command.c_str()) != 0) fmt::print("  WARNING: the warm child compiled or loaded NVRTC\n");
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
  fmt::print("  {} {:2} constructs, one edited: split {:6.1f} ms, whole kernel {:6.1f} ms (split/whole {:.2f}); the "
             "edited construct alone {:5.1f} ms (split/alone {:.2f}, target <= 1.3)\n",
             t.compiler, constructs, median(split), median(whole), median(split) / median(whole), median(alone),
             median(split) / median(alone));
}

void cold_compile(const target& t, const fs::path& base, int constructs, int rounds) {
  std::vector<double> split, whole;
  for (int r = 0; r < rounds; ++r) {
    for (bool s : {true, false}) {
      fs::path root = base / fmt::format("cold-{}-{}-{}-{}", t.compiler, constructs, r, s);
      qd::init(t.config(root, s ? qd::per_offload_mode::on : qd::per_offload_mode::off));
      auto k = make_kernel("cold", constructs, 7 + r);
      (s ? split : whole).push_back(ms([&] { k.compile(); }));
      qd::reset();
      fs::remove_all(root);
    }
  }
  fmt::print("  {} cold compile of {} constructs: split {:.1f} ms, whole {:.1f} ms (split/whole {:.2f}, target <= "
             "1.15)\n",
             t.compiler, constructs, median(split), median(whole), median(split) / median(whole));
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
  if (argc > 2 && std::string(argv[1]) == "--warm-child") return warm_child(argv[2]);
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  fs::path base = fs::temp_directory_path() / fmt::format("qd-gpu-compile-{}", ::getpid());
  fmt::print("Quadrants GPU compile benchmark, compile-only mode (sm_90, gfx90a), medians of {} rounds\n", rounds);
  const target nvrtc{"NVRTC", qd::arch::cuda};
  const target hiprtc{"hipRTC", qd::arch::amdgpu};
  if (available(qd::backend::cuda::nvrtc_library(), "NVRTC")) {
    warm_process(base / "warm", fs::read_symlink("/proc/self/exe").string());
    fmt::print("  NVRTC {}\n", qd::backend::cuda::nvrtc_version());
    for (int n : {16, 64}) incremental(nvrtc, base, n, rounds);
    cold_compile(nvrtc, base, 16, rounds);
  }
  if (available(qd::backend::amdgpu::hiprtc_library(), "hipRTC")) {
    incremental(hiprtc, base, 16, rounds);
    cold_compile(hiprtc, base, 16, rounds);
  }
  fs::remove_all(base);
  return 0;
}
