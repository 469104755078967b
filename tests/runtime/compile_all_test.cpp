// qd::compile_all: every live kernel made ready at once (launches then compile nothing),
// errors after the others were tried, and the progress line of a long cold start.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "quadrants/cache/code_cache.hpp"
#include "quadrants/runtime/compile_progress.hpp"
#include "quadrants/runtime/pipeline/program.hpp"
#include "runtime/runtime_test_support.hpp"
#include "support/fresh_dir.hpp"

namespace {

// Kernel `salt`: out[i] = x[i] * (salt + 1) + salt, in two constructs.
auto make(int salt) {
  return qd::kernel("k" + std::to_string(salt), {"x", "out"},
                    [salt](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out) {
                      qd::range_for(x.shape(0), [&](qd::i32 i) { out[i] = x[i] * static_cast<float>(salt + 1); });
                      qd::range_for(x.shape(0), [&](qd::i32 i) { out[i] += static_cast<float>(salt); });
                    });
}

// Kernel `salt` of `n` constructs: construct c adds 1000 * salt + c + 1 to out (no two
// constructs alike, so no module is shared and the reads below are exact counts).
auto make_wide(int salt, int n) {
  return qd::kernel("wide" + std::to_string(salt), {"out"}, [salt, n](qd::types::ndarray<float, 1> out) {
    for (int c = 0; c < n; ++c)
      qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] += static_cast<float>(1000 * salt + c + 1); });
  });
}

std::size_t files_in(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.path().extension() == ".qdc";
  return n;
}

}  // namespace

// Issue 30: a warm start's file operations are bounded per kernel, not per construct: one
// variant record per kernel (cache::variant_record) names its offloads' modules, and each
// module is read once.
TEST_CASE("a warm start reads one record per kernel and each module once, whatever the constructs") {
  const int kernels = 4;
  for (int constructs : {3, 24}) {
    CAPTURE(constructs);
    qd_test::fresh_dir cache("warm-reads");
    const qd::config c{
        .offline_cache_file_path = cache.str(), .per_offload = qd::per_offload_mode::on, .num_compile_threads = 2};
    auto run_all = [&] {
      std::vector<decltype(make_wide(0, 1))> ks;
      for (int s = 0; s < kernels; ++s) ks.push_back(make_wide(s, constructs));
      qd::compile_all();
      qd::ndarray<float, 1> out(16);
      for (int s = 0; s < kernels; ++s) {
        out.fill(0.0f);
        ks[static_cast<std::size_t>(s)](out);
        const float want = static_cast<float>(1000 * s * constructs + constructs * (constructs + 1) / 2);
        for (float v : out.to_host()) CHECK(v == want);
      }
    };
    qd_test::init_cpu(c);
    run_all();
    REQUIRE(qd::offline_cache_statistics().compiles > 0);
    const std::size_t modules = files_in(cache.path() / "module");
    CHECK(files_in(cache.path() / "variant") == static_cast<std::size_t>(kernels));
    // One compiler program per kernel while other kernels keep the other thread busy; only
    // the last may spread over both threads (detail::compile_programs_limit).
    CHECK(modules >= static_cast<std::size_t>(kernels));
    CHECK(modules <= static_cast<std::size_t>(kernels + 1));

    qd_test::init_cpu(c);  // a new program: its memory is empty, the disk is warm
    run_all();
    const auto warm = qd::offline_cache_statistics();
    CHECK(warm.compiles == 0);
    CHECK(warm.misses == 0);
    CHECK(warm.hits == kernels + modules);  // counted reads: not one per construct
    CHECK(qd::detail::current_program("test").code().generated() == 0);

    // A record naming a module the disk lost (evicted): a miss for that kernel only, which
    // resolves its offloads one by one, rebuilds that module, and writes its record again.
    std::filesystem::remove(std::filesystem::directory_iterator(cache.path() / "module")->path());
    qd_test::init_cpu(c);
    run_all();
    CHECK(qd::offline_cache_statistics().compiles >= 1);
    qd_test::init_cpu(c);
    run_all();
    CHECK(qd::offline_cache_statistics().compiles == 0);
    CHECK(qd::offline_cache_statistics().hits == kernels + files_in(cache.path() / "module"));

    // A record whose bytes are damaged: refused (a miss), never trusted.
    for (const auto& e : std::filesystem::directory_iterator(cache.path() / "variant")) {
      std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
      char last = 0;
      f.seekg(-1, std::ios::end);
      f.get(last);
      f.seekp(-1, std::ios::end);
      f.put(static_cast<char>(last ^ 0x5a));
    }
    qd_test::init_cpu(c);
    run_all();
    CHECK(qd::offline_cache_statistics().compiles == 0);  // the offloads' own records still hold
    CHECK(qd::offline_cache_statistics().rejected == static_cast<std::uint64_t>(kernels));
  }
  qd::reset();
}

TEST_CASE("compile_all makes every live kernel ready: their launches compile nothing") {
  qd_test::fresh_dir cache("compile-all");
  qd_test::init_cpu({.offline_cache_file_path = cache.str(), .num_compile_threads = 2});
  std::vector<decltype(make(0))> kernels;
  for (int s = 0; s < 5; ++s) kernels.push_back(make(s));
  qd::compile_all();
  const auto compiled = qd::offline_cache_statistics().compiles;
  CHECK(compiled > 0);
  CHECK(qd::detail::current_program("test").code().generated() == 10);  // 5 kernels x 2 constructs
  qd::ndarray<float, 1> x(64), out(64);
  x.fill(2.0f);
  for (int s = 0; s < 5; ++s) {
    kernels[static_cast<std::size_t>(s)](x, out);
    for (float v : out.to_host()) CHECK(v == 2.0f * static_cast<float>(s + 1) + static_cast<float>(s));
  }
  CHECK(qd::offline_cache_statistics().compiles == compiled);
  qd::compile_all();  // all ready: nothing to do
  CHECK(qd::offline_cache_statistics().compiles == compiled);

  // A new program: compile_all finds them on disk, compiling nothing and generating no
  // code (keys hash the code's identity: cache::add_code_identity).
  qd_test::init_cpu({.offline_cache_file_path = cache.str(), .num_compile_threads = 2});
  qd::compile_all();
  CHECK(qd::offline_cache_statistics().compiles == 0);
  CHECK(qd::offline_cache_statistics().hits > 0);
  CHECK(qd::detail::current_program("test").code().generated() == 0);
  qd::reset();
}

