// Kernel line coverage (SPEC §11.8, issue 14): which source lines of a kernel ran and which
// way each qd::if_ went, as lcov DA and BRDA records, merged (added) across programs into
// the tracefile; genhtml renders it.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <quadrants/quadrants.hpp>

#include "support/fresh_dir.hpp"
#include "support/log_capture.hpp"

namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// This file's DA (line -> hits) and BRDA ("line,block,branch" -> taken) records.
struct records {
  std::map<int, long> lines;
  std::map<std::string, long> branches;
};
records of_this_file(const std::string& tracefile) {
  records r;
  std::istringstream in(tracefile);
  std::string line;
  bool mine = false;
  while (std::getline(in, line)) {
    if (line.starts_with("SF:")) mine = line.substr(3) == __FILE__;
    if (!mine) continue;
    if (line.starts_with("DA:")) r.lines[std::stoi(line.substr(3))] = std::stol(line.substr(line.find(',') + 1));
    if (line.starts_with("BRDA:")) {
      const std::string rest = line.substr(5);
      const auto last = rest.rfind(',');
      r.branches[rest.substr(0, last)] = std::stol(rest.substr(last + 1));
    }
  }
  return r;
}

constexpr int kernel_line = __LINE__ + 2;  // the lines below are checked by number
auto clamp_kernel() {
  return qd::kernel("clamp_negative", {"x"}, [](qd::types::ndarray<float, 1> x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) {
      qd::if_(x[i] < 0.0f, [&] {
        x[i] = 0.0f;
      }).else_([&] {
        x[i] = x[i] * 2.0f;
      });
      qd::if_(x[i] > 1000.0f, [&] {
        x[i] = 1000.0f;
      });
    });
  });
}
const int loop = kernel_line + 1, first_if = loop + 1, then_line = loop + 2, else_line = loop + 4,
          second_if = loop + 6, never = loop + 7;

void run_once(const qd::config& c) {
  qd::init(c);
  auto k = clamp_kernel();
  qd::ndarray<float, 1> x(4);
  x.from_host(std::vector<float>{-1.0f, 2.0f, -3.0f, 4.0f});
  k(x);
  CHECK(x.to_host() == std::vector<float>{0.0f, 4.0f, 0.0f, 8.0f});
  CHECK(k.per_offload_cache_observations().fallback ==
        (c.per_offload == qd::per_offload_mode::on ? qd::fallback_reason::diagnostic : qd::fallback_reason::policy_backend));
  qd::reset();
}

}  // namespace

TEST_CASE("coverage records lines and branches, and merges them across programs into the tracefile") {
  for (qd::arch arch : {qd::arch::cpu, qd::arch::reference}) {
    qd_test::fresh_dir dir("coverage");
    const fs::path file = dir.path() / "kernels.info";
    ::setenv("QD_KERNEL_COVERAGE_FILE", file.c_str(), 1);
    const qd::config c{.arch = arch, .offline_cache_file_path = (dir.path() / "cache").string(),
                       .per_offload = qd::per_offload_mode::on, .kernel_coverage = true};
    run_once(c);
    records r = of_this_file(read(file));
    CHECK(r.lines[loop] == 1);
    CHECK(r.lines[first_if] == 1);
    CHECK(r.lines[then_line] == 1);
    CHECK(r.lines[else_line] == 1);
    CHECK(r.lines[second_if] == 1);
    REQUIRE(r.lines.count(never) == 1);
    CHECK(r.lines[never] == 0);  // listed, never run
    CHECK(r.branches[std::to_string(first_if) + ",0,0"] == 1);
    CHECK(r.branches[std::to_string(first_if) + ",0,1"] == 1);
    CHECK(r.branches[std::to_string(second_if) + ",0,0"] == 0);
    CHECK(r.branches[std::to_string(second_if) + ",0,1"] == 1);
    // A second program adds to the file.
    run_once(c);
    r = of_this_file(read(file));
    CHECK(r.lines[then_line] == 2);
    CHECK(r.lines[never] == 0);
    CHECK(r.branches[std::to_string(second_if) + ",0,1"] == 2);
    for (const auto& e : fs::directory_iterator(dir.path()))
      CHECK(e.path().string().find(".tmp") == std::string::npos);  // written by rename
    ::unsetenv("QD_KERNEL_COVERAGE_FILE");
  }
}

