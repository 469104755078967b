// qd::arch::vulkan end to end, through qd::init and qd::kernel: suite kernels run on the
// Vulkan device (lavapipe in CI) give the CPU backend's results; the split is on by
// default; compile_only stores SPIR-V that a program with the device then loads; types
// the backend lacks are a qd::user_error; no Vulkan loader falls back to the CPU with one
// warning. Without a Vulkan device the tests report themselves skipped.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <quadrants/quadrants.hpp>

#include "backend/suite_kernels.hpp"
#include "support/fresh_dir.hpp"

namespace {

namespace kernels = qd_test::kernels;

// Starts a program on `a` without fallback; for Vulkan, false after reporting the test
// skipped when this machine has no Vulkan device.
bool start(qd::arch a, qd::config c = {}) {
  c.arch = a;
  c.enable_fallback = false;
  try {
    qd::init(c);
    return true;
  } catch (const qd::user_error& e) {
    if (a != qd::arch::vulkan) throw;
    const std::string why = std::string("skipped: no Vulkan device: ") + e.what();
    MESSAGE(why);
    return false;
  }
}

bool have_vulkan() {
  static const bool present = [] {
    const bool ok = start(qd::arch::vulkan);
    if (ok) qd::reset();
    return ok;
  }();
  return present;
}

// Each run's arrays, read back as bytes, in order.
using outputs = std::vector<std::vector<unsigned char>>;

template <class T, int N>
void keep(outputs& out, const qd::ndarray<T, N>& a) {
  auto h = a.to_host();
  std::vector<unsigned char> bytes(h.size() * sizeof(T));
  if (!h.empty()) std::memcpy(bytes.data(), h.data(), bytes.size());
  out.push_back(std::move(bytes));
}

// Runs `body` on the CPU and on Vulkan (each in a program of its own, per_offload `mode`)
// and requires the same bytes in every array it keeps.
void same_as_cpu(const std::function<void(outputs&)>& body,
                 qd::per_offload_mode mode = qd::per_offload_mode::automatic) {
  outputs cpu, vk;
  REQUIRE(start(qd::arch::cpu, {.per_offload = mode}));
  body(cpu);
  qd::reset();
  REQUIRE(start(qd::arch::vulkan, {.per_offload = mode}));
  CHECK(qd::current_settings().arch == qd::arch::vulkan);
  body(vk);
  qd::reset();
  REQUIRE(cpu.size() == vk.size());
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    CAPTURE(i);
    CHECK(cpu[i] == vk[i]);
  }
}

}  // namespace

