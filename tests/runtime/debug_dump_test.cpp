// print_ir's debug dumps (SPEC §11.8, issue 14): the traced IR, each task's lowered IR and
// the exact source each compiler received, per kernel and variant, on the CPU, the
// reference backend and the GPU compilers in compile-only mode.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <quadrants/quadrants.hpp>

#include "quadrants/backend/cuda/nvrtc.hpp"
#include "quadrants/backend/shared_library.hpp"
#include "quadrants/runtime/diagnostics/dump_path.hpp"
#include "support/fresh_dir.hpp"
#include "support/log_capture.hpp"

namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Two constructs; the second re-reads nothing the first writes, so it splits.
auto two_loops() {
  return qd::kernel("two_loops", {"x", "y"}, [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = qd::cast<float>(i) * 2.0f; });
    qd::range_for(y.shape(0), [&](qd::i32 i) { y[i] = 3.0f; });
  });
}

std::vector<std::string> files_under(const fs::path& root) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) out.push_back(fs::relative(e.path(), root).string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("print_ir writes the traced IR, each task's IR and the exact program the C++ compiler received") {
  qd_test::fresh_dir dir("dump-cpu");
  // A compiler wrapper that keeps a copy of each source it is given.
  const fs::path captured = dir.path() / "captured";
  fs::create_directories(captured);
  const fs::path wrapper = dir.path() / "cxx.sh";
  std::ofstream(wrapper) << "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in *.cpp) cp \"$a\" '" << captured.string()
                         << "'/$$.cpp;; esac; done\nexec c++ \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  ::setenv("QD_CXX", wrapper.c_str(), 1);
  const fs::path dump = dir.path() / "dump";
  qd_test::log_capture logs;
  qd::init({.arch = qd::arch::cpu,
            .offline_cache_file_path = (dir.path() / "cache").string(),
            .log_level = qd::log_level::info,
            .debug_dump_path = dump.string(),
            .print_ir = true});
  auto k = two_loops();
  qd::ndarray<float, 1> x(5), y(3);
  k(x, y);
  CHECK(x.to_host()[4] == 8.0f);
  CHECK(y.to_host()[2] == 3.0f);
  ::unsetenv("QD_CXX");

  const fs::path kd = dump / "two_loops";
  CHECK(read(kd / "traced.ir.txt") == k.ir());
  CHECK(read(kd / "traced.ir.txt").find("range_for") != std::string::npos);
  for (const char* t : {"task_0.ir.txt", "task_1.ir.txt"})
    CHECK(read(kd / "whole" / t).find("range_for") != std::string::npos);
  // The program file is byte for byte what the compiler got.
  std::vector<std::string> sources;
  for (const auto& e : fs::directory_iterator(captured)) sources.push_back(read(e.path()));
  REQUIRE(sources.size() == 1);
  const std::string program = read(kd / "whole" / "program.cpp");
  CHECK(program == sources[0]);
  // Each task's source stands alone: the prelude, then that task's body; the program is
  // the prelude, then every body.
  const std::string task0 = read(kd / "whole" / "task_0.cpp"), task1 = read(kd / "whole" / "task_1.cpp");
  CHECK(task0.find("qd_task0") != std::string::npos);
  CHECK(task1.find("qd_task1") != std::string::npos);
  REQUIRE(program.starts_with(task0));
  const std::string body1 = program.substr(task0.size());
  CHECK(task1.ends_with(body1));
  CHECK(program.starts_with(task1.substr(0, task1.size() - body1.size())));
  // The CPU keeps kernels whole by default: no split variant, no diagnostic fallback.
  CHECK_FALSE(fs::exists(kd / "split"));
  CHECK(k.per_offload_cache_observations().fallback == qd::fallback_reason::policy_backend);
  // The directory is logged once, however many kernels are dumped.
  auto other = qd::kernel(
      "other", [](qd::types::ndarray<float, 1> x) { qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 1.0f; }); });
  other(x);
  CHECK(logs.count(qd::log_level::info, "print_ir: writing each kernel's IR and generated source under") == 1);
  CHECK(fs::exists(dump / "other" / "whole" / "task_0.cpp"));
  qd::reset();
}

TEST_CASE("with the split forced, print_ir keeps the kernel whole and dumps the split it would have used") {
  qd_test::fresh_dir dir("dump-split");
  const fs::path dump = dir.path() / "dump";
  qd::init({.arch = qd::arch::cpu,
            .offline_cache_file_path = (dir.path() / "cache").string(),
            .per_offload = qd::per_offload_mode::on,
            .debug_dump_path = dump.string(),
            .print_ir = true});
  auto k = two_loops();
  qd::ndarray<float, 1> x(5), y(3);
  k(x, y);
  CHECK(k.per_offload_cache_observations().fallback == qd::fallback_reason::diagnostic);
  const fs::path kd = dump / "two_loops";
  CHECK(fs::exists(kd / "whole" / "program.cpp"));
  CHECK(fs::exists(kd / "split" / "about.txt"));
  CHECK_FALSE(fs::exists(kd / "split" / "program_0.cpp"));  // not compiled
  const std::string t0 = read(kd / "split" / "task_0.cpp"), t1 = read(kd / "split" / "task_1.cpp");
  CHECK(t0.find("extern") != std::string::npos);
  CHECK(t0 != t1);
  CHECK(read(kd / "split" / "task_1.ir.txt").find("range_for") != std::string::npos);
  qd::reset();
}

