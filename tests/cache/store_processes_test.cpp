// Tests of cache/store.hpp across processes: a cold root shared by eight processes,
// writers killed with SIGKILL mid-save, and compile locks whose holder dies.
#include <doctest/doctest.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cache/cache_test_support.hpp"
#include "quadrants/cache/store.hpp"

extern char** environ;

using namespace qd::cache;
using qd_test::temp_dir;

namespace {

// Starts the worker with `args`; stdin and stdout are replaced when given.
pid_t spawn_worker(std::vector<std::string> args, int stdin_fd = -1, int stdout_fd = -1) {
  std::string program = QD_STORE_WORKER;  // (inserting the literal at args' front trips GCC 12's -Warray-bounds)
  std::vector<char*> argv{program.data()};
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdin_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0);
  if (stdout_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE_MESSAGE(rc == 0, "cannot start " << QD_STORE_WORKER << ": " << std::strerror(rc));
  return pid;
}

int wait_status(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

std::vector<std::string> temporaries(const std::string& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto& item : std::filesystem::recursive_directory_iterator(root, ec))
    if (item.path().filename().string().ends_with(".tmp")) out.push_back(item.path().string());
  return out;
}

bool has_temporary(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return false;
  bool found = false;
  while (dirent* e = ::readdir(d))
    if (std::string_view(e->d_name).ends_with(".tmp")) found = true;
  ::closedir(d);
  return found;
}

}  // namespace

TEST_CASE("eight processes started at once on one cold root all read exactly what was saved") {
  temp_dir dir;
  std::string root = dir / "cold/qdcache";  // not even created yet
  int gate[2], ready[2];
  REQUIRE(::pipe2(gate, O_CLOEXEC) == 0);  // workers must not hold the write end
  REQUIRE(::pipe2(ready, O_CLOEXEC) == 0);
  std::vector<pid_t> workers;
  for (int i = 0; i < 8; ++i) workers.push_back(spawn_worker({"mix", root, std::to_string(i)}, gate[0], ready[1]));
  ::close(gate[0]);
  ::close(ready[1]);
  int arrived = 0;  // each worker writes a byte when it reaches the gate
  for (char c; arrived < 8 && ::read(ready[0], &c, 1) == 1;) ++arrived;
  ::close(ready[0]);
  CHECK(arrived == 8);
  ::close(gate[1]);  // all at the gate: open it
  for (int i = 0; i < 8; ++i) {
    int status = wait_status(workers[static_cast<std::size_t>(i)]);
    CAPTURE(i);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);  // 3: wrong bytes, 4: save failed, 5: miss after save
  }

  std::vector<entry_info> entries = list_entries(root);
  CHECK(entries.size() == 16 + 4 * 16);  // shared keys once, plus each odd worker's own
  for (const entry_info& e : entries) {
    std::string why;
    CHECK_MESSAGE(verify_entry(e.path, &why), e.path << ": " << why);
  }
  CHECK(temporaries(root).empty());
  store s({.root = root});
  for (int index : {0, 1, 3, 5, 7})
    for (std::uint64_t i = 0; i < 16; ++i) {
      std::uint64_t id = index == 0 ? i : 1000 * static_cast<std::uint64_t>(index) + i;
      auto got = s.load(entry_kind::kernel, qd_test::worker_key(id));
      REQUIRE(got);
      CHECK(*got == qd_test::worker_payload(id));
    }
}

