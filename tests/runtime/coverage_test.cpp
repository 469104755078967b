// Kernel line coverage (issue 14): which source lines of a kernel ran and which
// way each qd::if_ went, as lcov DA and BRDA records, merged (added) across programs into
// the tracefile; genhtml renders it.
// Cases below check source lines by number (__LINE__ + n), so their layout stays as written:
// clang-format off
#include <doctest/doctest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

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
    const std::string why = std::string("skipped on ") + name + ": " + e.what();
    MESSAGE(why);
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

TEST_CASE("a child of fork() does not write its parent's counts a second time") {
  qd_test::fresh_dir dir("coverage-fork");
  const fs::path file = dir.path() / "fork.info";
  ::setenv("QD_KERNEL_COVERAGE_FILE", file.c_str(), 1);
  qd::init({.arch = qd::arch::cpu, .offline_cache_file_path = (dir.path() / "cache").string(), .kernel_coverage = true});
  auto k = clamp_kernel();
  qd::ndarray<float, 1> x(4);
  k(x);
  const pid_t child = ::fork();
  if (child == 0) std::exit(0);  // runs the exit handlers, as any child that exits does
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(WIFEXITED(status));
  qd::reset();
  CHECK(of_this_file(read(file)).lines[loop] == 1);
  ::unsetenv("QD_KERNEL_COVERAGE_FILE");
}

namespace {

// Runs a kernel with coverage in a child process whose tracefile is `path`, and returns how
// the child ended (-1: still running after 20 s, so killed). The child exits 0 when
// qd::write_coverage(path) is refused as not a regular file; exiting runs the exit handler,
// which tries the file once more.
int coverage_child(const std::string& path) {
  std::fflush(nullptr);  // else the child would print what this process has buffered a second time
  const pid_t child = ::fork();
  if (child == 0) {
    ::setenv("QD_KERNEL_COVERAGE_FILE", path.c_str(), 1);
    qd::set_log_sink([](qd::log_level, std::string_view) {});
    qd::init({.arch = qd::arch::cpu, .offline_cache = false, .kernel_coverage = true});
    auto k = clamp_kernel();
    qd::ndarray<float, 1> x(4);
    k(x);
    int code = 1;
    try {
      qd::write_coverage(path);
    } catch (const qd::user_error& e) {
      code = std::string(e.what()).find("not a regular file") != std::string::npos ? 0 : 2;
    }
    qd::reset();
    std::exit(code);
  }
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
  pollfd p{pidfd, POLLIN, 0};
  const bool ended = pidfd >= 0 ? ::poll(&p, 1, 20000) > 0 : true;
  if (pidfd >= 0) ::close(pidfd);
  if (!ended) ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  return !ended ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST_CASE("a tracefile that is a FIFO, a device or a link is refused, left as it was, and never blocks the exit") {
  qd_test::fresh_dir dir("coverage-special");
  const fs::path fifo = dir.path() / "fifo.info", victim = dir.path() / "victim", link = dir.path() / "link.info";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::ofstream(victim) << "precious\n";
  fs::create_symlink(victim, link);
  CHECK(coverage_child(fifo.string()) == 0);  // a reader of a FIFO would wait for a writer forever
  CHECK(fs::is_fifo(fs::symlink_status(fifo)));
  CHECK(coverage_child(link.string()) == 0);
  CHECK(fs::is_symlink(link));
  CHECK(read(victim) == "precious\n");
  // /dev/null and /dev/zero (which a reader reads until memory runs out): private copies
  // when this process is root, so that no mistake can replace the system's.
  for (auto [name, minor] : {std::pair{"null", 3u}, std::pair{"zero", 5u}}) {
    std::string dev = std::string("/dev/") + name;
    if (::geteuid() == 0) {
      dev = (dir.path() / name).string();
      if (::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, minor)) != 0) {
        MESSAGE("skipped /dev/" << name << ": root without CAP_MKNOD");
        continue;
      }
    }
    INFO(dev);
    CHECK(coverage_child(dev) == 0);
    CHECK(fs::is_character_file(fs::symlink_status(dev)));
  }
}