// The workers analyse and compile while the calling thread traces; the user's lambdas
// themselves still run on the calling thread only, one at a time.
TEST_CASE("compile_all runs the kernels' lambdas on the calling thread, one at a time") {
  qd_test::fresh_dir cache("compile-all-threads");
  qd_test::init_cpu({.offline_cache_file_path = cache.str(), .num_compile_threads = 2});
  std::mutex m;
  std::vector<std::thread::id> tracers;
  std::atomic<int> inside{0}, most{0};
  auto make_watched = [&](int salt) {
    return qd::kernel("watched" + std::to_string(salt), {"x", "out"},
                      [&, salt](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out) {
                        const int now = ++inside;
                        for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
                        }
                        {
                          std::lock_guard lock(m);
                          tracers.push_back(std::this_thread::get_id());
                        }
                        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // room for an overlap to show
                        qd::range_for(x.shape(0), [&](qd::i32 i) { out[i] = x[i] + static_cast<float>(salt); });
                        qd::range_for(x.shape(0), [&](qd::i32 i) { out[i] *= 2.0f; });
                        --inside;
                      });
  };
  std::vector<decltype(make_watched(0))> kernels;
  for (int s = 0; s < 8; ++s) kernels.push_back(make_watched(s));
  qd::compile_all();
  CHECK(tracers.size() == 8);
  for (const auto& id : tracers) CHECK(id == std::this_thread::get_id());
  CHECK(most.load() == 1);
  const auto compiled = qd::offline_cache_statistics().compiles;
  qd::ndarray<float, 1> x(16), out(16);
  x.fill(1.0f);
  for (int s = 0; s < 8; ++s) {
    kernels[static_cast<std::size_t>(s)](x, out);
    for (float v : out.to_host()) CHECK(v == 2.0f * (1.0f + static_cast<float>(s)));
  }
  CHECK(qd::offline_cache_statistics().compiles == compiled);  // every kernel was ready
  CHECK(tracers.size() == 8);                                  // and not traced again
  qd::reset();
}

TEST_CASE("compile_all: a kernel that fails to trace is reported after the others were compiled") {
  qd_test::init_cpu({.offline_cache = false});
  auto good = make(7);
  auto bad = qd::kernel("bad", {"x"}, [](qd::types::ndarray<float, 1> x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 1.0f; });
    throw qd::user_error("kernel 'bad': refused on purpose");
  });
  CHECK_THROWS_WITH_AS(qd::compile_all(), doctest::Contains("refused on purpose"), qd::user_error);
  const auto compiled = qd::offline_cache_statistics().compiles;
  qd::ndarray<float, 1> x(8), out(8);
  x.fill(1.0f);
  good(x, out);
  CHECK(out.to_host()[0] == 15.0f);
  CHECK(qd::offline_cache_statistics().compiles == compiled);  // it was ready
  qd::reset();
}

TEST_CASE("compile_all before qd::init is a user error") {
  qd::reset();
  CHECK_THROWS_WITH_AS(qd::compile_all(), doctest::Contains("compile_all"), qd::user_error);
}

TEST_CASE("the progress of a long cold start: constructs done of those to compile, then done") {
  std::mutex m;
  std::vector<std::string> lines;
  qd::set_log_sink([&](qd::log_level, std::string_view text) {
    std::lock_guard lock(m);
    lines.emplace_back(text);
  });
  const auto level = qd::get_log_level();
  qd::set_log_level(qd::log_level::info);
  {
    qd::detail::compile_progress progress(4, 2, std::chrono::milliseconds(0));
    progress.expect(6);  // a kernel traced after the progress began
    progress.kernel_done(4);
    while (progress.shown() == 0) std::this_thread::yield();  // the reporter's first line
    progress.kernel_done(6);
    progress.finish();
  }
  qd::set_log_level(qd::log_level::warn);
  {
    qd::detail::compile_progress silenced(10, 2, std::chrono::milliseconds(0));
    silenced.kernel_done(10);
    silenced.finish();
    CHECK(silenced.shown() == 0);
  }
  {
    qd::set_log_level(qd::log_level::info);
    qd::detail::compile_progress quick(10, 2);  // done within its quiet time: nothing shown
    quick.kernel_done(10);
    quick.finish();
    CHECK(quick.shown() == 0);
  }
  qd::set_log_level(level);
  qd::set_log_sink(nullptr);
  std::lock_guard lock(m);
  REQUIRE(lines.size() >= 2);
  // The first line may come before expect(6) (the reporter starts at once here): x/4 or x/10.
  CHECK((lines.front().find("/4 constructs") != std::string::npos ||
         lines.front().find("/10 constructs") != std::string::npos));
  CHECK(lines.front().find("/2 kernels") != std::string::npos);
  CHECK(lines.back().find("10/10 constructs (2/2 kernels)") != std::string::npos);
  CHECK(lines.back().find("done") != std::string::npos);
}