TEST_CASE("on the reference backend print_ir writes the IR files and no source (nothing is compiled)") {
  qd_test::fresh_dir dir("dump-ref");
  const fs::path dump = dir.path() / "dump";
  qd::init({.arch = qd::arch::reference, .debug_dump_path = dump.string(), .print_ir = true});
  auto k = two_loops();
  qd::ndarray<float, 1> x(5), y(3);
  k(x, y);
  CHECK(x.to_host()[3] == 6.0f);
  CHECK(files_under(dump / "two_loops") ==
        std::vector<std::string>{"traced.ir.txt", "whole/task_0.ir.txt", "whole/task_1.ir.txt"});
  qd::reset();
}

TEST_CASE("kernel names become safe directory names inside debug_dump_path") {
  qd_test::fresh_dir dir("dump-names");
  const fs::path dump = dir.path() / "dump";
  qd::init({.arch = qd::arch::reference, .debug_dump_path = dump.string(), .print_ir = true});
  for (std::string name : {"../escape", "a/b", "", "with space"}) {
    auto k = qd::kernel(
        name, [](qd::types::ndarray<float, 1> x) { qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 1.0f; }); });
    qd::ndarray<float, 1> x(2);
    k(x);
    CHECK(fs::exists(dump / qd::detail::dump_file_stem(name) / "traced.ir.txt"));
  }
  for (const auto& e : fs::directory_iterator(dump)) CHECK(e.is_directory());
  CHECK_FALSE(fs::exists(dir.path() / "escape"));
  for (const auto& e : fs::recursive_directory_iterator(dir.path()))
    CHECK(e.path().string().find(".tmp") == std::string::npos);  // every write was renamed into place
  qd::reset();
}

TEST_CASE("print_ir refuses a dump root others may write, and follows no link planted inside one") {
  qd_test::fresh_dir dir("dump-attacks");
  auto run = [&](const fs::path& dump) {
    qd::init({.arch = qd::arch::reference, .debug_dump_path = dump.string(), .print_ir = true});
    auto k = two_loops();
    qd::ndarray<float, 1> x(5), y(3);
    k(x, y);
    CHECK(x.to_host()[3] == 6.0f);  // the kernel runs all the same
    qd::reset();
  };
  {
    // Another user could swap the files of a privileged run in a directory they may write.
    const fs::path open_root = dir.path() / "open";
    fs::create_directory(open_root);
    ::chmod(open_root.c_str(), 0777);
    qd_test::log_capture logs;
    run(open_root);
    CHECK(fs::is_empty(open_root));
    CHECK(logs.count(qd::log_level::warn, "writable by group or others without the sticky bit") == 1);
  }
  {
    // A kernel's directory replaced by a link to somewhere the attacker wants files written.
    const fs::path root = dir.path() / "root", elsewhere = dir.path() / "elsewhere";
    fs::create_directories(root);
    fs::create_directories(elsewhere);
    fs::create_directory_symlink(elsewhere, root / "two_loops");
    qd_test::log_capture logs;
    run(root);
    CHECK(fs::is_empty(elsewhere));
    CHECK(logs.count(qd::log_level::warn, "symbolic link") == 1);
  }
  {
    // A dump file's name taken by a FIFO: refused at once, never opened.
    const fs::path root = dir.path() / "fifo";
    fs::create_directories(root / "two_loops");
    REQUIRE(::mkfifo((root / "two_loops" / "traced.ir.txt").c_str(), 0600) == 0);
    qd_test::log_capture logs;
    run(root);
    CHECK(fs::is_fifo(fs::symlink_status(root / "two_loops" / "traced.ir.txt")));
    CHECK(logs.count(qd::log_level::warn, "FIFO") == 1);
  }
}

TEST_CASE("compile-only for CUDA dumps the .cu programs NVRTC compiled") {
  try {
    qd::backend::locate_library(qd::backend::cuda::nvrtc_library());
  } catch (const qd::error& e) {
    MESSAGE("skipped: NVRTC is not installed: " << e.what());
    return;
  }
  qd_test::fresh_dir dir("dump-cuda");
  const fs::path dump = dir.path() / "dump";
  qd::init({.arch = qd::arch::cuda,
            .offline_cache_file_path = (dir.path() / "cache").string(),
            .debug_dump_path = dump.string(),
            .print_ir = true,
            .compile_only = true,
            .cuda_arch = 90});
  auto k = two_loops();
  k.compile();
  CHECK(k.per_offload_cache_observations().fallback == qd::fallback_reason::diagnostic);
  const fs::path kd = dump / "two_loops";
  CHECK(read(kd / "whole" / "program.cu").find("qd_task1") != std::string::npos);
  CHECK(fs::exists(kd / "whole" / "task_0.cu"));
  CHECK(fs::exists(kd / "split" / "task_1.cu"));
  CHECK(fs::exists(kd / "traced.ir.txt"));
  qd::reset();
}