TEST_CASE("coverage instruments every statement form and leaves results unchanged") {
  auto forms = [] {
    return qd::kernel("forms", {"x", "m", "n"}, [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 2> m, qd::i32 n) {
      x[0] = 1.0f;
      qd::var<float> total = 0.0f;
      qd::if_(n > 2, [&] { x[1] = 2.0f; });
      qd::var<std::int32_t> k = 0;
      qd::while_([&] { return k < n; }, [&] {
        x[2] += 1.0f;
        k += 1;
      });
      qd::range_for(qd::ndrange(m.shape(0), m.shape(1)), [&](qd::i32 i, qd::i32 j) {
        m(i, j) = qd::cast<float>(i * 10 + j);
      });
      qd::range_for(x.shape(0), [&](qd::i32 i) {
        qd::var<float> acc = 0.0f;
        qd::range_for(0, i, [&](qd::i32 j) { acc += qd::cast<float>(j); });
        qd::if_(i > 4, [&] { total += acc; });
        qd::atomic_max(x[3], acc);
      });
      x[4] = total;
    });
  };
  std::vector<std::vector<float>> results[2];
  for (qd::arch arch : {qd::arch::cpu, qd::arch::reference}) {
    for (int coverage = 0; coverage < 2; ++coverage) {
      qd_test::fresh_dir dir("coverage-forms");
      ::setenv("QD_KERNEL_COVERAGE_FILE", (dir.path() / "f.info").c_str(), 1);
      qd::init({.arch = arch, .offline_cache_file_path = (dir.path() / "cache").string(),
                .kernel_coverage = coverage == 1});
      auto k = forms();
      qd::ndarray<float, 1> x(8);
      qd::ndarray<float, 2> m({3, 4});
      k(x, m, 3);
      results[coverage] = {x.to_host(), m.to_host()};
      qd::reset();
      if (coverage) {
        const std::string info = read(dir.path() / "f.info");
        CHECK(info.find("BRDA:") != std::string::npos);
        CHECK(info.find("LH:") != std::string::npos);
      }
      ::unsetenv("QD_KERNEL_COVERAGE_FILE");
    }
    CHECK(results[0] == results[1]);
    CHECK(results[0][0][2] == 3.0f);
    CHECK(results[0][1][5] == 11.0f);
  }
}

// A line whose only statement updates a qd::var gets its own DA record: the assignment
// records the user's line (before, it took the previous statement's).
constexpr int var_kernel_line = __LINE__ + 2;
auto var_update_kernel() {
  return qd::kernel("var_updates", {"x"}, [](qd::types::ndarray<float, 1> x) {
    qd::var<float> a = 1.0f;
    qd::range_for(x.shape(0), qd::loop_config{.serialize = true}, [&](qd::i32 i) {
      x[i] = a;
      a *= 2.0f;
    });
    qd::var<std::int32_t> k = 0;
    qd::while_([&] { return k < 3; }, [&] {
      k += 1;
    });
    a = 5.0f;
    x[0] = a + qd::cast<float>(k);
  });
}

TEST_CASE("a line that only updates a qd::var has a DA record with its hits") {
  const int times_two = var_kernel_line + 4, plus_one = var_kernel_line + 8, set_five = var_kernel_line + 10;
  for (qd::arch arch : {qd::arch::cpu, qd::arch::reference}) {
    qd_test::fresh_dir dir("coverage-var");
    const fs::path file = dir.path() / "v.info";
    ::setenv("QD_KERNEL_COVERAGE_FILE", file.c_str(), 1);
    qd::init({.arch = arch, .offline_cache_file_path = (dir.path() / "cache").string(), .kernel_coverage = true});
    auto k = var_update_kernel();
    qd::ndarray<float, 1> x(4);
    k(x);
    CHECK(x.to_host() == std::vector<float>{8.0f, 2.0f, 4.0f, 8.0f});
    qd::reset();
    const records r = of_this_file(read(file));
    REQUIRE(r.lines.count(times_two) == 1);
    CHECK(r.lines.at(times_two) >= 1);
    REQUIRE(r.lines.count(plus_one) == 1);
    CHECK(r.lines.at(plus_one) >= 1);
    REQUIRE(r.lines.count(set_five) == 1);
    CHECK(r.lines.at(set_five) == 1);
    ::unsetenv("QD_KERNEL_COVERAGE_FILE");
  }
}
