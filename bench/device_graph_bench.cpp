// Device graphs on a GPU (issue 13): a graph kernel of eight tiny constructs replayed as
// one recorded graph against the same eight constructs launched one by one; and a
// do_while of eight tiny constructs run as a CUDA conditional WHILE node (12.3+ drivers)
// against the host loop reading the flag after each pass. Runs on the CUDA backend, or
// the AMD one with --amdgpu (no conditional node there). And ping-pong buffers (issue
// 30): 100 launches of a graph kernel alternating its two arrays, the device graphs they
// build, and the cost of a launch that swaps the arrays (the recorded nodes given new
// arguments in place) against one with the same arrays. On the emulated GPUs the
// figures are host-thread costs, not GPU figures, and are printed labelled as such.
//   device_graph_bench [rounds [launches [passes]]] [--amdgpu]
#include <quadrants/backend/amdgpu/hip.hpp>
#include <quadrants/backend/cuda/driver.hpp>
#include <quadrants/quadrants.hpp>

#include "bench_support.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace qd_bench;  // bench_support.hpp
using f1 = qd::types::ndarray<float, 1>;
using flag_t = qd::types::ndarray<std::int32_t, 0>;

// Eight tiny parallel constructs over x (32 elements).
void eight_tiny(f1 x) {
  for (int c = 0; c < 8; ++c) qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * 0.5f + static_cast<float>(c); });
}

// The same body, then a construct that counts the passes and sets the flag while fewer
// than `passes` have run.
void eight_tiny_then_flag(f1 x, flag_t count, flag_t again, qd::i32 passes) {
  eight_tiny(x);
  qd::range_for(1, [&](qd::i32) {
    count() = count() + 1;
    again() = qd::select(count() < passes, 1, 0);
  });
}

// Whether a do_while runs as a conditional WHILE node here (CUDA, 12.3+ drivers).
bool conditional_nodes(qd::arch arch) {
  int version = 0;
  return arch == qd::arch::cuda && qd::backend::cuda::driver().driver_version(&version) == 0 && version >= 12030;
}

// What the figures are: the device's name, and whether it is an emulation.
std::string device_label(qd::arch arch) {
  if (arch != qd::arch::cuda) {
    std::vector<char> props(16384, 0);  // hipDeviceProp_t begins with char name[256]
    QD_GPU_CALL(qd::backend::amdgpu::hip(), device_properties, props.data(), 0);
    return std::string(props.data(), strnlen(props.data(), 256));
  }
  char name[256] = {};
  namespace cu = qd::backend::cuda;
  QD_GPU_CALL(cu::driver(), device_name, name, sizeof(name) - 1, 0);
  int version = 0;
  QD_GPU_CALL(cu::driver(), driver_version, &version);
  return fmt::format("{} (driver {}.{})", name, version / 1000, version % 1000 / 10);
}

// One graph kernel of eight constructs (replayed) against a plain kernel of the same
// eight (eight launches), `launches` calls each then one synchronization, in us per call.
void replay_against_launches(int rounds, int launches) {
  auto graph = qd::kernel("graph8_replay", qd::graph::on, [](f1 x) { eight_tiny(x); });
  auto plain = qd::kernel("plain8", [](f1 x) { eight_tiny(x); });
  qd::ndarray<float, 1> x(32);
  graph(x);  // compile and record
  plain(x);
  std::vector<double> g, p;
  for (int r = 0; r < rounds; ++r) {
    g.push_back(seconds([&] {
                  for (int k = 0; k < launches; ++k) graph(x);
                  (void)x.to_host();
                }) *
                1e6 / launches);
    p.push_back(seconds([&] {
                  for (int k = 0; k < launches; ++k) plain(x);
                  (void)x.to_host();
                }) *
                1e6 / launches);
  }
  const auto o = graph.per_offload_cache_observations();
  fmt::print(
      "  8 tiny constructs: graph replay {:.2f} us/launch, 8 individual launches {:.2f} us/launch "
      "(replay/individual {:.2f}; {} recorded, {} replays)\n",
      median(g), median(p), median(g) / median(p), o.device_graph_builds, o.device_graph_replays);
}

// Plain C++ of graph8_ping_pong's launch.
void ping_pong_on_host(const std::vector<float>& src, std::vector<float>& dst) {
  for (std::size_t i = 0; i < dst.size(); ++i) dst[i] = src[i] * 0.5f + 1.0f;
  for (int c = 0; c < 8; ++c)
    for (float& v : dst) v = v * 0.5f + static_cast<float>(c);
}