TEST_CASE(
    "vulkan: range loops, ndrange, atomics (f32 add native, CAS loops for the rest), reductions and random "
    "numbers give the CPU's results, split and whole") {
  if (!have_vulkan()) return;
  auto loops = [](outputs& out) {
    auto k = kernels::ndranges();
    qd::ndarray<std::int32_t, 2> a2({5, 7});
    qd::ndarray<std::int32_t, 3> a3({3, 4, 5});
    qd::ndarray<std::int32_t, 4> a4({2, 3, 4, 5});
    a2.fill(0), a3.fill(0), a4.fill(0);
    k(a2, a3, a4);
    keep(out, a2), keep(out, a3), keep(out, a4);
    auto r = kernels::ranges();
    qd::ndarray<std::int32_t, 1> hits(40), values(40), fixed(7);
    qd::ndarray<float, 2> m({6, 9});
    qd::ndarray<std::int32_t, 0> count;
    hits.fill(0), values.fill(-1), fixed.fill(0), count.fill(0);
    r(hits, values, 3, std::int64_t{31}, m, count, 4, 5, fixed);
    r(hits, values, 10, std::int64_t{5}, m, count, 0, 3, fixed);  // empty extents
    keep(out, hits), keep(out, values), keep(out, m), keep(out, count), keep(out, fixed);
  };
  auto atomics = [](outputs& out) {
    auto k = kernels::atomics_parallel();
    std::vector<std::int32_t> xs;
    for (int i = 0; i < 3000; ++i) xs.push_back((i * 7919) % 2001 - 1000);
    qd::ndarray<std::int32_t, 1> x(3000), acc(4), tops(4), mine(3000);
    qd::ndarray<std::int32_t, 2> olds({3000, 2});
    qd::ndarray<float, 1> facc(3);
    x.from_host(xs);
    acc.from_host(std::vector<std::int32_t>{0, 0, 1 << 30, -(1 << 30)});
    facc.from_host(std::vector<float>{0.0f, 1e30f, -1e30f});
    k(x, acc, olds, facc, tops, mine);
    keep(out, acc), keep(out, facc), keep(out, tops), keep(out, mine);
    auto h = kernels::histogram<float>();  // f32 +=, -= and min/max on arrays and variables
    qd::ndarray<std::int32_t, 1> keys(2000);
    std::vector<std::int32_t> ks;
    for (int i = 0; i < 2000; ++i) ks.push_back((i * 104729) % 10007);
    keys.from_host(ks);
    qd::ndarray<float, 1> up(16), down(16), extremes(4);
    qd::ndarray<float, 0> all;
    up.fill(0.0f), down.fill(0.0f), all.fill(0.0f);
    extremes.from_host(std::vector<float>{1e30f, -1e30f, 0.0f, 0.0f});
    h(keys, up, down, all, extremes);
    keep(out, up), keep(out, down), keep(out, all), keep(out, extremes);
    auto t = kernels::running_total();  // reductions read by later loops
    qd::ndarray<std::int32_t, 1> xi(1000), oi(10);
    qd::ndarray<float, 1> xf(1000), of(3);
    std::vector<std::int32_t> vi;
    std::vector<float> vf;
    for (int i = 0; i < 1000; ++i) vi.push_back(i % 17 - 8), vf.push_back(static_cast<float>(i % 9) * 0.25f);
    xi.from_host(vi), xf.from_host(vf);
    t(xi, oi, xf, of);
    keep(out, oi), keep(out, of);
  };
  auto draws = [](outputs& out) {
    auto k = kernels::uniforms();
    qd::ndarray<float, 1> f(300);
    qd::ndarray<double, 1> d(300);
    qd::ndarray<std::uint32_t, 1> u(300);
    qd::ndarray<std::int32_t, 1> s(300);
    qd::ndarray<float, 0> serial;
    qd::ndarray<float, 2> grid({8, 9});
    k(f, d, u, s, serial, grid);
    k(f, d, u, s, serial, grid);  // a second launch draws other numbers, alike on both
    keep(out, f), keep(out, d), keep(out, u), keep(out, s), keep(out, serial), keep(out, grid);
  };
  for (auto mode : {qd::per_offload_mode::off, qd::per_offload_mode::on}) {
    CAPTURE(mode);
    same_as_cpu(loops, mode);
    same_as_cpu(atomics, mode);
    same_as_cpu(draws, mode);
  }
}

TEST_CASE("vulkan: graph kernels (do_while read on the host) and qd::concurrent (one queue) give the CPU's results") {
  if (!have_vulkan()) return;
  auto graphs = [](outputs& out) {
    auto loops = kernels::graph_loops();
    auto regions = kernels::concurrent_regions();
    qd::ndarray<float, 1> x(6), rows(4), a(9), b(5);
    qd::ndarray<std::int32_t, 0> r, count, inner, outer;
    x.from_host(std::vector<float>{0, 1, 2, 0, 1, 2});
    r.fill(0);
    loops(x, rows, r, count, inner, outer);
    regions(a, b);
    keep(out, rows), keep(out, r), keep(out, a), keep(out, b);
  };
  same_as_cpu(graphs, qd::per_offload_mode::off);
  same_as_cpu(graphs, qd::per_offload_mode::on);
}