TEST_CASE("qd::write_coverage merges the running program's counts now; coverage off writes nothing") {
  qd_test::fresh_dir dir("coverage-now");
  const fs::path file = dir.path() / "now.info";
  qd::init({.arch = qd::arch::cpu, .offline_cache_file_path = dir.str(), .kernel_coverage = true});
  auto k = clamp_kernel();
  qd::ndarray<float, 1> x(4);
  x.from_host(std::vector<float>{5000.0f, 1.0f, 1.0f, 1.0f});
  k(x);
  qd::write_coverage(file.string());
  records r = of_this_file(read(file));
  CHECK(r.lines[never] == 1);
  CHECK(r.lines[then_line] == 0);
  k(x);
  k(x);
  qd::write_coverage(file.string());  // counting restarted after the first write: one more
  CHECK(of_this_file(read(file)).lines[else_line] == 2);
  ::setenv("QD_KERNEL_COVERAGE_FILE", (dir.path() / "at_reset.info").c_str(), 1);
  qd::reset();
  CHECK(of_this_file(read(dir.path() / "at_reset.info")).lines[else_line] == 0);  // listed; none ran since
  ::setenv("QD_KERNEL_COVERAGE_FILE", (dir.path() / "off.info").c_str(), 1);
  qd::init({.arch = qd::arch::cpu, .offline_cache_file_path = dir.str()});
  auto off = clamp_kernel();
  qd::ndarray<float, 1> y(4);
  off(y);
  qd::reset();
  CHECK_FALSE(fs::exists(dir.path() / "off.info"));
  ::unsetenv("QD_KERNEL_COVERAGE_FILE");
}

TEST_CASE("a tracefile that cannot be written is an error that keeps the counts for the next write") {
  qd_test::fresh_dir dir("coverage-bad");
  std::ofstream(dir.path() / "blocker") << "a file, not a directory";
  ::setenv("QD_KERNEL_COVERAGE_FILE", (dir.path() / "blocker" / "at_reset.info").c_str(), 1);
  qd::init({.arch = qd::arch::cpu, .offline_cache_file_path = (dir.path() / "cache").string(), .kernel_coverage = true});
  auto k = clamp_kernel();
  qd::ndarray<float, 1> x(4);
  k(x);
  CHECK_THROWS_WITH_AS(qd::write_coverage((dir.path() / "blocker" / "x.info").string()),
                       doctest::Contains("qd::write_coverage: cannot write the coverage tracefile"), qd::error);
  qd_test::log_capture logs;
  qd::reset();  // the default file cannot be written either: one warning, no crash
  CHECK(logs.count(qd::log_level::warn, "kernel_coverage: cannot write the coverage tracefile") == 1);
  const fs::path good = dir.path() / "good.info";
  qd::write_coverage(good.string());
  CHECK(of_this_file(read(good)).lines[else_line] == 1);  // nothing was lost
  ::unsetenv("QD_KERNEL_COVERAGE_FILE");
}

TEST_CASE("coverage off leaves the generated code and its cache key as they were") {
  qd_test::fresh_dir dir("coverage-off");
  ::setenv("QD_KERNEL_COVERAGE_FILE", (dir.path() / "c.info").c_str(), 1);
  auto observe = [&](bool coverage) {
    qd::init({.arch = qd::arch::cpu, .offline_cache_file_path = dir.str(), .kernel_coverage = coverage});
    auto k = clamp_kernel();
    qd::ndarray<float, 1> x(4);
    k(x);
    auto o = k.per_offload_cache_observations();
    qd::reset();
    return o;
  };
  CHECK(observe(false).constructs_compiled == 1);
  CHECK(observe(true).constructs_compiled == 1);   // instrumented: a different program
  auto again = observe(false);                       // the first compile's entry, unchanged
  CHECK(again.constructs_compiled == 0);
  CHECK(again.constructs_loaded == 1);
  ::unsetenv("QD_KERNEL_COVERAGE_FILE");
}

