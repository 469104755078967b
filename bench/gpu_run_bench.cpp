// On a CUDA GPU: generated code against the same kernels written by hand in CUDA
// and compiled by NVRTC with the same options (saxpy, a 5-point stencil; target
// <= 1.05x), and the host-side cost of one kernel call against a bare
// cuLaunchKernel. Without a CUDA GPU it reports a skip and exits 0. With --check
// (the emulated GPUs in CI): small arrays, one round, and exit status 1 if the
// generated and hand-written kernels' results differ.
#include <quadrants/quadrants.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "quadrants/backend/cuda/driver.hpp"
#include "quadrants/backend/cuda/nvrtc.hpp"

namespace {

namespace fs = std::filesystem;
namespace cu = qd::backend::cuda;
using clock_type = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

const char* hand_written = R"(
extern "C" __global__ void hand_saxpy(const float* x, float* y, float a, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void hand_stencil(const float* in, float* out, int h, int w) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= h - 2 || j >= w - 2) return;
  const int c = (i + 1) * w + (j + 1);
  out[c] = 0.5f * in[c] + 0.125f * (in[c - w] + in[c + w] + in[c - 1] + in[c + 1]);
}
extern "C" __global__ void hand_tiny(float* x) { x[0] = x[0] + 1.0f; }
)";

struct hand_module {
  qd::backend::gpu_module module = nullptr;
  qd::backend::gpu_function saxpy = nullptr, stencil = nullptr, tiny = nullptr;
};

int device_sm() {
  const auto& api = cu::driver();
  const char* env = std::getenv("QD_CUDA_DEVICE");
  int dev = 0;
  QD_GPU_CALL(api, device_get, &dev, env && *env ? std::atoi(env) : 0);
  int major = 0, minor = 0;
  QD_GPU_CALL(api, device_attribute, &major, cu::attribute_cc_major, dev);
  QD_GPU_CALL(api, device_attribute, &minor, cu::attribute_cc_minor, dev);
  return major * 10 + minor;
}

// Milliseconds per call of `launch`, over `calls` calls between two synchronizations.
double device_ms(const std::function<void()>& launch, int calls) {
  const auto& api = cu::driver();
  QD_GPU_CALL(api, synchronize);
  auto t0 = clock_type::now();
  for (int k = 0; k < calls; ++k) launch();
  QD_GPU_CALL(api, synchronize);
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count() / calls;
}

