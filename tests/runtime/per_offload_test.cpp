// Per-offload caching (SPEC §3-§5, §12.1; issues 4 and 15): the seed's kernels split
// through the persisted buffer, the edit scenario across processes and in one,
// identical constructs shared, and the run-time aliasing fallback.
// Identical results from both variants: tests/backend/gpu_suite_test.cpp, on every arch.
#include <doctest/doctest.h>

#include <quadrants/quadrants.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <cstring>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime/worker_support.hpp"
#include "support/huge_array.hpp"
#include "support/log_capture.hpp"

namespace {

void init_split(const qd_test::temp_dir& cache, qd::per_offload_mode mode = qd::per_offload_mode::on) {
  qd::init({.arch = qd::arch::cpu,
            .offline_cache_file_path = cache.str(),
            .per_offload = mode,
            .log_level = qd::log_level::debug});
}

std::vector<float> iota(int n, float scale) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i) * scale + 1.0f;
  return v;
}

// The seed's grad_snapshot: a.grad()[0] re-read after a loop writes b.grad().
auto grad_snapshot_kernel() {
  return qd::kernel("grad_snapshot", {"a", "b", "out"},
                    [](qd::types::ndarray<float, 1, qd::needs_grad> a, qd::types::ndarray<float, 1, qd::needs_grad> b,
                       qd::types::ndarray<float, 1> out) {
                      qd::f32 g = a.grad()[0];
                      qd::range_for(b.shape(0), [&](qd::i32 i) { b.grad()[i] = 0.0f; });
                      qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = g; });
                    });
}

// Runs `launch` (which creates its arrays, launches and returns every result buffer's
// bytes) whole and split in fresh programs; returns both results and the split's
// observations.
template <class Launch, class Kernel>
std::pair<std::vector<std::vector<float>>, std::vector<std::vector<float>>> whole_and_split(
    const qd_test::temp_dir& cache, Kernel& k, Launch&& launch, qd::per_offload_observations& split_obs) {
  std::vector<std::vector<float>> results[2];
  for (int split = 0; split < 2; ++split) {
    qd::init({.arch = qd::arch::cpu,
              .offline_cache_file_path = cache.str(),
              .per_offload = split ? qd::per_offload_mode::on : qd::per_offload_mode::off,
              .log_level = qd::log_level::debug,
              .random_seed = 11});
    results[split] = launch();
    if (split) split_obs = k.per_offload_cache_observations();
    qd::reset();
  }
  return {results[0], results[1]};
}

bool bitwise_equal(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (a[k].size() != b[k].size() || std::memcmp(a[k].data(), b[k].data(), a[k].size() * sizeof(float)) != 0)
      return false;
  return true;
}

}  // namespace