TEST_CASE("vulkan: the split is the default, return values arrive, and a bounds check names the parameter") {
  if (!have_vulkan()) return;
  REQUIRE(start(qd::arch::vulkan, {.check_out_of_bound = true}));
  kernels::check_returns();

  auto t = kernels::running_total();  // splits: per-offload is the default on Vulkan
  qd::ndarray<std::int32_t, 1> xi(100), oi(4);
  qd::ndarray<float, 1> xf(100), of(2);
  xi.fill(1), xf.fill(0.5f);
  t(xi, oi, xf, of);
  CHECK(t.per_offload_cache_observations().fallback == qd::fallback_reason::none);
  CHECK(t.per_offload_cache_observations().frontend_constructs_total >= 4);  // one per loop at least
  CHECK(oi.to_host() == std::vector<std::int32_t>{100, 101, 102, 103});
  CHECK(of.to_host() == std::vector<float>{50.0f, 50.0f});

  auto oob = kernels::out_of_bounds();
  qd::ndarray<float, 1> small(8);
  try {
    oob(small, 9);
    FAIL("an out-of-range index did not fail the launch");
  } catch (const qd::error& e) {
    CHECK(std::string(e.what()).find("'x'") != std::string::npos);
  }
  oob(small, 8);  // the device stays usable
  CHECK(small.to_host() == std::vector<float>(8, 1.0f));
  qd::reset();
}

TEST_CASE("vulkan: qd::print writes the CPU's lines") {
  if (!have_vulkan()) return;
  auto capture = [](qd::arch a) {
    REQUIRE(start(a));
    auto k = kernels::print_serial();
    qd::ndarray<float, 1> x(1);
    x.fill(1.5f);
    std::fflush(stdout);
    char path[] = "/tmp/qd-vk-print-XXXXXX";
    const int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    const int saved = ::dup(1);
    ::dup2(fd, 1);
    k(x, 7, std::int64_t{-5000000000}, 4000000000u, std::uint8_t{200}, true, 0.125);
    std::fflush(stdout);
    ::dup2(saved, 1);
    ::close(saved);
    std::string text;
    char buffer[256];
    ::lseek(fd, 0, SEEK_SET);
    for (ssize_t got; (got = ::read(fd, buffer, sizeof(buffer))) > 0;)
      text.append(buffer, static_cast<std::size_t>(got));
    ::close(fd);
    ::unlink(path);
    qd::reset();
    return text;
  };
  const std::string cpu = capture(qd::arch::cpu), vk = capture(qd::arch::vulkan);
  CHECK(cpu.find("x0 = 1.5 n = 7 100% done") != std::string::npos);
  CHECK(vk == cpu);
}

TEST_CASE("vulkan: a type or an operation the backend lacks is a qd::user_error naming it and the kernel") {
  if (!have_vulkan()) return;
  REQUIRE(start(qd::arch::vulkan));
  auto k = qd::kernel("narrow_store", {"a"}, [](qd::types::ndarray<std::int16_t, 1> a) {
    qd::range_for(a.shape(0), [&](qd::i32 i) { a[i] = qd::cast<std::int16_t>(i); });
  });
  qd::ndarray<std::int16_t, 1> a(4);
  try {
    k(a);
    FAIL("an i16 kernel ran on Vulkan");
  } catch (const qd::user_error& e) {
    const std::string m = e.what();
    CHECK(m.find("narrow_store") != std::string::npos);
    CHECK(m.find("i16") != std::string::npos);
    CHECK(m.find("Vulkan") != std::string::npos);
  }
  qd::reset();
}