TEST_CASE("genhtml renders the kernel coverage next to the source") {
  if (std::system("command -v genhtml > /dev/null 2>&1") != 0) {
    MESSAGE("skipped: genhtml is not installed (Debian lcov; scripts/install-deps installs it)");
    return;
  }
  qd_test::fresh_dir dir("coverage-html");
  const fs::path file = dir.path() / "k.info";
  run_once({.arch = qd::arch::reference, .kernel_coverage = true});  // default file: the working directory
  qd::init({.arch = qd::arch::reference, .kernel_coverage = true});
  {
    auto k = clamp_kernel();
    qd::ndarray<float, 1> x(4);
    k(x);
  }
  qd::write_coverage(file.string());
  qd::reset();
  // __FILE__ is relative to the directory the compiler ran in.
  const std::string command = "cd '" + std::string(QD_COMPILE_DIR) + "' && genhtml --quiet --branch-coverage -o '" +
                              (dir.path() / "html").string() + "' '" + file.string() + "' > '" +
                              (dir.path() / "log").string() + "' 2>&1";
  const int status = std::system(command.c_str());
  INFO(read(dir.path() / "log"));
  REQUIRE(status == 0);
  bool page = false;
  for (const auto& e : fs::recursive_directory_iterator(dir.path() / "html"))
    page |= e.path().filename().string().starts_with("coverage_test.cpp") && read(e.path()).find("qd::if_") != std::string::npos;
  CHECK(page);
  fs::remove("qd_kernel_coverage.info");
}

// The GPU backends, where a GPU (or the emulated one, tests/emulated_gpus.cmake) is present:
// the probes live in device memory, and print_ir dumps the .cu/.hip programs.
void coverage_on_gpu(qd::arch arch, const char* name) {
  qd_test::fresh_dir dir(std::string("coverage-") + name);
  try {
    qd::init({.arch = arch, .offline_cache_file_path = (dir.path() / "cache").string(),
              .debug_dump_path = (dir.path() / "dump").string(), .print_ir = true, .kernel_coverage = true,
              .enable_fallback = false});
  } catch (const qd::error& e) {
    MESSAGE("skipped on " << name << ": " << e.what());
    return;
  }
  auto k = clamp_kernel();
  qd::ndarray<float, 1> x(4);
  x.from_host(std::vector<float>{-1.0f, 2.0f, -3.0f, 4.0f});
  k(x);
  CHECK(x.to_host() == std::vector<float>{0.0f, 4.0f, 0.0f, 8.0f});
  CHECK(k.per_offload_cache_observations().fallback == qd::fallback_reason::diagnostic);
  const fs::path file = dir.path() / "gpu.info";
  qd::write_coverage(file.string());
  records r = of_this_file(read(file));
  CHECK(r.lines[then_line] == 1);
  CHECK(r.lines[never] == 0);
  CHECK(r.branches[std::to_string(second_if) + ",0,1"] == 1);
  const std::string ext = arch == qd::arch::cuda ? "cu" : "hip";
  CHECK(read(dir.path() / "dump" / "clamp_negative" / "whole" / ("program." + ext)).find("qd_task0") != std::string::npos);
  qd::reset();
}

TEST_CASE("coverage and dumps on a GPU <on_cuda>") { coverage_on_gpu(qd::arch::cuda, "cuda"); }
TEST_CASE("coverage and dumps on a GPU <on_amdgpu>") { coverage_on_gpu(qd::arch::amdgpu, "amdgpu"); }
