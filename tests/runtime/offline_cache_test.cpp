// The offline cache from the user's side (issue 3): a second process compiles
// nothing, corruption is a recompile, many processes share one cold cache, and
// a cache that cannot be written degrades to memory with one warning.
#include <doctest/doctest.h>

#include <quadrants/quadrants.hpp>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "quadrants/cache/store.hpp"
#include "quadrants/cache/tier.hpp"
#include "quadrants/runtime/pipeline/program.hpp"
#include "runtime/worker_support.hpp"

namespace fs = std::filesystem;

namespace {

std::vector<std::string> worker_env(const qd_test::temp_dir& cache, bool split) {
  return {"XDG_CACHE_HOME=" + cache.str(), std::string("QD_PER_OFFLOAD=") + (split ? "on" : "off"),
          "QD_LOG_LEVEL=warn"};
}

std::string cache_root(const qd_test::temp_dir& cache) { return (cache.path() / "quadrants" / "qdcache").string(); }

}  // namespace

TEST_CASE("a second process compiles nothing and never runs the compiler") {
  for (bool split : {false, true}) {
    CAPTURE(split);
    qd_test::temp_dir cache(split ? "warm-split" : "warm-whole");
    // The compiler, behind a wrapper that records every run.
    fs::path log = cache.path() / "compiler-runs.log";
    fs::path wrapper = cache.path() / "recording-c++";
    std::ofstream(wrapper) << "#!/bin/sh\necho run >> '" << log.string() << "'\nexec c++ \"$@\"\n";
    fs::permissions(wrapper, fs::perms::owner_all);
    auto env = worker_env(cache, split);
    env.push_back("QD_CXX=" + wrapper.string());
    auto runs = [&] {
      std::ifstream in(log);
      int n = 0;
      for (std::string line; std::getline(in, line);) ++n;
      return n;
    };
    auto cold = qd_test::run_worker(env, "suite 1");
    REQUIRE(cold.exit_code == 0);
    const int cold_runs = runs();
    CHECK(cold_runs >= 1);
    auto warm = qd_test::run_worker(env, "suite 1");
    CHECK(warm.exit_code == 0);
    CHECK(runs() == cold_runs);  // not one more compiler run
    CHECK(warm.output.find("compiles=0 ") != std::string::npos);
    CHECK(warm.output.find("misses=0 ") != std::string::npos);
    INFO(cold.output, warm.output);
  }
}

TEST_CASE("every corrupted entry is a miss, a recompile, a correct result, and then a hit") {
  qd_test::temp_dir cache("corrupt");
  auto env = worker_env(cache, true);
  REQUIRE(qd_test::run_worker(env, "suite 0").exit_code == 0);
  auto entries = qd::cache::list_entries(cache_root(cache));
  REQUIRE(entries.size() >= 3);
  using damage = void (*)(const fs::path&);
  std::vector<std::pair<const char*, damage>> cases = {
      {"truncated header", [](const fs::path& p) { fs::resize_file(p, 10); }},
      {"truncated payload", [](const fs::path& p) { fs::resize_file(p, fs::file_size(p) - 7); }},
      {"flipped payload byte",
       [](const fs::path& p) {
         std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
         f.seekg(-3, std::ios::end);
         char c = 0;
         f.get(c);
         f.seekp(-3, std::ios::end);
         f.put(static_cast<char>(c ^ 0x5a));
       }},
      {"wrong magic",
       [](const fs::path& p) {
         std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
         f.put('X');
       }},
      {"zero-length file", [](const fs::path& p) { fs::resize_file(p, 0); }},
      {"a valid entry whose payload is garbage (a module that does not load)",
       [](const fs::path& p) {
         auto kind = qd::cache::entry_kind_from_name(p.parent_path().filename().string());
         auto k = qd::cache::key::from_hex(p.stem().string());
         REQUIRE((kind && k));
         std::vector<std::byte> garbage(4096, std::byte{0x5a});
         auto file = qd::cache::encode_entry(*kind, *k, garbage, 1);
         std::ofstream(p, std::ios::binary | std::ios::trunc)
             .write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
       }},
      {"a directory where the file should be",
       [](const fs::path& p) {
         fs::remove(p);
         fs::create_directory(p);
       }},
  };
  for (auto& one : cases) {
    const char* name = one.first;  // not a structured binding: CAPTURE is a lambda
    CAPTURE(name);
    for (const auto& e : qd::cache::list_entries(cache_root(cache))) one.second(e.path);
    auto damaged = qd_test::run_worker(env, "suite 0");
    CHECK(damaged.exit_code == 0);                                   // every result still correct
    CHECK(damaged.output.find("compiles=0 ") == std::string::npos);  // it recompiled
    auto after = qd_test::run_worker(env, "suite 0");
    CHECK(after.exit_code == 0);
    CHECK(after.output.find("compiles=0 ") != std::string::npos);  // the bad entries were replaced
    CHECK(after.output.find("rejected=0") != std::string::npos);
    INFO(damaged.output, after.output);
  }
}

