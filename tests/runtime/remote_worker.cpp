// A separate process for the remote tier's tests: compiles and runs kernels with the
// configuration its environment gives (QD_REMOTE_CACHE, QD_OFFLINE_CACHE_FILE_PATH, ...)
// and prints one line of counts. Exit 0 only when every result matched the host's.
//   remote_worker KERNELS CONSTRUCTS [SALT]
#include <quadrants/quadrants.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int n = 32;

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const int kernels = std::atoi(argv[1]), constructs = std::atoi(argv[2]);
  const int salt = argc > 3 ? std::atoi(argv[3]) : 0;
  int failures = 0, compiled = 0, loaded = 0;
  double ready_ms = 0;
  try {
    qd::init({.arch = qd::arch::cpu});  // QD_PER_OFFLOAD and the rest from the environment
    qd::ndarray<float, 1> x(n), y(static_cast<std::int64_t>(constructs) * n);
    std::vector<float> hx(n);
    for (int i = 0; i < n; ++i) hx[static_cast<std::size_t>(i)] = static_cast<float>(i) * 0.25f;
    x.from_host(hx);
    for (int k = 0; k < kernels; ++k) {
      const float offset = static_cast<float>(salt * 1000 + k);
      auto kernel =
          qd::kernel("remote_k", [constructs, offset](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y) {
            for (int c = 0; c < constructs; ++c)
              qd::range_for(x.shape(0), [&](qd::i32 i) { y[c * n + i] = x[i] * static_cast<float>(c + 1) + offset; });
          });
      auto t0 = std::chrono::steady_clock::now();
      kernel.compile();
      ready_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      auto obs = kernel.per_offload_cache_observations();
      compiled += obs.constructs_compiled;
      loaded += obs.constructs_loaded;
      kernel(x, y);
      auto hy = y.to_host();
      for (int c = 0; c < constructs; ++c)
        for (int i = 0; i < n; ++i)
          if (hy[static_cast<std::size_t>(c * n + i)] !=
              hx[static_cast<std::size_t>(i)] * static_cast<float>(c + 1) + offset)
            ++failures;
    }
    auto s = qd::offline_cache_statistics();
    std::printf(
        "compiled=%d loaded=%d compiles=%llu disk_hits=%llu remote_hits=%llu remote_misses=%llu "
        "remote_stores=%llu remote_errors=%llu remote_rejected=%llu round_trips=%llu lock_waits=%llu "
        "ready_ms=%.2f failures=%d\n",
        compiled, loaded, static_cast<unsigned long long>(s.compiles), static_cast<unsigned long long>(s.hits),
        static_cast<unsigned long long>(s.remote_hits), static_cast<unsigned long long>(s.remote_misses),
        static_cast<unsigned long long>(s.remote_stores), static_cast<unsigned long long>(s.remote_errors),
        static_cast<unsigned long long>(s.remote_rejected), static_cast<unsigned long long>(s.remote_round_trips),
        static_cast<unsigned long long>(s.remote_lock_waits), ready_ms, failures);
  } catch (const std::exception& e) {
    std::printf("ERROR %s\n", e.what());
    return 3;
  }
  std::fflush(stdout);
  return failures == 0 ? 0 : 1;
}