TEST_CASE("the seed's kernels split through the persisted buffer, bitwise equal to the whole kernel") {
  qd_test::temp_dir cache("seed");
  auto running_total =
      qd::kernel("running_total", {"x", "out"}, [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out) {
        qd::var<float> total = 0.0f;
        qd::range_for(x.shape(0), [&](qd::i32 i) { total += x[i]; });
        qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = total; });
      });
  auto stale_snapshot =
      qd::kernel("stale_snapshot", {"a", "out"}, [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> out) {
        qd::f32 first = a[0];
        qd::range_for(a.shape(0), [&](qd::i32 i) { a[i] = 0.0f; });
        qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = first; });
      });
  auto stale_clamped =
      qd::kernel("stale_clamped", {"a", "out"}, [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> out) {
        qd::f32 first = a.at(-5, qd::boundary::clamp);
        qd::range_for(a.shape(0), [&](qd::i32 i) { a[i] = 0.0f; });
        qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = first; });
      });
  auto grad_snapshot = grad_snapshot_kernel();
  qd_test::log_capture logs;
  const int n = 16;
  float sum = 0;
  for (float v : iota(n, 1.0f)) sum += v;
  qd::per_offload_observations o;

  // Not a structured binding: the lambdas below capture them (clang before 16 cannot).
  std::vector<std::vector<float>> whole, split;
  std::tie(whole, split) = whole_and_split(
      cache, running_total,
      [&] {
        qd::ndarray<float, 1> x(n), out(n);
        x.from_host(iota(n, 1.0f));
        running_total(x, out);
        return std::vector<std::vector<float>>{out.to_host()};
      },
      o);
  CHECK(bitwise_equal(whole, split));
  CHECK(whole[0][5] == sum);
  CHECK(o.fallback == qd::fallback_reason::none);
  CHECK(o.frontend_constructs_total == 3);  // a serial task initialising `total` in the buffer, the two loops
  CHECK(o.constructs_compiled == 3);

  // The snapshot (plain or clamped), taken by a serial task before loop 1 and handed on.
  auto snapshot_case = [&](auto& k) {
    std::tie(whole, split) = whole_and_split(
        cache, k,
        [&] {
          qd::ndarray<float, 1> a(n), out(n);
          a.from_host(iota(n, 2.0f));
          k(a, out);
          return std::vector<std::vector<float>>{a.to_host(), out.to_host()};
        },
        o);
    CHECK(bitwise_equal(whole, split));
    CHECK(whole[1][3] == 1.0f);  // the original a[0], not the overwritten 0
    CHECK(o.fallback == qd::fallback_reason::none);
    CHECK(o.frontend_constructs_total == 3);
  };
  snapshot_case(stale_snapshot);
  snapshot_case(stale_clamped);

  // Gradient buffers of qd::ndarrays have known extents: the re-read of a.grad()[0] is
  // recomputed, and the launch checks that b's and out's buffers do not overlap it.
  std::tie(whole, split) = whole_and_split(
      cache, grad_snapshot,
      [&] {
        qd::ndarray<float, 1> a(n, qd::needs_grad), b(n, qd::needs_grad), out(n);
        a.grad().from_host(iota(n, 3.0f));
        b.grad().from_host(iota(n, 4.0f));
        grad_snapshot(a, b, out);
        return std::vector<std::vector<float>>{b.grad().to_host(), out.to_host()};
      },
      o);
  CHECK(bitwise_equal(whole, split));
  CHECK(whole[1][7] == 1.0f);  // a.grad()[0]
  CHECK(o.fallback == qd::fallback_reason::none);
  CHECK(o.frontend_constructs_total == 2);
  CHECK(o.runtime_fallbacks == 0);
  CHECK(logs.count(qd::log_level::debug, "stays whole-kernel") == 0);
}

TEST_CASE("a gradient buffer bound to another parameter runs the whole kernel, warning once") {
  qd_test::temp_dir cache("grad-alias");
  qd_test::log_capture logs;
  init_split(cache);
  auto grad_snapshot = grad_snapshot_kernel();
  const int n = 8;
  qd::ndarray<float, 1> a(n, qd::needs_grad), out(n);
  a.grad().from_host(iota(n, 3.0f));
  grad_snapshot(a, a, out);  // a.grad() is also b.grad(): recomputing a.grad()[0] would read the zeroed value
  CHECK(out.to_host()[2] == 1.0f);
  CHECK(grad_snapshot.per_offload_cache_observations().runtime_fallbacks == 1);
  CHECK(logs.count(qd::log_level::warn,
                   "[PER_OFFLOAD][FALLBACK] kernel 'grad_snapshot': parameters 'a.grad()' and "
                   "'b.grad()' share a buffer") == 1);
  qd::ndarray<float, 1> b(n, qd::needs_grad);
  a.grad().from_host(iota(n, 3.0f));
  grad_snapshot(a, b, out);
  CHECK(grad_snapshot.per_offload_cache_observations().runtime_fallbacks == 1);
  CHECK(out.to_host()[2] == 1.0f);
  qd::reset();
}

