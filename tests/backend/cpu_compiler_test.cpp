// The CPU compiler wrapper and module loader: failures carry the compiler's log
// and the generated line; modules load from bytes; missing entries are errors.
#include <doctest/doctest.h>

#include <elf.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "quadrants/backend/cpu/compiler.hpp"
#include "quadrants/backend/cpu/scratch_dir.hpp"
#include "quadrants/backend/cpu/module.hpp"
#include "quadrants/backend/cpu/prelude.hpp"
#include "quadrants/base/error.hpp"

using namespace qd::backend::cpu;

TEST_CASE("a shared object compiled from source loads from its bytes and runs") {
  auto bytes = compile_shared_object(
      "extern \"C\" __attribute__((visibility(\"default\"))) int qd_answer(int x) { return x * 6 + 4; }\n", {}, "test");
  REQUIRE(bytes.size() > 100);
  module m(bytes, "test module");
  auto answer = reinterpret_cast<int (*)(int)>(m.symbol("qd_answer"));
  CHECK(answer(7) == 46);
  CHECK_THROWS_AS(m.symbol("qd_missing"), qd::driver_error);
  // Two modules with the same entry name stay apart (memfd paths are not reused while loaded).
  auto other = compile_shared_object(
      "extern \"C\" __attribute__((visibility(\"default\"))) int qd_answer(int x) { return -x; }\n", {}, "test");
  module m2(other, "second module");
  CHECK(reinterpret_cast<int (*)(int)>(m2.symbol("qd_answer"))(7) == -7);
  CHECK(answer(1) == 10);
}

// What dlopen maps per module (issue 30's warm start loads hundreds): the shared object has
// two loadable segments (code with read-only data, and data) and no read-only-after-
// relocation range to protect, read from its ELF program headers.
TEST_CASE("a compiled module is mapped as two segments, with no RELRO range") {
  auto bytes = compile_shared_object(
      "extern \"C\" __attribute__((visibility(\"default\"))) int qd_twice(int x) { return 2 * x; }\n"
      "int qd_table[4] = {1, 2, 3, 4};\n"
      "extern \"C\" __attribute__((visibility(\"default\"))) int* qd_data() { return qd_table; }\n",
      {}, "test");
  REQUIRE(bytes.size() > sizeof(Elf64_Ehdr));
  Elf64_Ehdr header;
  std::memcpy(&header, bytes.data(), sizeof header);
  REQUIRE(std::memcmp(header.e_ident, ELFMAG, SELFMAG) == 0);
  REQUIRE(header.e_ident[EI_CLASS] == ELFCLASS64);
  int loads = 0, relro = 0;
  for (int i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr ph;
    REQUIRE(header.e_phoff + static_cast<std::size_t>(i + 1) * sizeof ph <= bytes.size());
    std::memcpy(&ph, bytes.data() + header.e_phoff + static_cast<std::size_t>(i) * header.e_phentsize, sizeof ph);
    loads += ph.p_type == PT_LOAD;
    relro += ph.p_type == PT_GNU_RELRO;
  }
  CHECK(loads == 2);
  CHECK(relro == 0);
  module m(bytes, "test module");
  CHECK(reinterpret_cast<int (*)(int)>(m.symbol("qd_twice"))(21) == 42);
  CHECK(reinterpret_cast<int* (*)()>(m.symbol("qd_data"))()[3] == 4);
}

TEST_CASE("a compile failure is a qd::compile_error with the log, the source and the offending line") {
  const char* source = "extern \"C\" int ok() { return 1; }\nextern \"C\" int broken() { return undeclared_name; }\n";
  try {
    compile_shared_object(source, {}, "kernel 'broken'");
    FAIL("the compile should have failed");
  } catch (const qd::compile_error& e) {
    std::string what = e.what();
    CHECK(what.find("kernel 'broken'") != std::string::npos);
    CHECK(what.find("generated line 2: extern \"C\" int broken()") != std::string::npos);
    CHECK(e.log().find("undeclared_name") != std::string::npos);
    CHECK(e.source() == source);
    CHECK(e.kernel() == "kernel 'broken'");
  }
}