TEST_CASE("a writer killed with SIGKILL mid-save leaves no visible entry, and the next run is correct") {
  temp_dir dir;
  const key big = key_builder().add("big").finish();
  const std::string path = entry_path(dir.path, entry_kind::module, big);
  const std::string kind_dir = path.substr(0, path.rfind('/'));
  bool caught_mid_save = false;
  for (int attempt = 0; attempt < 20 && !caught_mid_save; ++attempt) {
    pid_t pid = spawn_worker({"save-big", dir.path, std::to_string(48u << 20)});
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!has_temporary(kind_dir) && std::chrono::steady_clock::now() < deadline) {
      int status;
      if (::waitpid(pid, &status, WNOHANG) == pid) {  // finished before we saw it
        pid = -1;
        break;
      }
    }
    if (pid < 0) {
      std::filesystem::remove(path);
      continue;
    }
    ::kill(pid, SIGKILL);
    int status = wait_status(pid);
    CHECK(WIFSIGNALED(status));
    if (std::filesystem::exists(path)) {  // the rename won the race: the entry must be whole
      std::string why;
      CHECK_MESSAGE(verify_entry(path, &why), why);
      std::filesystem::remove(path);
      for (auto& t : temporaries(dir.path)) std::filesystem::remove(t);
      continue;
    }
    caught_mid_save = !temporaries(dir.path).empty();
  }
  REQUIRE_MESSAGE(caught_mid_save, "never managed to kill the writer between creating and renaming its file");

  // The partial write is invisible: no entry, and the next run misses and recompiles.
  CHECK(list_entries(dir.path).empty());
  store s({.root = dir.path});
  CHECK_FALSE(s.load(entry_kind::module, big));
  CHECK(s.stats().rejected == 0);
  std::vector<std::byte> payload = qd_test::code_like_payload(10000, 3);
  CHECK(s.save(entry_kind::module, big, payload));
  CHECK(s.load(entry_kind::module, big) == payload);

  // The crashed writer's temporary file goes once it is stale.
  std::vector<std::string> left = temporaries(dir.path);
  REQUIRE(left.size() == 1);
  s.enforce_size_limit();
  CHECK(std::filesystem::exists(left[0]));  // too recent: it could be a live writer's
  std::filesystem::last_write_time(left[0], std::filesystem::file_time_type::clock::now() - std::chrono::hours(1));
  s.enforce_size_limit();
  CHECK(temporaries(dir.path).empty());
}

TEST_CASE("writers killed at random moments leave only whole entries") {
  temp_dir dir;
  std::mt19937 rng(20240601);
  for (int round = 0; round < 6; ++round) {
    pid_t pid = spawn_worker({"save-loop", dir.path});
    // The first writer saves at least one whole entry before it is killed (a slow start,
    // under a sanitizer or on a loaded machine, must not leave the directory empty); the
    // others die at random moments.
    if (round == 0) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (list_entries(dir.path).empty() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(20, 120)(rng)));
    ::kill(pid, SIGKILL);
    int status = wait_status(pid);
    CHECK(WIFSIGNALED(status));  // still saving when killed
  }
  std::vector<entry_info> entries = list_entries(dir.path);
  CHECK(!entries.empty());
  for (const entry_info& e : entries) {
    std::string why;
    CHECK_MESSAGE(verify_entry(e.path, &why), e.path << ": " << why);
  }
  store s({.root = dir.path});
  std::size_t hits = 0;
  for (std::uint64_t id = 0; id < 400; ++id)
    if (auto got = s.load(entry_kind::module, qd_test::worker_key(id))) {
      ++hits;
      CHECK(*got == qd_test::loop_payload(id));
    }
  CHECK(hits == entries.size());
  CHECK(s.stats().rejected == 0);
  MESSAGE(entries.size() << " whole entries, " << temporaries(dir.path).size()
                         << " temporary files left by killed writers (removed once stale)");
}

TEST_CASE("a compile lock is released when its holder dies") {
  temp_dir dir;
  key k = key_builder().add("locked").finish();
  int out[2];
  REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
  pid_t pid = spawn_worker({"hold-lock", dir.path, k.hex()}, -1, out[1]);
  ::close(out[1]);
  char line[16] = {};
  std::size_t got = 0;
  while (got < 7) {
    ssize_t n = ::read(out[0], line + got, 7 - got);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(out[0]);
  REQUIRE(std::string(line, got) == "locked\n");

  store s({.root = dir.path});
  CHECK_FALSE(s.lock_for_compile(k, std::chrono::milliseconds(100)).owns_lock());
  ::kill(pid, SIGKILL);
  wait_status(pid);
  auto start = std::chrono::steady_clock::now();
  auto lock = s.lock_for_compile(k, std::chrono::seconds(5));
  CHECK(lock.owns_lock());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
}