TEST_CASE("a new user's energy kernel: reductions read by a later loop split, bitwise equal to the whole kernel") {
  qd_test::temp_dir cache("energy");
  // Kinetic and potential energy of n particles, then every particle's share of the total.
  auto energy = qd::kernel("energy", {"m", "v", "h", "share"},
                           [](qd::types::ndarray<float, 1> m, qd::types::ndarray<float, 1> v,
                              qd::types::ndarray<float, 1> h, qd::types::ndarray<float, 1> share) {
                             qd::var<float> kinetic = 0.0f;
                             qd::var<float> potential = 0.0f;
                             qd::var<float> heaviest = 0.0f;
                             qd::range_for(m.shape(0), [&](qd::i32 i) { kinetic += 0.5f * m[i] * v[i] * v[i]; });
                             qd::range_for(m.shape(0), [&](qd::i32 i) {
                               potential += 9.81f * m[i] * h[i];
                               qd::atomic_max(heaviest, m[i]);
                             });
                             qd::f32 total = kinetic + potential;
                             qd::range_for(share.shape(0), [&](qd::i32 i) {
                               share[i] = (0.5f * m[i] * v[i] * v[i] + 9.81f * m[i] * h[i]) / total + heaviest;
                             });
                           });
  for (int n : {100, 2000}) {  // up to 2048 iterations the CPU reduces in one chunk: a fixed order
    CAPTURE(n);
    qd::per_offload_observations o;
    auto [whole, split] = whole_and_split(
        cache, energy,
        [&] {
          qd::ndarray<float, 1> m(n), v(n), h(n), share(n);
          m.from_host(iota(n, 0.25f));
          v.from_host(iota(n, -0.125f));
          h.from_host(iota(n, 0.5f));
          energy(m, v, h, share);
          return std::vector<std::vector<float>>{share.to_host()};
        },
        o);
    CHECK(bitwise_equal(whole, split));
    CHECK(o.fallback == qd::fallback_reason::none);
    CHECK(o.frontend_constructs_total == 4);  // the serial task declaring the three sums, three loops
  }
}

TEST_CASE("a re-read of an element no later loop can write splits, with the whole kernel's results") {
  qd_test::temp_dir cache("disjoint");
  // a[0] is read first; the loops write a[i] for i >= 1 and m's column 0 only.
  auto edges =
      qd::kernel("edges", {"a", "m", "out"},
                 [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 2> m, qd::types::ndarray<float, 1> out) {
                   qd::f32 left = a[0];
                   qd::f32 corner = m(0, 1);
                   qd::range_for(1, a.shape(0), [&](qd::i32 i) { a[i] = a[i] * 2.0f + left; });
                   qd::range_for(0, a.shape(0) - 1, [&](qd::i32 i) { a[i + 1] += 1.0f; });
                   qd::range_for(qd::ndrange(m.shape(0), 1), [&](qd::i32 i, qd::i32 j) { m(i, j) = left + corner; });
                   qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = left * 10.0f + corner; });
                 });
  // The last element against a loop over all but the last: n is a run-time extent.
  auto last = qd::kernel("last", {"a", "out"}, [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> out) {
    qd::f32 right = a[a.shape(0) - 1];
    qd::range_for(0, a.shape(0) - 1, [&](qd::i32 i) { a[i] = a[i] + right; });
    qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = right; });
  });
  // A loop that may write a[0]: the snapshot is taken once and handed on.
  auto overlapping =
      qd::kernel("overlapping", {"a", "out"}, [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> out) {
        qd::f32 left = a[0];
        qd::range_for(0, a.shape(0) - 1, [&](qd::i32 i) { a[i] = 5.0f; });
        qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = left; });
      });
  const int n = 9;
  std::vector<std::vector<float>> results[2];
  for (auto mode : {qd::per_offload_mode::on, qd::per_offload_mode::off}) {
    CAPTURE(mode);
    init_split(cache, mode);
    qd::ndarray<float, 1> a(n), out(n);
    qd::ndarray<float, 2> m({4, 3});
    a.from_host(iota(n, 0.5f));
    m.from_host(iota(12, 0.25f));
    edges(a, m, out);
    auto o = edges.per_offload_cache_observations();
    const bool split = mode == qd::per_offload_mode::on;
    CHECK(o.frontend_constructs_total == (split ? 4 : -1));
    CHECK(o.fallback == (split ? qd::fallback_reason::none : qd::fallback_reason::policy_per_offload_off));
    results[split].push_back(a.to_host());
    results[split].push_back(m.to_host());
    results[split].push_back(out.to_host());
    const float left = 1.0f, corner = 1.25f;
    CHECK(out.to_host()[3] == left * 10.0f + corner);
    CHECK(a.to_host()[0] == left);
    CHECK(a.to_host()[4] == (4 * 0.5f + 1.0f) * 2.0f + left + 1.0f);
    CHECK(m.to_host()[6] == left + corner);     // m(2, 0)
    CHECK(m.to_host()[7] == 7 * 0.25f + 1.0f);  // m(2, 1) untouched

    a.from_host(iota(n, 0.5f));
    last(a, out);
    CHECK(last.per_offload_cache_observations().frontend_constructs_total == (split ? 2 : -1));  // nothing persisted
    CHECK(out.to_host()[1] == 8 * 0.5f + 1.0f);
    CHECK(a.to_host()[2] == 2 * 0.5f + 1.0f + 8 * 0.5f + 1.0f);
    results[split].push_back(a.to_host());
    results[split].push_back(out.to_host());

    a.from_host(iota(n, 0.5f));
    overlapping(a, out);
    o = overlapping.per_offload_cache_observations();
    CHECK(o.frontend_constructs_total == (split ? 3 : -1));  // a serial task takes the snapshot
    CHECK(out.to_host()[2] == 1.0f);
    results[split].push_back(out.to_host());
    qd::reset();
  }
  CHECK(results[0] == results[1]);
}