// Microseconds of host time per call, for `calls` calls (fewer than the launch
// queue holds, so the host never waits for the GPU); synchronized outside the timing.
double host_us(const std::function<void()>& launch, int calls) {
  const auto& api = cu::driver();
  QD_GPU_CALL(api, synchronize);
  auto t0 = clock_type::now();
  for (int k = 0; k < calls; ++k) launch();
  double us = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count() / calls;
  QD_GPU_CALL(api, synchronize);
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  const bool check = argc > 1 && std::string(argv[1]) == "--check";
  const int rounds = check ? 1 : argc > 1 ? std::atoi(argv[1]) : 7;
  const int calls = check ? 2 : 20;
  bool all_same = true;
  qd::set_log_level(qd::log_level::warn);
  fs::path cache = fs::temp_directory_path() / fmt::format("qd-gpu-run-{}", ::getpid());
  try {
    qd::init({.arch = qd::arch::cuda, .offline_cache_file_path = cache.string(), .enable_fallback = false});
  } catch (const qd::error& e) {
    fmt::print("Quadrants GPU run benchmark: skipped, no CUDA GPU here ({})\n", e.what());
    return 0;
  }
  const auto& api = cu::driver();
  const int sm = device_sm();
  cu::nvrtc_options options;  // the backend's own options for this device
  options.sm = sm;
  options.opt_level = qd::current_settings().opt_level;
  options.fast_math = qd::current_settings().fast_math;
  std::string flags;
  for (const auto& f : cu::nvrtc_flags(options)) flags += f + " ";
  char gpu_name[256] = {};
  QD_GPU_CALL(api, device_name, gpu_name, sizeof(gpu_name) - 1, 0);
  fmt::print("Quadrants GPU run benchmark on {}, sm_{} (NVRTC {}, options {}), medians of {} rounds{}\n", gpu_name, sm,
             cu::nvrtc_version(), flags, rounds, check ? " (--check: small arrays)" : "");

  hand_module hand;
  auto cubin = cu::compile_cubin(hand_written, options, "hand-written kernels");
  QD_GPU_CALL(api, module_load, &hand.module, cubin.data());
  QD_GPU_CALL(api, module_function, &hand.saxpy, hand.module, "hand_saxpy");
  QD_GPU_CALL(api, module_function, &hand.stencil, hand.module, "hand_stencil");
  QD_GPU_CALL(api, module_function, &hand.tiny, hand.module, "hand_tiny");

  // saxpy: y = a * x + y over 2^26 floats (768 MB of traffic per call).
  {
    auto saxpy = qd::kernel("saxpy", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y, qd::f32 a) {
      qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = a * x[i] + y[i]; });
    });
    const std::int64_t n = std::int64_t{1} << (check ? 20 : 26);
    qd::ndarray<float, 1> x(n), y(n), y2(n);
    std::vector<float> hx(static_cast<std::size_t>(n)), hy(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
      hx[static_cast<std::size_t>(i)] = static_cast<float>(i % 1000) * 0.001f, hy[static_cast<std::size_t>(i)] = 1.0f;
    x.from_host(hx), y.from_host(hy), y2.from_host(hy);
    float a = 1.5f;
    auto xp = reinterpret_cast<unsigned long long>(x.storage().data());
    auto yp = reinterpret_cast<unsigned long long>(y2.storage().data());
    long long count = n;
    void* args[] = {&xp, &yp, &a, &count};
    auto run_hand = [&] {
      QD_GPU_CALL(api, launch, hand.saxpy, static_cast<unsigned>((n + 255) / 256), 1, 1, 256, 1, 1, 0, nullptr, args,
                  nullptr);
    };
    auto run_qd = [&] { saxpy(x, y, a); };
    run_qd(), run_hand();  // compile, load, warm up; both now hold x * a + 1
    bool same = y.to_host() == y2.to_host();
    all_same = all_same && same;
    std::vector<double> tq, th;
    for (int r = 0; r < rounds; ++r) {
      tq.push_back(device_ms(run_qd, calls));
      th.push_back(device_ms(run_hand, calls));
    }
    const double gb = 3.0 * static_cast<double>(n) * 4 / 1e9;
    fmt::print(
        "  saxpy, 2^{} floats: generated {:.3f} ms ({:.0f} GB/s), hand-written {:.3f} ms ({:.0f} GB/s): "
        "{:.3f}x (target <= 1.05); results identical: {}\n",
        check ? 20 : 26, median(tq), gb / median(tq) * 1e3, median(th), gb / median(th) * 1e3, median(tq) / median(th),
        same ? "yes" : "NO");
  }

  // A 5-point stencil over the interior of an 8192 x 8192 grid.
  {
    auto stencil = qd::kernel("stencil", [](qd::types::ndarray<float, 2> in, qd::types::ndarray<float, 2> out) {
      qd::range_for(qd::ndrange(in.shape(0) - 2, in.shape(1) - 2), [&](qd::i32 i, qd::i32 j) {
        out(i + 1, j + 1) =
            0.5f * in(i + 1, j + 1) + 0.125f * (in(i, j + 1) + in(i + 2, j + 1) + in(i + 1, j) + in(i + 1, j + 2));
      });
    });
    const int h = check ? 1024 : 8192, w = h;
    qd::ndarray<float, 2> in({h, w}), out({h, w}), out2({h, w});
    std::vector<float> hin(static_cast<std::size_t>(h) * w);
    for (std::size_t i = 0; i < hin.size(); ++i) hin[i] = static_cast<float>((i * 7) % 101) * 0.01f;
    in.from_host(hin);
    auto ip = reinterpret_cast<unsigned long long>(in.storage().data());
    auto op = reinterpret_cast<unsigned long long>(out2.storage().data());
    int hh = h, ww = w;
    void* args[] = {&ip, &op, &hh, &ww};
    auto run_hand = [&] {
      QD_GPU_CALL(api, launch, hand.stencil, (w - 2 + 31) / 32, (h - 2 + 7) / 8, 1, 32, 8, 1, 0, nullptr, args,
                  nullptr);
    };
    auto run_qd = [&] { stencil(in, out); };
    run_qd(), run_hand();
    bool same = out.to_host() == out2.to_host();
    all_same = all_same && same;
    std::vector<double> tq, th;
    for (int r = 0; r < rounds; ++r) {
      tq.push_back(device_ms(run_qd, calls));
      th.push_back(device_ms(run_hand, calls));
    }
    fmt::print(
        "  5-point stencil, {}^2 floats: generated {:.3f} ms, hand-written {:.3f} ms: {:.3f}x (target <= "
        "1.05); results identical: {}\n",
        h, median(tq), median(th), median(tq) / median(th), same ? "yes" : "NO");
  }

  // Host-side cost of one call: a serial one-thread kernel, against a bare launch.
  {
    auto tiny = qd::kernel("tiny", [](qd::types::ndarray<float, 1> x) { x[0] = x[0] + 1.0f; });
    qd::ndarray<float, 1> x(1);
    tiny(x);
    auto xp = reinterpret_cast<unsigned long long>(x.storage().data());
    void* args[] = {&xp};
    std::vector<double> tq, th;
    const int tiny_calls = check ? 10 : 200;
    for (int r = 0; r < rounds * 3; ++r) {
      tq.push_back(host_us([&] { tiny(x); }, tiny_calls));
      th.push_back(host_us([&] { QD_GPU_CALL(api, launch, hand.tiny, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr); },
                           tiny_calls));
    }
    fmt::print(
        "  launch overhead (host time per call): qd kernel {:.2f} us, bare cuLaunchKernel {:.2f} us "
        "({:+.2f} us per call)\n",
        median(tq), median(th), median(tq) - median(th));
  }
  QD_GPU_CALL(api, module_unload, hand.module);
  qd::reset();
  fs::remove_all(cache);
  return all_same ? 0 : 1;
}