TEST_CASE("vulkan: compile_only stores SPIR-V without a device, and a program with the device loads it") {
  if (!have_vulkan()) return;
  qd_test::fresh_dir cache("vulkan-compile-only");
  qd::config c{.offline_cache_file_path = cache.str(), .compile_only = true};
  REQUIRE(start(qd::arch::vulkan, c));
  int constructs = 0;
  {
    auto t = kernels::running_total();
    t.compile();
    constructs = t.per_offload_cache_observations().frontend_constructs_total;
    CHECK(constructs >= 4);
    CHECK(t.per_offload_cache_observations().constructs_compiled == constructs);
    // Nothing can be allocated or run without a device.
    CHECK_THROWS_AS((qd::ndarray<float, 1>(4)), qd::user_error);
  }
  const auto stored = qd::offline_cache_statistics();
  CHECK(stored.stores >= static_cast<std::uint64_t>(constructs) + 1);  // a record and a SPIR-V module per construct
  qd::reset();

  c.compile_only = false;
  REQUIRE(start(qd::arch::vulkan, c));
  auto t = kernels::running_total();
  qd::ndarray<std::int32_t, 1> xi(10), oi(3);
  qd::ndarray<float, 1> xf(10), of(1);
  xi.fill(2), xf.fill(0.25f);
  t(xi, oi, xf, of);
  CHECK(qd::offline_cache_statistics().compiles == 0);
  CHECK(t.per_offload_cache_observations().constructs_loaded == constructs);
  CHECK(oi.to_host() == std::vector<std::int32_t>{20, 21, 22});
  CHECK(of.to_host() == std::vector<float>{2.5f});
  qd::reset();

  // Every stored entry corrupted in its middle: each is a miss, rebuilt, never loaded.
  int corrupted = 0;
  for (const auto& f : std::filesystem::recursive_directory_iterator(cache.path())) {
    if (!f.is_regular_file() || f.file_size() < 16) continue;
    std::fstream io(f.path(), std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(static_cast<std::streamoff>(f.file_size() / 2));
    char byte = 0;
    io.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x5a);
    io.seekp(static_cast<std::streamoff>(f.file_size() / 2));
    io.write(&byte, 1);
    ++corrupted;
  }
  CHECK(corrupted >= constructs + 1);
  REQUIRE(start(qd::arch::vulkan, c));
  auto again = kernels::running_total();
  qd::ndarray<std::int32_t, 1> xi2(10), oi2(3);
  qd::ndarray<float, 1> xf2(10), of2(1);
  xi2.fill(2), xf2.fill(0.25f);
  again(xi2, oi2, xf2, of2);
  CHECK(oi2.to_host() == std::vector<std::int32_t>{20, 21, 22});
  CHECK(again.per_offload_cache_observations().constructs_loaded == 0);
  CHECK(qd::offline_cache_statistics().compiles > 0);
  qd::reset();
}

TEST_CASE("vulkan: without a Vulkan loader, arch = vulkan falls back to the CPU with one warning") {
  // The loader is opened once per process, so the check runs in a fresh one: this test
  // binary again, with QD_VULKAN_PATH naming no library, running only this test.
  if (std::getenv("QD_TEST_NO_VULKAN_LOADER")) {
    int warnings = 0;
    std::string text;
    qd::set_log_sink([&](qd::log_level level, std::string_view m) {
      if (level == qd::log_level::warn) ++warnings, text = m;
    });
    qd::init({.arch = qd::arch::vulkan});
    CHECK(qd::current_settings().arch == qd::arch::cpu);
    CHECK(warnings == 1);
    CHECK(text.find("falling back to arch = cpu") != std::string::npos);
    CHECK(text.find("QD_VULKAN_PATH") != std::string::npos);
    auto t = kernels::running_total();
    qd::ndarray<std::int32_t, 1> xi(3), oi(1);
    qd::ndarray<float, 1> xf(3), of(1);
    xi.fill(1), xf.fill(1.0f);
    t(xi, oi, xf, of);
    CHECK(oi.to_host()[0] == 3);
    qd::reset();
    return;
  }
  std::fflush(nullptr);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::setenv("QD_VULKAN_PATH", "/nonexistent/libvulkan.so.1", 1);
    ::setenv("QD_TEST_NO_VULKAN_LOADER", "1", 1);
    ::execl("/proc/self/exe", "vulkan_runtime_test", "--test-case=vulkan: without a Vulkan loader*", "--no-version",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