TEST_CASE("generated code checks its structs' layout against the runtime's, member by member") {
  // The prelude alone compiles: qd_array and qd_ctx lie as array_abi and ctx_abi.
  CHECK(compile_shared_object(translation_unit_prelude(), {}, "prelude").size() > 0);
  // A member the runtime places elsewhere fails the compile, naming the member.
  const std::string drifted = translation_unit_prelude() +
                              qd::backend::member_at("qd_ctx", "error", offsetof(ctx_abi, error) + 8) +
                              qd::backend::member_at("qd_array", "grad", 0);
  try {
    compile_shared_object(drifted, {}, "prelude");
    FAIL("a drifted layout should not compile");
  } catch (const qd::compile_error& e) {
    CHECK(e.log().find("qd_ctx.error must lie where the runtime puts it") != std::string::npos);
    CHECK(e.log().find("qd_array.grad must lie where the runtime puts it") != std::string::npos);
  }
}

TEST_CASE("the compiler fingerprint names the resolved executable without running it") {
  std::string f = compiler_fingerprint();
  CHECK(f.find("c++") != std::string::npos);
  CHECK(f.find("| /") != std::string::npos);  // resolved to an absolute path with size and time
}

TEST_CASE("code-affecting flags follow the options") {
  for (bool gcc : {true, false}) {
    auto fast = compile_flags({3, true}, gcc);
    CHECK(std::find(fast.begin(), fast.end(), "-O3") != fast.end());
    CHECK(std::find(fast.begin(), fast.end(), "-ffast-math") != fast.end());
    auto plain = compile_flags({2, false}, gcc);
    CHECK(std::find(plain.begin(), plain.end(), "-ffp-contract=off") != plain.end());
  }
  // opt_level 2 for GCC: -O1 with strict aliasing (a store through a float cannot change an
  // extent) and -O2's cheap vectoriser; GCC-only options never reach another compiler.
  auto gcc = compile_flags({2, false}, true);
  for (const char* f : {"-O1", "-fstrict-aliasing", "-ftree-loop-vectorize", "-fvect-cost-model=very-cheap"})
    CHECK_MESSAGE(std::find(gcc.begin(), gcc.end(), f) != gcc.end(), f);
  CHECK(std::find(gcc.begin(), gcc.end(), "-O2") == gcc.end());
  auto other = compile_flags({2, false}, false);
  CHECK(std::find(other.begin(), other.end(), "-O2") != other.end());
  for (const std::string& f : other) CHECK(f.find("vect") == std::string::npos);
  auto one = compile_flags({1, false}, true);
  CHECK(std::find(one.begin(), one.end(), "-O1") != one.end());
  CHECK(std::find(one.begin(), one.end(), "-fstrict-aliasing") == one.end());
}