TEST_CASE("a random draw or a volatile read is taken once and handed on: the whole kernel's values") {
  qd_test::temp_dir cache("side-effect");
  auto k = qd::kernel("draw_then_use", [](qd::types::ndarray<float, 1> x) {
    qd::f32 r = qd::random<float>();
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = r; });
  });
  auto v = qd::kernel("volatile_then_use", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y) {
    qd::f32 r = qd::volatile_load(y[0]);
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = r; });
  });
  qd::per_offload_observations o;
  auto [whole, split] = whole_and_split(
      cache, k,
      [&] {
        qd::ndarray<float, 1> x(8);
        k(x);
        k(x);  // the second launch draws from the next stream, alike in both variants
        return std::vector<std::vector<float>>{x.to_host()};
      },
      o);
  CHECK(bitwise_equal(whole, split));
  CHECK(whole[0][0] == whole[0][7]);  // one draw, shared by every iteration
  CHECK(o.fallback == qd::fallback_reason::none);
  CHECK(o.frontend_constructs_total == 2);
  std::tie(whole, split) = whole_and_split(
      cache, v,
      [&] {
        qd::ndarray<float, 1> x(8), y(8);
        y.fill(2.5f);
        v(x, y);
        return std::vector<std::vector<float>>{x.to_host()};
      },
      o);
  CHECK(bitwise_equal(whole, split));
  CHECK(whole[0][3] == 2.5f);
  CHECK(o.fallback == qd::fallback_reason::none);
}

TEST_CASE("a gradient kernel and a debug dump keep kernels whole") {
  qd_test::temp_dir cache("policy");
  qd::init({.arch = qd::arch::cpu,
            .offline_cache_file_path = cache.str(),
            .per_offload = qd::per_offload_mode::on,
            .debug_dump_path = (cache.path() / "dump").string(),
            .print_ir = true});
  auto k = qd::kernel("two_loops", [](qd::types::ndarray<float, 1> x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 1.0f; });
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] + 1.0f; });
  });
  qd::ndarray<float, 1> x(4);
  k(x);
  CHECK(k.per_offload_cache_observations().fallback == qd::fallback_reason::diagnostic);
  CHECK(std::filesystem::exists(cache.path() / "dump" / "two_loops" / "traced.ir.txt"));
  CHECK(x.to_host()[2] == 2.0f);
  qd::reset();
}

