// Graph kernels (issue 13), on the CPU backend: the host cost of one qd::graph::do_while
// pass over a body of eight small constructs against a hand-written host loop launching
// the same eight constructs as a plain kernel and reading the flag; and the recompile
// after editing one construct of a 32-construct do_while body, against compiling that
// construct alone (host C++ compiler, and NVRTC in compile-only mode where present).
#include <quadrants/quadrants.hpp>

#include "bench_support.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using namespace qd_bench;  // bench_support.hpp
namespace fs = std::filesystem;

using f1 = qd::types::ndarray<float, 1>;
using flag_t = qd::types::ndarray<std::int32_t, 0>;

// Seven tiny parallel constructs over x (16 elements), then one that counts the passes
// and sets the flag while fewer than `passes` have run.
void eight_constructs(f1 x, flag_t count, flag_t again, qd::i32 passes) {
  for (int c = 0; c < 7; ++c) qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * 0.5f + static_cast<float>(c); });
  qd::range_for(1, [&](qd::i32) {
    count() = count() + 1;
    again() = qd::select(count() < passes, 1, 0);
  });
}

void per_pass_cost(qd::per_offload_mode mode, int passes, int rounds) {
  qd::init({.arch = qd::arch::cpu, .offline_cache = false, .per_offload = mode});
  auto graph = qd::kernel("graph8", qd::graph::on, [](f1 x, flag_t count, flag_t again, qd::i32 limit) {
    qd::graph::do_while(again, [&] { eight_constructs(x, count, again, limit); });
  });
  auto step = qd::kernel(
      "step8", [](f1 x, flag_t count, flag_t again, qd::i32 limit) { eight_constructs(x, count, again, limit); });
  qd::ndarray<float, 1> x(16);
  qd::ndarray<std::int32_t, 0> count, again;
  graph.compile();
  step.compile();
  const auto* flag = static_cast<const std::int32_t*>(again.storage().data());  // CPU memory
  std::vector<double> g, hand, hand_to_host;
  for (int r = 0; r < rounds; ++r) {
    count.fill(0);
    g.push_back(seconds([&] { graph(x, count, again, passes); }) * 1e6 / passes);
    count.fill(0);
    hand.push_back(seconds([&] {
                     do step(x, count, again, passes);
                     while (*flag != 0);
                   }) *
                   1e6 / passes);
    count.fill(0);
    hand_to_host.push_back(seconds([&] {
                             do step(x, count, again, passes);
                             while (again.to_host()[0] != 0);
                           }) *
                           1e6 / passes);
  }
  fmt::print(
      "  {:5}: do_while {:.2f} us/pass; host loop launching the 8 constructs {:.2f} us/pass (graph/loop {:.2f}, "
      "target <= 1.2); the same loop reading the flag with to_host() {:.2f} us/pass\n",
      mode == qd::per_offload_mode::on ? "split" : "whole", median(g), median(hand), median(g) / median(hand),
      median(hand_to_host));
  qd::reset();
}

// A do_while whose body forks two branches of four small constructs each (the eight
// constructs above, split in two), against the same body without the fork: the cost of
// starting and joining a branch thread per pass on the CPU.
void fork_cost(int passes, int rounds) {
  qd::init({.arch = qd::arch::cpu, .offline_cache = false});
  auto forked = qd::kernel("forked8", qd::graph::on, [](f1 x, f1 y, flag_t count, flag_t again, qd::i32 limit) {
    qd::graph::do_while(again, [&] {
      auto four = [&](f1 a) {
        for (int c = 0; c < 4; ++c)
          qd::range_for(a.shape(0), [&](qd::i32 i) { a[i] = a[i] * 0.5f + static_cast<float>(c); });
      };
      qd::graph::parallel([&] { four(x); }, [&] { four(y); });
      qd::range_for(1, [&](qd::i32) {
        count() = count() + 1;
        again() = qd::select(count() < limit, 1, 0);
      });
    });
  });
  auto plain = qd::kernel("plain8", qd::graph::on, [](f1 x, f1 y, flag_t count, flag_t again, qd::i32 limit) {
    qd::graph::do_while(again, [&] {
      for (int c = 0; c < 4; ++c)
        qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * 0.5f + static_cast<float>(c); });
      for (int c = 0; c < 4; ++c)
        qd::range_for(y.shape(0), [&](qd::i32 i) { y[i] = y[i] * 0.5f + static_cast<float>(c); });
      qd::range_for(1, [&](qd::i32) {
        count() = count() + 1;
        again() = qd::select(count() < limit, 1, 0);
      });
    });
  });
  qd::ndarray<float, 1> x(16), y(16);
  qd::ndarray<std::int32_t, 0> count, again;
  forked.compile();
  plain.compile();
  std::vector<double> f, s;
  for (int r = 0; r < rounds; ++r) {
    count.fill(0);
    f.push_back(seconds([&] { forked(x, y, count, again, passes); }) * 1e6 / passes);
    count.fill(0);
    s.push_back(seconds([&] { plain(x, y, count, again, passes); }) * 1e6 / passes);
  }
  fmt::print(
      "  graph::parallel of two 4-construct branches: {:.2f} us/pass; the same 8 constructs in order {:.2f} "
      "us/pass\n",
      median(f), median(s));
  qd::reset();
}