namespace {

// A private TMPDIR and fake compilers (shell scripts) in it; QD_CXX and TMPDIR are
// restored on exit. Each fake answers --version as a compiler would.
class fake_compiler_dir {
 public:
  fake_compiler_dir() {
    char pattern[] = "/tmp/qd-fake-cxx-XXXXXX";
    REQUIRE(::mkdtemp(pattern) != nullptr);
    root_ = pattern;
    save("TMPDIR");
    save("QD_CXX");
    save("PATH");
    ::setenv("TMPDIR", root_.c_str(), 1);
  }
  ~fake_compiler_dir() {
    for (auto& [name, value] : saved_) {
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
    }
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  // Writes an executable script whose body runs for a compile; QD_CXX then names it.
  std::string use(const std::string& name, const std::string& body) {
    std::string path = root_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\ncase \"$*\" in *--version*) echo 'fake 1.0'; exit 0;; esac\n" << body << "\n";
    ::chmod(path.c_str(), 0700);
    ::setenv("QD_CXX", path.c_str(), 1);
    return path;
  }
  const std::string& root() const { return root_; }

 private:
  void save(const char* name) {
    const char* v = std::getenv(name);
    saved_.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
  }
  std::string root_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

std::string compile_failure(const compile_options& options) {
  try {
    compile_shared_object("extern \"C\" int f() { return 1; }\n", options, "kernel 'k'");
  } catch (const qd::compile_error& e) {
    return e.what();
  }
  return "no qd::compile_error";
}

bool process_gone(pid_t pid) {
  for (int i = 0; i < 500; ++i) {  // an orphan is reaped by init shortly after its group dies
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    auto state = line.find(") ");
    if (state != std::string::npos && line[state + 2] == 'Z') return true;
    ::usleep(10000);
  }
  return false;
}

}  // namespace

TEST_CASE("a compiler that never returns is stopped after the timeout, with its whole process group") {
  fake_compiler_dir fake;
  std::string pid_file = fake.root() + "/child.pid";
  fake.use("hang.sh", "sleep 300 & echo $! > " + pid_file + "\nwait");
  auto start = std::chrono::steady_clock::now();
  std::string what = compile_failure({.timeout_seconds = 1});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(what.find("kernel 'k': the host C++ compiler") != std::string::npos);
  CHECK(what.find("did not finish within compile_timeout = 1 s") != std::string::npos);
  CHECK(what.find("QD_COMPILE_TIMEOUT") != std::string::npos);
  CHECK(what.find("bug in Quadrants") == std::string::npos);
  CHECK(seconds >= 1.0);
  CHECK(seconds < 10.0);
  pid_t child = 0;
  std::ifstream(pid_file) >> child;
  REQUIRE(child > 0);
  CHECK(process_gone(child));  // the compiler's own child died with it
}

TEST_CASE("a hung compiler and its children die with a parent killed by SIGKILL") {
  fake_compiler_dir fake;
  const std::string cxx_pid = fake.root() + "/cxx.pid", child_pid = fake.root() + "/child.pid";
  // Hangs with no limit: compile_timeout = 0, as a user may set it.
  fake.use("hang.sh", "echo $$ > " + cxx_pid + ".tmp; mv " + cxx_pid + ".tmp " + cxx_pid + "\nsleep 300 & echo $! > " +
                          child_pid + ".tmp; mv " + child_pid + ".tmp " + child_pid + "\nwait");
  std::fflush(nullptr);
  const pid_t parent = ::fork();
  REQUIRE(parent >= 0);
  if (parent == 0) {
    compile_failure({.timeout_seconds = 0});
    ::_exit(0);
  }
  // Both pids written: the compiler and its child are running.
  bool started = false;
  for (int i = 0; i < 1000 && !started; ++i) {
    started = std::filesystem::exists(cxx_pid) && std::filesystem::exists(child_pid);
    if (!started) ::usleep(10000);
  }
  REQUIRE(started);
  ::kill(parent, SIGKILL);  // no handler, no destructor, no atexit runs
  int status = 0;
  ::waitpid(parent, &status, 0);
  pid_t cxx = 0, sleeper = 0;
  std::ifstream(cxx_pid) >> cxx;
  std::ifstream(child_pid) >> sleeper;
  REQUIRE(cxx > 0);
  REQUIRE(sleeper > 0);
  const bool cxx_gone = process_gone(cxx), sleeper_gone = process_gone(sleeper);
  CHECK(cxx_gone);
  CHECK(sleeper_gone);
  if (!cxx_gone) ::kill(cxx, SIGKILL);  // leave nothing behind either way
  if (!sleeper_gone) ::kill(sleeper, SIGKILL);
}

TEST_CASE("a compiler killed by a signal, writing nothing, or missing its parts is reported as such") {
  fake_compiler_dir fake;
  SUBCASE("killed by a signal") {
    fake.use("crash.sh", "kill -SEGV $$");
    std::string what = compile_failure({});
    CHECK(what.find("was killed by signal 11") != std::string::npos);
    CHECK(what.find("the compiler crashed") != std::string::npos);
    CHECK(what.find("bug in Quadrants") == std::string::npos);
    fake.use("oom.sh", "kill -KILL $$");
    what = compile_failure({});
    CHECK(what.find("was killed by signal 9") != std::string::npos);
    CHECK(what.find("out-of-memory killer") != std::string::npos);
  }
  SUBCASE("an empty log: the compiler could not write, as on a full TMPDIR") {
    fake.use("silent.sh", "exit 1");
    std::string what = compile_failure({});
    CHECK(what.find("exited with status 1 without a message") != std::string::npos);
    CHECK(what.find("TMPDIR (" + fake.root()) != std::string::npos);
    CHECK(what.find("bytes free") != std::string::npos);
    CHECK(what.find("bug in Quadrants") == std::string::npos);
  }
  SUBCASE("a full disk, in the compiler's words") {
    fake.use("full.sh", "echo 'cc1plus: error writing to /tmp/ccX.s: No space left on device'; exit 1");
    std::string what = compile_failure({});
    CHECK(what.find("could not write its files (cc1plus: error writing to /tmp/ccX.s: No space left on device)") !=
          std::string::npos);
    CHECK(what.find("bug in Quadrants") == std::string::npos);
  }
  SUBCASE("a real compiler that cannot find its assembler") {
    // g++ runs `as` from PATH: with an empty PATH it cannot.
    std::string cxx;
    for (const char* candidate : {"/usr/bin/g++", "/usr/bin/c++"})
      if (::access(candidate, X_OK) == 0 && cxx.empty()) cxx = candidate;
    if (cxx.empty()) {
      MESSAGE("skipped: no /usr/bin/g++ or /usr/bin/c++");
      return;
    }
    ::setenv("QD_CXX", cxx.c_str(), 1);
    ::setenv("PATH", fake.root().c_str(), 1);
    std::string what = compile_failure({});
    CHECK(what.find("could not run one of its own programs") != std::string::npos);
    CHECK(what.find("bug in Quadrants") == std::string::npos);
  }
  SUBCASE("code the compiler rejects is still reported as a code generation bug") {
    fake.use("reject.sh", "echo 'src.cpp:1:1: error: nope'; exit 1");
    std::string what = compile_failure({});
    CHECK(what.find("rejected generated code (exit 1)") != std::string::npos);
    CHECK(what.find("bug in Quadrants' code generation") != std::string::npos);
  }
}

TEST_CASE("each installed compiler gets the flags it takes: GCC its cheaper set, clang -O2") {
  fake_compiler_dir fake;
  const std::string source =
      "extern \"C\" __attribute__((visibility(\"default\"))) int qd_twice(int x) { return 2 * x; }\n";
  int tried = 0;
  for (const char* cxx : {"g++", "clang++"}) {
    if (std::system((std::string("command -v ") + cxx + " >/dev/null 2>&1").c_str()) != 0) {
      MESSAGE(cxx << " is not installed: not tried");
      continue;
    }
    ::setenv("QD_CXX", cxx, 1);
    CHECK(host_compiler().gcc == (std::string(cxx) == "g++"));
    module m(compile_shared_object(source, {}, "test"), "test module");
    CHECK(reinterpret_cast<int (*)(int)>(m.symbol("qd_twice"))(21) == 42);
    ++tried;
  }
  CHECK(tried > 0);
  // A compiler that is not GCC is given -O2 and none of GCC's own options.
  const std::string args = fake.root() + "/args.txt";
  fake.use("other-cxx", "echo \"$*\" > " + args + "; exit 3");
  CHECK(!host_compiler().gcc);
  CHECK(compile_failure({}).find("other-cxx") != std::string::npos);
  std::ifstream in(args);
  std::string line;
  std::getline(in, line);
  CHECK(line.find(" -O2 ") != std::string::npos);
  CHECK(line.find("vect-cost-model") == std::string::npos);
}

TEST_CASE("a blank QD_CXX is an error naming it") {
  fake_compiler_dir fake;
  for (const char* blank : {"", " ", "\t "}) {
    ::setenv("QD_CXX", blank, 1);
    CHECK_THROWS_WITH_AS(compiler_command(), doctest::Contains("QD_CXX='"), qd::user_error);
    CHECK_THROWS_WITH_AS(compiler_command(), doctest::Contains("set but blank"), qd::user_error);
  }
  ::setenv("QD_CXX", "g++ -Wall", 1);
  CHECK(compiler_command() == std::vector<std::string>{"g++", "-Wall"});
  ::unsetenv("QD_CXX");
  CHECK(compiler_command() == std::vector<std::string>{"c++"});
}

TEST_CASE("scratch directories of processes that died mid-compile are removed; live ones are kept") {
  fake_compiler_dir fake;
  // A process that dies holding its scratch directory, as under SIGKILL.
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto* dir = new scratch_dir();  // never destroyed: the process ends without cleaning up
    std::string path = dir->path();
    (void)!::write(pipe_fds[1], path.c_str(), path.size());
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  char buffer[512] = {};
  REQUIRE(::read(pipe_fds[0], buffer, sizeof buffer - 1) > 0);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::string dead = buffer;
  REQUIRE(std::filesystem::is_directory(dead));
  std::ofstream(dead + "/src.cpp") << "left behind";

  scratch_dir live;
  std::string unrelated = fake.root() + "/qd-cxx-not-one-of-ours";  // a name the library does not make
  std::filesystem::create_directory(unrelated);
  auto age = [](const std::string& path) {
    struct timeval old[2] = {{std::time(nullptr) - 3600, 0}, {std::time(nullptr) - 3600, 0}};
    ::utimes(path.c_str(), old);
  };
  for (const auto& p : {dead, live.path(), unrelated}) age(p);
  std::string fresh_dead = fake.root() + "/qd-cxx-AbC123";  // unlocked but just made: may be a live one's
  std::filesystem::create_directory(fresh_dead);

  CHECK(remove_abandoned_scratch_dirs(fake.root()) == 1);
  CHECK_FALSE(std::filesystem::exists(dead));
  CHECK(std::filesystem::is_directory(live.path()));
  CHECK(std::filesystem::is_directory(fresh_dead));
  CHECK(std::filesystem::is_directory(unrelated));
}