TEST_CASE(
    "debug dumps stay inside debug_dump_path whatever the kernel's name, and a warm cache says why none was written") {
  qd_test::temp_dir cache("dumps");
  const auto dump = cache.path() / "deep" / "dump";
  const auto root = cache.path() / "cache";
  auto start = [&] {
    qd::init({.arch = qd::arch::cpu,
              .offline_cache_file_path = root.string(),
              .log_level = qd::log_level::info,
              .debug_dump_path = dump.string(),
              .print_ir = true});
  };
  start();
  std::vector<std::string> names = {"../escape", "../../escape_more", "/tmp/absolute", "a/b", "..", ".",
                                    "",          "name with spaces",  "plain"};
  float value = 3.0f;
  for (const auto& name : names) {
    value += 1.0f;  // a body of its own: each kernel is compiled, so each is dumped
    auto k = qd::kernel(
        name, [value](qd::types::ndarray<float, 1> x) { qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = value; }); });
    qd::ndarray<float, 1> x(2);
    k(x);
    CHECK(x.to_host()[1] == value);
  }
  // Every file is in the kernel's own directory directly under the dump directory, none elsewhere.
  std::set<std::string> kernel_dirs;
  for (const auto& e : std::filesystem::recursive_directory_iterator(cache.path())) {
    if (!e.is_regular_file()) continue;
    const auto rel = std::filesystem::relative(e.path(), cache.path()).string();
    if (rel.starts_with("cache/")) continue;
    const auto in_dump = std::filesystem::relative(e.path(), dump);
    CHECK_MESSAGE(!in_dump.string().starts_with(".."), rel);
    const std::string top = in_dump.begin()->string();
    CHECK((!top.starts_with(".") && top.find('/') == std::string::npos));
    kernel_dirs.insert(top);
  }
  CHECK(kernel_dirs.size() == names.size());
  CHECK(std::filesystem::exists(dump / "plain" / "traced.ir.txt"));  // a safe name is kept as it is
  CHECK(std::filesystem::exists(dump / "plain" / "whole" / "program.cpp"));
  CHECK_FALSE(std::filesystem::exists(cache.path() / "deep" / "escape"));
  CHECK_FALSE(std::filesystem::exists("/tmp/absolute"));

  // A second program finds the kernel in the offline cache: nothing compiled, the source
  // it was compiled from dumped all the same, and one info line says so.
  std::filesystem::remove_all(dump);
  start();
  qd_test::log_capture logs;
  auto k = qd::kernel("plain", [value](qd::types::ndarray<float, 1> x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = value; });
  });
  qd::ndarray<float, 1> x(2);
  k(x);
  k(x);
  CHECK(std::filesystem::exists(dump / "plain" / "whole" / "program.cpp"));
  int said = 0;
  for (const auto& line : logs.at(qd::log_level::info))
    said += line.find("kernel 'plain': print_ir is on, but it was not compiled now") != std::string::npos;
  CHECK(said == 1);
  qd::reset();
}

TEST_CASE("the policy: whole on the CPU by default, with per_offload off, and with the offline cache off") {
  qd_test::temp_dir cache("default");
  auto k = qd::kernel("two_loops", [](qd::types::ndarray<float, 1> x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 1.0f; });
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] + 1.0f; });
  });
  for (auto [mode, offline, reason] :
       {std::tuple{qd::per_offload_mode::automatic, true, qd::fallback_reason::policy_backend},
        std::tuple{qd::per_offload_mode::off, true, qd::fallback_reason::policy_per_offload_off},
        std::tuple{qd::per_offload_mode::on, false, qd::fallback_reason::policy_offline_cache_off},
        std::tuple{qd::per_offload_mode::on, true, qd::fallback_reason::none}}) {
    qd::init(
        {.arch = qd::arch::cpu, .offline_cache = offline, .offline_cache_file_path = cache.str(), .per_offload = mode});
    qd::ndarray<float, 1> x(4);
    k(x);
    auto o = k.per_offload_cache_observations();
    CHECK(o.fallback == reason);
    CHECK(o.frontend_constructs_total == (reason == qd::fallback_reason::none ? 2 : -1));
    CHECK(x.to_host()[3] == 2.0f);
  }
  qd::reset();
}

TEST_CASE("editing one of eight constructs recompiles only it, across processes") {
  qd_test::temp_dir cache("edit");
  std::vector<std::string> env = {"XDG_CACHE_HOME=" + cache.str(), "QD_PER_OFFLOAD=on", "QD_LOG_LEVEL=warn"};
  auto base = qd_test::run_worker(env, "edit base");
  CHECK(base.exit_code == 0);
  CHECK(base.output.find("compiled=8 loaded=0 total=8 fallback=none") != std::string::npos);
  auto edited = qd_test::run_worker(env, "edit edited");
  CHECK(edited.exit_code == 0);
  CHECK(edited.output.find("compiled=1 loaded=7 total=8 fallback=none") != std::string::npos);
  // A different edit of the same construct, plus a new first parameter that only it uses:
  // every other parameter's position shifts, and the other keys still hold.
  auto shifted = qd_test::run_worker(env, "edit edited_with_parameter");
  CHECK(shifted.exit_code == 0);
  CHECK(shifted.output.find("compiled=1 loaded=7 total=8 fallback=none") != std::string::npos);
  auto again = qd_test::run_worker(env, "edit base");
  CHECK(again.exit_code == 0);
  CHECK(again.output.find("compiled=0 loaded=8 total=8 fallback=none") != std::string::npos);
  // Quadrants' names (SPEC §11.9) for the same cold, edited and warm compiles.
  CHECK(base.output.find("recompiled=8 cache_hit=0 tasks_total=8 tasks_cache_hit=0 tasks_recompiled=8") !=
        std::string::npos);
  CHECK(edited.output.find("recompiled=1 cache_hit=7 tasks_total=8 tasks_cache_hit=7 tasks_recompiled=1") !=
        std::string::npos);
  CHECK(again.output.find("recompiled=0 cache_hit=8 tasks_total=8 tasks_cache_hit=8 tasks_recompiled=0") !=
        std::string::npos);
  INFO(base.output, edited.output, shifted.output, again.output);
}

