// A particle-in-grid scatter (grid(cell) += m, f32, 10^6 particles into 128 x 128 cells)
// on the CPU backend against hand-written C++ in the same run: plain updates on one
// thread, std::atomic_ref on two. Usage: scatter_bench [repeats]
#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "bench_support.hpp"

namespace {

constexpr int particles = 1'000'000, cells = 128;

struct inputs {
  std::vector<float> x, y, m;
};

inputs make_inputs() {
  inputs in{std::vector<float>(particles), std::vector<float>(particles), std::vector<float>(particles)};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(0.0f, 0.999f);
  for (int i = 0; i < particles; ++i) {
    in.x[static_cast<std::size_t>(i)] = unit(rng);
    in.y[static_cast<std::size_t>(i)] = unit(rng);
    in.m[static_cast<std::size_t>(i)] = 0.5f + unit(rng);
  }
  return in;
}

int cell_of(float x, float y) {
  return static_cast<int>(x * static_cast<float>(cells)) * cells + static_cast<int>(y * static_cast<float>(cells));
}

// The hand-written C++: one thread plainly, or `threads` threads with std::atomic_ref.
void scatter_by_hand(const inputs& in, std::vector<float>& grid, int threads) {
  if (threads == 1) {
    for (int i = 0; i < particles; ++i) {
      const auto k = static_cast<std::size_t>(i);
      grid[static_cast<std::size_t>(cell_of(in.x[k], in.y[k]))] += in.m[k];
    }
    return;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      const int lo = particles / threads * t, hi = t + 1 == threads ? particles : lo + particles / threads;
      for (int i = lo; i < hi; ++i) {
        const auto k = static_cast<std::size_t>(i);
        std::atomic_ref<float>(grid[static_cast<std::size_t>(cell_of(in.x[k], in.y[k]))])
            .fetch_add(in.m[k], std::memory_order_relaxed);
      }
    });
  for (auto& t : pool) t.join();
}

// One thread with std::atomic_ref: what every update cost before a loop on one thread
// updated plainly.
void scatter_atomic_one_thread(const inputs& in, std::vector<float>& grid) {
  for (int i = 0; i < particles; ++i) {
    const auto k = static_cast<std::size_t>(i);
    std::atomic_ref<float>(grid[static_cast<std::size_t>(cell_of(in.x[k], in.y[k]))])
        .fetch_add(in.m[k], std::memory_order_relaxed);
  }
}

auto scatter_kernel() {
  return qd::kernel("scatter", {"x", "y", "m", "grid"},
                    [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y, qd::types::ndarray<float, 1> m,
                       qd::types::ndarray<float, 2> grid) {
                      qd::range_for(x.shape(0), [&](qd::i32 i) {
                        qd::i32 cx = qd::cast<qd::i32>(x[i] * static_cast<float>(cells));
                        qd::i32 cy = qd::cast<qd::i32>(y[i] * static_cast<float>(cells));
                        grid(cx, cy) += m[i];
                      });
                    });
}

double median_ms(int repeats, const std::function<void()>& reset, const std::function<void()>& run) {
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    reset();
    t.push_back(qd_bench::ms(run));
  }
  return qd_bench::median(t);
}

bool close(const std::vector<float>& a, const std::vector<float>& b, float tolerance) {
  for (std::size_t k = 0; k < a.size(); ++k)
    if (std::fabs(a[k] - b[k]) > tolerance * std::fabs(b[k]) + 1e-3f) return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 15;
  const inputs in = make_inputs();
  std::vector<float> reference(cells * cells, 0.0f), hand(cells * cells);
  scatter_by_hand(in, reference, 1);
  fmt::print("f32 scatter of {} particles into {}x{} cells, median of {} runs\n", particles, cells, cells, repeats);
  bool ok = true;
  for (int threads : {1, 2}) {
    qd::init({.arch = qd::arch::cpu, .offline_cache = false, .cpu_max_num_threads = threads});
    auto k = scatter_kernel();
    qd::ndarray<float, 1> x(particles), y(particles), m(particles);
    x.from_host(in.x);
    y.from_host(in.y);
    m.from_host(in.m);
    qd::ndarray<float, 2> grid({cells, cells});
    grid.fill(0.0f);
    k(x, y, m, grid);  // compiles
    const bool exact = grid.to_host() == reference;
    const double t_qd = median_ms(
        repeats, [&] { grid.fill(0.0f); }, [&] { k(x, y, m, grid); });
    const double t_hand = median_ms(
        repeats, [&] { std::fill(hand.begin(), hand.end(), 0.0f); }, [&] { scatter_by_hand(in, hand, threads); });
    const bool same = threads == 1 ? exact && hand == reference : close(grid.to_host(), reference, 1e-4f);
    ok &= same;
    fmt::print("{} thread{}: quadrants {:.2f} ms, C++ {} {:.2f} ms, ratio {:.2f}{}\n", threads, threads == 1 ? "" : "s",
               t_qd, threads == 1 ? "plain" : "std::atomic_ref", t_hand, t_qd / t_hand, same ? "" : "  RESULTS DIFFER");
    if (threads == 1) {
      const double t_atomic = median_ms(
          repeats, [&] { std::fill(hand.begin(), hand.end(), 0.0f); }, [&] { scatter_atomic_one_thread(in, hand); });
      fmt::print("1 thread: C++ std::atomic_ref (an atomic per update) {:.2f} ms, {:.2f}x plain C++\n", t_atomic,
                 t_atomic / t_hand);
    }
    qd::reset();
  }
  return ok ? 0 : 1;
}