TEST_CASE("eight processes on one cold cache: correct results, a clean cache, no temporary files") {
  qd_test::temp_dir cache("concurrent");
  for (bool split : {true, false}) {
    auto env = worker_env(cache, split);
    std::vector<std::future<qd_test::worker_result>> runs;
    for (int id = 0; id < 8; ++id)
      runs.push_back(std::async(std::launch::async,
                                [env, id] { return qd_test::run_worker(env, "suite " + std::to_string(id)); }));
    for (auto& r : runs) {
      auto result = r.get();
      CHECK(result.exit_code == 0);
      INFO(result.output);
    }
  }
  int bad = 0;
  for (const auto& e : qd::cache::list_entries(cache_root(cache))) bad += !qd::cache::verify_entry(e.path);
  CHECK(bad == 0);
  int temporaries = 0;
  for (const auto& f : fs::recursive_directory_iterator(cache_root(cache)))
    temporaries += f.path().extension() == ".tmp";
  CHECK(temporaries == 0);
}

TEST_CASE("an unwritable cache directory degrades to memory with one warning") {
  qd_test::temp_dir cache("read-only");
  // A regular file where the root directory should be: unwritable even for root.
  fs::path blocker = cache.path() / "not-a-directory";
  std::ofstream(blocker) << "x";
  std::vector<std::string> warnings;
  qd::set_log_sink([&](qd::log_level l, std::string_view s) {
    if (l == qd::log_level::warn) warnings.emplace_back(s);
  });
  qd::init({.arch = qd::arch::cpu,
            .offline_cache_file_path = (blocker / "qdcache").string(),
            .per_offload = qd::per_offload_mode::on});
  auto k = qd::kernel("degraded", [](qd::types::ndarray<float, 1> x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = qd::cast<float>(i) * 2.0f; });
    x[0] = 9.0f;
  });
  qd::ndarray<float, 1> x(4);
  k(x);
  k(x);
  CHECK(x.to_host() == std::vector<float>{9.0f, 2.0f, 4.0f, 6.0f});
  auto stats = qd::offline_cache_statistics();
  CHECK_FALSE(stats.disk_writable);
  CHECK(stats.compiles == 1);
  CHECK(warnings.size() == 1);
  qd::set_log_sink({});
  qd::reset();
}

TEST_CASE("offline_cache = false neither reads nor writes the disk") {
  qd_test::temp_dir cache("off");
  qd::init({.arch = qd::arch::cpu, .offline_cache = false, .offline_cache_file_path = cache.str()});
  auto k = qd::kernel(
      "no_disk", [](qd::types::ndarray<float, 1> x) { qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 1.0f; }); });
  qd::ndarray<float, 1> x(4);
  k(x);
  CHECK(fs::is_empty(cache.path()));
  auto s = qd::offline_cache_statistics();
  CHECK(s.hits + s.misses + s.stores == 0);
  qd::reset();
}