TEST_CASE("Quadrants' observation names: cold, warm from memory and disk, edited, and whole kernels") {
  qd_test::temp_dir cache("quadrants-names");
  auto make = [](float scale) {
    return qd::kernel("named", [scale](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y) {
      qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = x[i] * 2.0f; });
      qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] + scale; });
      qd::range_for(y.shape(0), [&](qd::i32 i) { y[i] = y[i] * 0.5f; });  // unlike the other two
    });
  };
  auto k = make(1.0f);
  auto before = k.per_offload_cache_observations();  // nothing compiled yet
  CHECK(before.frontend_constructs_recompiled == -1);
  CHECK(before.frontend_constructs_cache_hit == -1);
  CHECK(before.tasks_total == -1);
  CHECK(before.tasks_cache_hit == -1);
  CHECK(before.tasks_recompiled == -1);
  auto check = [](const qd::per_offload_observations& o, int total, int recompiled) {
    CHECK(o.frontend_constructs_total == total);
    CHECK(o.frontend_constructs_recompiled == recompiled);
    CHECK(o.frontend_constructs_recompiled == o.constructs_compiled);
    CHECK(o.frontend_constructs_cache_hit == total - recompiled);
    CHECK(o.tasks_total == total);
    CHECK(o.tasks_recompiled == recompiled);
    CHECK(o.tasks_cache_hit == total - recompiled);
  };
  auto run = [](auto& kernel) {  // in the current program
    qd::ndarray<float, 1> x(8), y(8);
    kernel(x, y);
    return kernel.per_offload_cache_observations();
  };
  init_split(cache);
  check(run(k), 3, 3);  // cold
  auto twin = make(1.0f);
  check(run(twin), 3, 0);  // warm, in memory
  auto edited = make(2.0f);
  check(run(edited), 3, 1);  // one construct edited
  qd::reset();
  init_split(cache);
  auto fresh = make(1.0f);
  auto o = run(fresh);
  check(o, 3, 0);  // warm, from disk
  CHECK(o.constructs_loaded == 3);
  qd::reset();
  // The whole kernel: the split did not run, the tasks still count.
  qd_test::temp_dir whole_cache("quadrants-names-whole");
  init_split(whole_cache, qd::per_offload_mode::off);
  auto whole = make(3.0f);
  o = run(whole);
  CHECK(o.frontend_constructs_total == -1);
  CHECK(o.frontend_constructs_recompiled == -1);
  CHECK(o.frontend_constructs_cache_hit == -1);
  CHECK(o.tasks_total == 3);
  CHECK(o.tasks_recompiled == 3);
  CHECK(o.tasks_cache_hit == 0);
  qd::reset();
  init_split(whole_cache, qd::per_offload_mode::off);
  auto whole_warm = make(3.0f);
  o = run(whole_warm);
  CHECK(o.tasks_total == 3);
  CHECK(o.tasks_recompiled == 0);
  CHECK(o.tasks_cache_hit == 3);
  qd::reset();
}