// A graph kernel whose do_while body holds `n` constructs of about 30 operations and the
// flag's construct; construct `edited` gets salt `edit_salt`.
auto big_graph(int n, int edited = -1, int edit_salt = 0) {
  return qd::kernel("big_graph", qd::graph::on, [=](f1 a, f1 b, f1 c, f1 out, flag_t again) {
    qd::graph::do_while(again, [&] {
      for (int k = 0; k < n; ++k) construct(a, b, c, out, k == edited ? edit_salt : k);
      qd::range_for(1, [&](qd::i32) { again() = 0; });
    });
  });
}

void edit_one_of(const fs::path& base, const char* label, qd::config target, int n, int rounds) {
  std::vector<double> split, alone;
  int compiled = 0, loaded = 0;
  for (int r = 0; r < rounds; ++r) {
    const fs::path root = base / fmt::format("edit{}-{}-{}", label, n, r);
    target.offline_cache_file_path = root.string();
    target.per_offload = qd::per_offload_mode::on;
    const int salt = 1000 + r;
    try {
      qd::init(target);
    } catch (const qd::error& e) {
      fmt::print("  {}: skipped ({})\n", label, e.what());
      return;
    }
    big_graph(n).compile();
    qd::init(target);  // a new program: the other constructs are on disk
    auto edited = big_graph(n, n / 2, salt);
    split.push_back(ms([&] { edited.compile(); }));
    compiled = edited.per_offload_cache_observations().constructs_compiled;
    loaded = edited.per_offload_cache_observations().constructs_loaded;
    qd::init(target);
    auto single = make_kernel("single", 1, 0, 0, salt + 500);  // the edited construct's size, a fresh key
    alone.push_back(ms([&] { single.compile(); }));
    qd::reset();
    fs::remove_all(root);
  }
  fmt::print(
      "  {}: {} constructs in a do_while body, one edited: {:6.1f} ms (compiled {}, loaded {}); the edited "
      "construct alone {:6.1f} ms (edit/alone {:.2f}, target <= 1.3)\n",
      label, n, median(split), compiled, loaded, median(alone), median(split) / median(alone));
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const int passes = argc > 2 ? std::atoi(argv[2]) : 20000;
  const fs::path base = fs::temp_directory_path() / fmt::format("qd-graph-bench-{}", ::getpid());
  qd::set_log_level(qd::log_level::warn);
  fmt::print("Quadrants graph benchmark, medians of {} rounds\n", rounds);
  fmt::print("Host cost per do_while pass, CPU backend, body of 8 small constructs, {} passes:\n", passes);
  for (auto mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) per_pass_cost(mode, passes, rounds);
  fork_cost(passes / 10, rounds);
  fmt::print("Edit one construct of a 32-construct do_while body:\n");
  edit_one_of(base, "host compiler", {.arch = qd::arch::cpu}, 32, rounds);
  edit_one_of(base, "NVRTC compile-only sm_90",
              {.arch = qd::arch::cuda, .compile_only = true, .cuda_arch = 90, .enable_fallback = false}, 32, rounds);
  fs::remove_all(base);
  return 0;
}