TEST_CASE("whole kernels loaded from disk report their constructs as loaded") {
  qd_test::temp_dir cache("observations");
  auto k = qd::kernel("observed", [](qd::types::ndarray<float, 1> x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 1.0f; });
    x[0] = 2.0f;
  });
  for (int run = 0; run < 2; ++run) {
    qd::init({.arch = qd::arch::cpu, .offline_cache_file_path = cache.str()});
    qd::ndarray<float, 1> x(4);
    k(x);
    auto o = k.per_offload_cache_observations();
    CHECK(o.frontend_constructs_total == -1);
    CHECK(o.constructs_compiled == (run == 0 ? 2 : 0));
    CHECK(o.constructs_loaded == (run == 0 ? 0 : 2));
    CHECK(x.to_host()[0] == 2.0f);
  }
  qd::reset();
}

namespace {

// A third cache tier, written here as a user of the tier interface would: a map that every
// program listing it shares (an object store's stand-in).
struct shared_objects {
  std::mutex mutex;
  std::map<std::pair<qd::cache::entry_kind, std::string>, std::vector<std::byte>> objects;
  int count(qd::cache::entry_kind kind) {
    std::lock_guard lock(mutex);
    int n = 0;
    for (const auto& [at, payload] : objects) n += at.first == kind;
    return n;
  }
};

class shared_tier final : public qd::cache::tier {
 public:
  explicit shared_tier(std::shared_ptr<shared_objects> o) : o_(std::move(o)) {}
  std::string_view name() const override { return "shared objects"; }
  std::optional<qd::cache::tier_item> get(qd::cache::entry_kind kind, const qd::cache::key& k) override {
    std::lock_guard lock(o_->mutex);
    auto it = o_->objects.find({kind, k.hex()});
    if (it == o_->objects.end()) return std::nullopt;
    return qd::cache::tier_item{it->second, nullptr};
  }
  bool put(qd::cache::entry_kind kind, const qd::cache::key& k, std::span<const std::byte> payload,
           const std::shared_ptr<qd::backend::loaded_module>&) override {
    std::lock_guard lock(o_->mutex);
    o_->objects[{kind, k.hex()}].assign(payload.begin(), payload.end());
    return true;
  }

 private:
  std::shared_ptr<shared_objects> o_;
};

}  // namespace

TEST_CASE("a cache tier listed after the disk fills an empty disk, and its bad modules are rebuilt") {
  auto shared = std::make_shared<shared_objects>();
  qd::detail::set_extra_cache_tier([shared] { return std::make_unique<shared_tier>(shared); });
  auto k = qd::kernel("tiered", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> out) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = qd::cast<float>(i); });
    qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = x[i] * 3.0f; });
  });
  for (int run = 0; run < 3; ++run) {
    CAPTURE(run);
    if (run == 2) {  // modules that do not load: misses, rebuilt and replaced
      std::lock_guard lock(shared->mutex);
      for (auto& [at, payload] : shared->objects)
        if (at.first == qd::cache::entry_kind::module) payload.assign(64, std::byte{0x5a});
    }
    qd_test::temp_dir cache("extra-tier-" + std::to_string(run));  // every program on an empty disk
    qd::init({.arch = qd::arch::cpu, .offline_cache_file_path = cache.str(), .per_offload = qd::per_offload_mode::on});
    qd::ndarray<float, 1> x(5), out(5);
    k(x, out);
    CHECK(out.to_host() == std::vector<float>{0.0f, 3.0f, 6.0f, 9.0f, 12.0f});
    const auto o = k.per_offload_cache_observations();
    CHECK(o.constructs_compiled == (run == 1 ? 0 : 2));
    CHECK(o.constructs_loaded == (run == 1 ? 2 : 0));
    // Whatever was compiled or found reached every tier: the disk and the third one.
    CHECK(shared->count(qd::cache::entry_kind::offload) == 2);
    CHECK(shared->count(qd::cache::entry_kind::module) >= 1);
    int on_disk = 0;
    for (const qd::cache::entry_info& e : qd::cache::list_entries(cache.str()))
      on_disk += e.kind == qd::cache::entry_kind::offload && qd::cache::verify_entry(e.path);
    CHECK(on_disk == 2);
    qd::reset();
  }
  {
    std::lock_guard lock(shared->mutex);
    for (const auto& [at, payload] : shared->objects) CHECK(payload != std::vector<std::byte>(64, std::byte{0x5a}));
  }
  qd::detail::set_extra_cache_tier({});
}