TEST_CASE("two kernels containing one identical construct compile it once") {
  qd_test::temp_dir cache("shared-construct");
  init_split(cache);
  auto first = qd::kernel("first", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = x[i] * 3.0f; });
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 1.0f; });
  });
  auto second = qd::kernel(
      "second", [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> b, qd::types::ndarray<float, 1> c) {
        qd::range_for(c.shape(0), [&](qd::i32 i) { c[i] = 2.0f; });         // not in `first`
        qd::range_for(a.shape(0), [&](qd::i32 i) { b[i] = a[i] * 3.0f; });  // the same as first's construct 1
      });
  qd::ndarray<float, 1> x(8), y(8), z(8);
  x.fill(2.0f);
  first(x, y);
  CHECK(first.per_offload_cache_observations().constructs_compiled == 2);
  x.fill(2.0f);
  second(x, y, z);
  auto o = second.per_offload_cache_observations();
  CHECK(o.constructs_compiled == 1);
  CHECK(o.frontend_constructs_total == 2);
  CHECK(y.to_host()[5] == 6.0f);
  CHECK(z.to_host()[5] == 2.0f);
  qd::reset();
}

TEST_CASE("one array bound to two parameters the split assumed disjoint runs the whole kernel, warning once") {
  qd_test::temp_dir cache("alias");
  qd_test::log_capture logs;
  init_split(cache);
  auto k = qd::kernel("copy_after_snapshot", {"src", "dst"},
                      [](qd::types::ndarray<float, 1> src, qd::types::ndarray<float, 1> dst) {
                        qd::f32 first = src[0];
                        qd::range_for(dst.shape(0), [&](qd::i32 i) { dst[i] = 0.0f; });
                        qd::range_for(dst.shape(0), [&](qd::i32 i) { dst[i] = dst[i] + first; });
                      });
  qd::ndarray<float, 1> a(8), b(8);
  a.fill(3.0f);
  k(a, b);
  CHECK(k.per_offload_cache_observations().fallback == qd::fallback_reason::none);
  CHECK(k.per_offload_cache_observations().runtime_fallbacks == 0);
  CHECK(b.to_host()[4] == 3.0f);
  CHECK(logs.count(qd::log_level::warn, "[PER_OFFLOAD][FALLBACK]") == 0);
  for (int launch = 0; launch < 5; ++launch) {
    a.fill(3.0f);
    k(a, a);  // src and dst share a buffer: recomputing src[0] in construct 2 would read the zeroed value
    CHECK(a.to_host()[4] == 3.0f);  // the whole kernel's answer: the snapshot taken before the zeroing
  }
  CHECK(k.per_offload_cache_observations().runtime_fallbacks == 5);
  CHECK(logs.count(qd::log_level::warn,
                   "[PER_OFFLOAD][FALLBACK] kernel 'copy_after_snapshot': parameters 'src' and 'dst' share a buffer; "
                   "using the whole-kernel variant") == 1);
  k(a, b);  // distinct again: the split
  CHECK(k.per_offload_cache_observations().runtime_fallbacks == 5);
  // An external array's extent is unknown: the check cannot rule out overlap.
  std::vector<float> host(8, 4.0f);
  k(qd::external_array<float, 1>(host.data(), {8}), b);
  CHECK(k.per_offload_cache_observations().runtime_fallbacks == 6);
  CHECK(b.to_host()[1] == 4.0f);
  qd::reset();
}

TEST_CASE("renaming a kernel keeps every offload key") {
  qd_test::temp_dir cache("rename");
  auto body = [](qd::types::ndarray<float, 1> x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = qd::cast<float>(i) * 3.0f; });
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] + 1.0f; });
  };
  init_split(cache);
  auto original = qd::kernel("original_name", body);
  qd::ndarray<float, 1> x(4);
  original(x);
  CHECK(original.per_offload_cache_observations().constructs_compiled == 2);
  init_split(cache);  // a new program: nothing in memory, the disk cache kept
  auto renamed = qd::kernel("renamed", body);
  qd::ndarray<float, 1> y(4);
  renamed(y);
  auto o = renamed.per_offload_cache_observations();
  CHECK(o.constructs_compiled == 0);
  CHECK(o.constructs_loaded == 2);
  CHECK(y.to_host() == std::vector<float>{1.0f, 4.0f, 7.0f, 10.0f});
  qd::reset();
}