// 100 launches alternating (a, b) and (b, a), the first of which compiles and records;
// then, in us per launch, `launches` alternating against `launches` with the same arrays.
void ping_pong(int rounds, int launches) {
  auto k = qd::kernel("graph8_ping_pong", qd::graph::on, [](f1 src, f1 dst) {
    qd::range_for(dst.shape(0), [&](qd::i32 i) { dst[i] = src[i] * 0.5f + 1.0f; });
    eight_tiny(dst);
  });
  std::vector<float> ha(32), hb(32, 0.0f);
  for (std::size_t i = 0; i < ha.size(); ++i) ha[i] = static_cast<float>(i);
  qd::ndarray<float, 1> a(32), b(32);
  a.from_host(ha);
  b.from_host(hb);
  for (int launch = 0; launch < 100; ++launch) {
    if (launch % 2 == 0) {
      ping_pong_on_host(ha, hb);
      k(a, b);
    } else {
      ping_pong_on_host(hb, ha);
      k(b, a);
    }
  }
  const bool same = a.to_host() == ha && b.to_host() == hb;
  const auto o = k.per_offload_cache_observations();
  std::vector<double> swapped, kept;
  for (int r = 0; r < rounds; ++r) {
    swapped.push_back(seconds([&] {
                        for (int i = 0; i < launches; ++i) i % 2 ? k(b, a) : k(a, b);
                        (void)a.to_host();
                      }) *
                      1e6 / launches);
    kept.push_back(seconds([&] {
                     for (int i = 0; i < launches; ++i) k(a, b);
                     (void)a.to_host();
                   }) *
                   1e6 / launches);
  }
  fmt::print(
      "  ping-pong graph kernel (9 tiny constructs): 100 alternating launches built {} device graph(s), updated "
      "{} in place, results {} plain C++'s; arrays swapped {:.2f} us/launch, same arrays {:.2f} us/launch (ratio "
      "{:.2f})\n",
      o.device_graph_builds, o.device_graph_updates, same ? "equal to" : "DIFFERENT FROM", median(swapped),
      median(kept), median(swapped) / median(kept));
}

// us per do_while pass of eight tiny constructs and the flag's construct.
double per_pass(int rounds, int passes, const char* name) {
  auto k = qd::kernel(name, qd::graph::on, [](f1 x, flag_t count, flag_t again, qd::i32 limit) {
    qd::graph::do_while(again, [&] { eight_tiny_then_flag(x, count, again, limit); });
  });
  qd::ndarray<float, 1> x(32);
  qd::ndarray<std::int32_t, 0> count, again;
  count.fill(0);
  k(x, count, again, 2);  // compile and record
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) {
    count.fill(0);
    t.push_back(seconds([&] {
                  k(x, count, again, passes);
                  (void)count.to_host();
                }) *
                1e6 / passes);
    if (count.to_host()[0] != passes) fmt::print("  (unexpected pass count {})\n", count.to_host()[0]);
  }
  return median(t);
}

}  // namespace

int main(int argc, char** argv) {
  qd::arch arch = qd::arch::cuda;
  std::vector<int> numbers;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--amdgpu") == 0) {
      arch = qd::arch::amdgpu;
    } else {
      numbers.push_back(std::atoi(argv[i]));
    }
  }
  const int rounds = numbers.size() > 0 ? numbers[0] : 5;
  const int launches = numbers.size() > 1 ? numbers[1] : 2000;
  const int passes = numbers.size() > 2 ? numbers[2] : 2000;
  qd::set_log_level(qd::log_level::warn);
  try {
    qd::init({.arch = arch, .offline_cache = false, .enable_fallback = false});
  } catch (const qd::error& e) {
    fmt::print("Quadrants device graph benchmark: skipped, no {} GPU here ({})\n",
               arch == qd::arch::cuda ? "CUDA" : "AMD", e.what());
    return 0;
  }
  const std::string label = device_label(arch);
  const bool emulated = label.find("mulated") != std::string::npos;
  fmt::print("Quadrants device graph benchmark on {}, medians of {} rounds{}\n", label, rounds,
             emulated ? "\n  EMULATED GPU: host-thread costs of the emulation, not GPU figures" : "");
  replay_against_launches(rounds, launches);
  ping_pong(rounds, launches);
  const double device_loop = per_pass(rounds, passes, "loop8_device");
  qd::reset();
  // graph_max_iterations makes the host loop count the passes: the same kernel, host loop.
  qd::init(
      {.arch = arch, .offline_cache = false, .enable_fallback = false, .graph_max_iterations = std::uint64_t{1} << 40});
  const double host_loop = per_pass(rounds, passes, "loop8_host");
  qd::reset();
  fmt::print(
      "  do_while of 8 tiny constructs, {} passes: {} {:.2f} us/pass, host loop reading the flag {:.2f} "
      "us/pass (ratio {:.2f})\n",
      passes, conditional_nodes(arch) ? "conditional WHILE node" : "host loop (no conditional nodes here)", device_loop,
      host_loop, device_loop / host_loop);
  return 0;
}