TEST_CASE("a whole kernel reused from another kernel object in the same process is neither compiled nor loaded") {
  // Two kernel objects with the same body (the peer project's test of defect 1): the
  // second finds the first's module in memory and reads no disk entry.
  qd_test::temp_dir cache("whole-reuse");
  for (auto mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
    CAPTURE(mode);
    init_split(cache, mode);
    auto body = [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out) {
      qd::var<float> total = 0.0f;
      qd::range_for(x.shape(0), [&](qd::i32 i) { total += x[i]; });
      qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = total * 2.0f; });
    };
    auto first = qd::kernel("first", body);
    auto second = qd::kernel("second", body);
    qd::ndarray<float, 1> x(8), out(8);
    x.fill(1.5f);
    first(x, out);
    const qd::cache_statistics before = qd::offline_cache_statistics();
    second(x, out);
    const qd::cache_statistics after = qd::offline_cache_statistics();
    auto o = second.per_offload_cache_observations();
    CHECK(o.constructs_compiled == 0);
    CHECK(o.constructs_loaded == 0);
    CHECK(after.hits == before.hits);      // no disk entry read ...
    CHECK(after.misses == before.misses);  // ... nor looked up
    CHECK(after.bytes_read == before.bytes_read);
    CHECK(after.compiles == before.compiles);
    CHECK(after.memory_hits > before.memory_hits);
    CHECK(out.to_host()[3] == 24.0f);
    qd::reset();
  }
}

TEST_CASE(
    "editing a kernel with persisted values recompiles the edited task, and its slot's other users only when the "
    "slot moves") {
  qd_test::temp_dir cache("edit-persisted");
  // A reduction (the serial task initialising `total`, loop 1 reducing, loop 3 reading
  // it) and an unrelated loop 2. variant 0: the base; 1: loop 2 edited; 2: loop 3 edited
  // (the slot stays); 3: loop 1's update edited (a different variable: its slot moves).
  auto make = [](int variant) {
    return qd::kernel("edited", [variant](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y,
                                          qd::types::ndarray<float, 1> out) {
      qd::var<float> total = 0.0f;
      qd::range_for(x.shape(0), [&](qd::i32 i) { total += variant == 3 ? x[i] * 2.0f : x[i]; });
      qd::range_for(y.shape(0), [&](qd::i32 i) { y[i] = x[i] * (variant == 1 ? 3.0f : 2.0f); });
      qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = total + (variant == 2 ? 1.0f : 0.0f); });
    });
  };
  init_split(cache);
  qd::ndarray<float, 1> x(8), y(8), out(8);
  x.fill(1.0f);
  const int expected_compiled[] = {4, 1, 1, 3};
  const float expected_out[] = {8.0f, 8.0f, 9.0f, 16.0f};
  for (int variant = 0; variant < 4; ++variant) {
    CAPTURE(variant);
    auto k = make(variant);
    k(x, y, out);
    auto o = k.per_offload_cache_observations();
    CHECK(o.frontend_constructs_total == 4);
    CHECK(o.constructs_compiled == expected_compiled[variant]);
    CHECK(out.to_host()[5] == expected_out[variant]);
  }
  qd::reset();
}

// Element offsets are 32-bit while every array has fewer than 2^31 elements; a launch given a
// larger one runs the whole kernel built with 64-bit offsets (codegen::emit_options::wide_offsets;
// under kernel_coverage, of its instrumented twin), and the next launch with small arrays the
// kernel's own variant again.
TEST_CASE("an array of 2^31 elements or more is addressed with 64-bit offsets") {
  qd_test::temp_dir cache("wide-offsets");
  using at = qd_test::huge_array_mapping;
  for (bool coverage : {false, true}) {
    CAPTURE(coverage);
    if (coverage) ::setenv("QD_KERNEL_COVERAGE_FILE", (cache.path() / "coverage.info").c_str(), 1);
    qd::init({.arch = qd::arch::cpu,
              .offline_cache_file_path = cache.str(),
              .per_offload = qd::per_offload_mode::on,
              .kernel_coverage = coverage});
    auto poke = qd_test::make_poke_kernel();
    qd_test::huge_array_mapping huge;
    std::vector<std::uint8_t> small_host(4 * 16, 0);
    qd::external_array<std::uint8_t, 2> small(small_host.data(), {4, 16});

    poke(small, 2, 3, 10);
    poke(huge.array(), at::i, at::j, 20);
    poke(small, 1, 0, 30);
    qd_test::check_pokes(huge, small_host);
    // The small launches' variant: the split, or (coverage) the instrumented whole kernel.
    CHECK(poke.per_offload_cache_observations().frontend_constructs_total == (coverage ? -1 : 2));
    qd::reset();
    if (coverage) ::unsetenv("QD_KERNEL_COVERAGE_FILE");
  }
}
