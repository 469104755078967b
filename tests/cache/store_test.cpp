// Tests of cache/store.hpp in one process: hits and misses, corrupt and untrusted files,
// degraded directories, LRU eviction, sweeping, compile locks and threads.
#include "quadrants/cache/store.hpp"

#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include "cache/cache_test_support.hpp"
#include "quadrants/base/error.hpp"

using namespace qd::cache;
using bytes = std::vector<std::byte>;
using qd_test::log_capture;
using qd_test::temp_dir;

namespace {

key key_of(std::uint64_t i) { return key_builder().add("store test").add(i).finish(); }

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}
mode_t mode_of(const std::string& path) {
  struct stat st;
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}
std::int64_t mtime_of(const std::string& path) {
  struct stat st;
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return static_cast<std::int64_t>(st.st_mtime);
}
void set_mtime(const std::string& path, std::int64_t unix_seconds) {
  struct timespec times[2] = {{static_cast<time_t>(unix_seconds), 0}, {static_cast<time_t>(unix_seconds), 0}};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) == 0);
}
std::int64_t now() { return static_cast<std::int64_t>(std::time(nullptr)); }

bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bytes out(text.size());
  std::memcpy(out.data(), text.data(), text.size());
  return out;
}
void write_file(const std::string& path, const bytes& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(content.size()));
  REQUIRE(out.good());
}
void put_u64(bytes& file, std::size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) file[at + static_cast<std::size_t>(i)] = static_cast<std::byte>(v >> (8 * i));
}
void reseal(bytes& file) { put_u64(file, 56, XXH3_64bits(file.data(), 56)); }

std::uint64_t total_entry_bytes(const std::string& root) {
  std::uint64_t total = 0;
  for (const entry_info& e : list_entries(root)) total += e.file_size;
  return total;
}

int count_temporaries(const std::string& root) {
  int n = 0;
  std::error_code ec;
  for (auto& item : std::filesystem::recursive_directory_iterator(root, ec))
    n += item.path().filename().string().ends_with(".tmp");
  return n;
}

bool running_as_root() { return ::geteuid() == 0; }

// Runs `scenario` in a child process without root's powers (as nobody, uid 65534, when the
// tests run as root, after giving it `dir`) and returns the child's exit code.
int run_unprivileged(const std::string& dir, const std::function<int()>& scenario) {
  if (running_as_root()) {
    REQUIRE(::chown(dir.c_str(), 65534, 65534) == 0);
    std::error_code ec;
    for (auto& item : std::filesystem::recursive_directory_iterator(dir, ec))
      REQUIRE(::lchown(item.path().c_str(), 65534, 65534) == 0);
  }
  std::fflush(nullptr);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (running_as_root() && (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0))
      ::_exit(100);
    ::_exit(scenario());
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("a saved entry loads back, with the documented layout and modes") {
  temp_dir dir;
  std::string root = dir / "a/b/qdcache";
  ::umask(022);
  store s({.root = root});
  REQUIRE(s.writable());
  REQUIRE(s.readable());
  CHECK(s.root() == root);
  CHECK(mode_of(root) == 0700);
  CHECK(mode_of(dir / "a") == 0700);
  CHECK(mode_of(root + "/kernel") == 0700);

  bytes payload = qd_test::code_like_payload(50 * 1024, 1);
  key k = key_of(1);
  CHECK_FALSE(s.load(entry_kind::kernel, k));
  CHECK(s.save(entry_kind::kernel, k, payload));
  std::string path = entry_path(root, entry_kind::kernel, k);
  CHECK(path == root + "/kernel/" + k.hex() + ".qdc");
  REQUIRE(exists(path));
  CHECK(mode_of(path) == 0600);
  auto back = s.load(entry_kind::kernel, k);
  REQUIRE(back);
  CHECK(*back == payload);
  CHECK_FALSE(s.load(entry_kind::module, k));  // kinds are separate namespaces

  std::uint64_t file_size = read_file(path).size();
  CHECK(file_size < payload.size());  // compressed
  store_stats st = s.stats();
  CHECK(st.hits == 1);
  CHECK(st.misses == 2);
  CHECK(st.stores == 1);
  CHECK(st.rejected == 0);
  CHECK(st.evictions == 0);
  CHECK(st.bytes_written == file_size);
  CHECK(st.bytes_read == file_size);
  CHECK(count_temporaries(root) == 0);

  // A second store on the same root, like a second process, hits without compiling.
  store again({.root = root});
  back = again.load(entry_kind::kernel, k);
  REQUIRE(back);
  CHECK(*back == payload);
  std::string why;
  CHECK_MESSAGE(verify_entry(path, &why), why);
}

TEST_CASE("saving the same key again replaces the entry atomically") {
  temp_dir dir;
  store s({.root = dir.path});
  key k = key_of(2);
  CHECK(s.save(entry_kind::module, k, qd_test::code_like_payload(1000, 1)));
  CHECK(s.save(entry_kind::module, k, qd_test::code_like_payload(2000, 2)));
  CHECK(*s.load(entry_kind::module, k) == qd_test::code_like_payload(2000, 2));
  CHECK(list_entries(dir.path).size() == 1);
  CHECK(count_temporaries(dir.path) == 0);
}

TEST_CASE("an entry the caller could not use is discarded unless another one took its place") {
  temp_dir dir;
  store s({.root = dir.path});
  const key k = key_of(4);
  const auto unusable = qd_test::code_like_payload(3000, 7);
  REQUIRE(s.save(entry_kind::module, k, unusable));
  auto loaded = s.load(entry_kind::module, k);
  REQUIRE(loaded);
  CHECK(s.discard(entry_kind::module, k, *loaded));
  CHECK_FALSE(s.load(entry_kind::module, k));  // a plain miss: nothing is decoded twice
  CHECK(s.stats().rejected == 0);
  // Another process has meanwhile stored a different entry: it stays.
  const auto fresh = qd_test::code_like_payload(3000, 8);
  REQUIRE(s.save(entry_kind::module, k, fresh));
  CHECK_FALSE(s.discard(entry_kind::module, k, unusable));
  CHECK(*s.load(entry_kind::module, k) == fresh);
  CHECK_FALSE(s.discard(entry_kind::kernel, k, fresh));  // another kind's entry: nothing there
  CHECK_FALSE(s.discard(entry_kind::module, key_of(5), fresh));
}

TEST_CASE("an empty payload is an entry like any other") {
  temp_dir dir;
  store s({.root = dir.path});
  CHECK(s.save(entry_kind::offload, key_of(3), {}));
  auto back = s.load(entry_kind::offload, key_of(3));
  REQUIRE(back);
  CHECK(back->empty());
}

TEST_CASE("each corruption of an entry file is a miss, the bad file goes, and the next save hits") {
  temp_dir dir;
  log_capture logs;
  store s({.root = dir.path});
  const key k = key_of(10), other = key_of(11);
  const bytes payload = qd_test::code_like_payload(30000, 10);
  REQUIRE(s.save(entry_kind::kernel, k, payload));
  const std::string path = entry_path(dir.path, entry_kind::kernel, k);
  const bytes good = read_file(path);
  bytes file = good;

  SUBCASE("truncated header") {
    file.resize(30);
    write_file(path, file);
  }
  SUBCASE("truncated payload") {
    file.resize(file.size() - 100);
    write_file(path, file);
  }
  SUBCASE("one flipped payload byte") {
    file[file.size() / 2] ^= std::byte{0x20};
    write_file(path, file);
  }
  SUBCASE("one flipped header byte") {
    file[20] ^= std::byte{0x01};
    write_file(path, file);
  }
  SUBCASE("wrong magic") {
    file[1] = std::byte{'X'};
    write_file(path, file);
  }
  SUBCASE("wrong format version") {
    file[8] = static_cast<std::byte>(format_version + 1);
    reseal(file);
    write_file(path, file);
  }
  SUBCASE("wrong kind: a module entry under the kernel name") {
    REQUIRE(s.save(entry_kind::module, k, payload));
    write_file(path, read_file(entry_path(dir.path, entry_kind::module, k)));
  }
  SUBCASE("wrong key echo: another key's entry under this name") {
    REQUIRE(s.save(entry_kind::kernel, other, payload));
    write_file(path, read_file(entry_path(dir.path, entry_kind::kernel, other)));
  }
  SUBCASE("zero-length file") { write_file(path, {}); }
  SUBCASE("absurd sizes") {
    put_u64(file, 40, 1ull << 50);
    reseal(file);
    write_file(path, file);
  }
  SUBCASE("a directory where the file should be") {
    REQUIRE(std::filesystem::remove(path));
    REQUIRE(std::filesystem::create_directories(path + "/inside"));
    write_file(path + "/inside/x", good);
  }
  SUBCASE("a symbolic link to a valid entry") {
    REQUIRE(std::filesystem::remove(path));
    write_file(dir / "elsewhere.qdc", good);
    std::filesystem::create_symlink(dir / "elsewhere.qdc", path);
  }
  SUBCASE("a FIFO where the file should be (must not hang)") {
    REQUIRE(std::filesystem::remove(path));
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  }
  SUBCASE("a file where the kind directory should be") {
    std::string kind_dir = path.substr(0, path.rfind('/'));
    std::filesystem::remove_all(kind_dir);
    write_file(kind_dir, good);
  }

  std::uint64_t rejected_before = s.stats().rejected;
  CHECK_FALSE(s.load(entry_kind::kernel, k));
  CHECK(s.stats().rejected == rejected_before + 1);
  CHECK_FALSE(exists(path));
  CHECK(logs.count(qd::log_level::warn) == 0);  // corruption is routine, not a warning

  CHECK(s.save(entry_kind::kernel, k, payload));
  auto back = s.load(entry_kind::kernel, k);
  REQUIRE(back);
  CHECK(*back == payload);
  std::string why;
  CHECK_MESSAGE(verify_entry(path, &why), why);
}

TEST_CASE("a directory in the entry's place does not block a save") {
  temp_dir dir;
  store s({.root = dir.path});
  key k = key_of(12);
  std::string path = entry_path(dir.path, entry_kind::kernel, k);
  REQUIRE(std::filesystem::create_directories(path + "/nested"));
  CHECK(s.save(entry_kind::kernel, k, qd_test::code_like_payload(100, 1)));
  CHECK(s.load(entry_kind::kernel, k));
  CHECK(s.writable());
}

TEST_CASE("an untrusted entry or directory is refused with one warning") {
  temp_dir dir;
  const bytes payload = qd_test::code_like_payload(5000, 20);

  SUBCASE("group-writable entries") {
    log_capture logs;
    store s({.root = dir.path});
    for (std::uint64_t i = 0; i < 2; ++i) {
      REQUIRE(s.save(entry_kind::module, key_of(20 + i), payload));
      REQUIRE(::chmod(entry_path(dir.path, entry_kind::module, key_of(20 + i)).c_str(), 0660) == 0);
    }
    CHECK_FALSE(s.load(entry_kind::module, key_of(20)));
    CHECK_FALSE(s.load(entry_kind::module, key_of(21)));
    CHECK(s.stats().rejected == 2);
    CHECK(logs.count(qd::log_level::warn) == 1);
    CHECK(logs.all().find("writable by group or others") != std::string::npos);
    std::string why;
    CHECK_FALSE(verify_entry(entry_path(dir.path, entry_kind::module, key_of(20)), &why));
    CHECK(why.find("untrusted") != std::string::npos);
    // The recompiled entry replaces it, with a trustworthy mode.
    CHECK(s.save(entry_kind::module, key_of(20), payload));
    CHECK(mode_of(entry_path(dir.path, entry_kind::module, key_of(20))) == 0600);
    CHECK(s.load(entry_kind::module, key_of(20)) == payload);
  }
  SUBCASE("a kind directory made world-writable while the store is open") {
    log_capture logs;
    store s({.root = dir.path});
    REQUIRE(s.save(entry_kind::kernel, key_of(22), payload));
    std::string path = entry_path(dir.path, entry_kind::kernel, key_of(22));
    REQUIRE(::chmod((dir / "kernel").c_str(), 0777) == 0);
    CHECK_FALSE(s.load(entry_kind::kernel, key_of(22)));
    CHECK(logs.count(qd::log_level::warn) == 1);
    CHECK(exists(path));
  }
  SUBCASE("a root directory with mode 0777") {
    {
      store s({.root = dir.path});
      REQUIRE(s.save(entry_kind::kernel, key_of(23), payload));
    }
    REQUIRE(::chmod(dir.path.c_str(), 0777) == 0);
    log_capture logs;
    store s({.root = dir.path});
    CHECK(logs.count(qd::log_level::warn) == 1);
    CHECK(logs.all().find("mode 0777") != std::string::npos);
    CHECK_FALSE(s.readable());
    CHECK_FALSE(s.writable());
    CHECK_FALSE(s.load(entry_kind::kernel, key_of(23)));
    CHECK_FALSE(s.save(entry_kind::kernel, key_of(24), payload));
    CHECK(logs.count(qd::log_level::warn) == 1);
  }
  SUBCASE("a group-writable kind directory") {
    {
      store s({.root = dir.path});
      REQUIRE(s.save(entry_kind::offload, key_of(25), payload));
    }
    REQUIRE(::chmod((dir / "offload").c_str(), 0770) == 0);
    log_capture logs;
    store s({.root = dir.path});
    CHECK(logs.count(qd::log_level::warn) == 1);
    CHECK_FALSE(s.load(entry_kind::offload, key_of(25)));
    CHECK_FALSE(s.save(entry_kind::offload, key_of(25), payload));
    CHECK(s.writable());  // the other kinds still work
    CHECK(s.save(entry_kind::kernel, key_of(25), payload));
    CHECK(s.load(entry_kind::kernel, key_of(25)));
    CHECK(logs.count(qd::log_level::warn) == 1);
  }
  SUBCASE("an entry owned by another user") {
    if (!running_as_root()) {
      MESSAGE("skipped: giving a file to another user needs root (this test runs as uid " << ::geteuid() << ")");
      return;
    }
    log_capture logs;
    store s({.root = dir.path});
    REQUIRE(s.save(entry_kind::module, key_of(26), payload));
    std::string path = entry_path(dir.path, entry_kind::module, key_of(26));
    REQUIRE(::chown(path.c_str(), 65534, 65534) == 0);
    CHECK_FALSE(s.load(entry_kind::module, key_of(26)));
    CHECK(logs.count(qd::log_level::warn) == 1);
    CHECK(logs.all().find("owned by uid 65534") != std::string::npos);
  }
  SUBCASE("a root owned by another user") {
    if (!running_as_root()) {
      MESSAGE("skipped: giving a directory to another user needs root (this test runs as uid " << ::geteuid() << ")");
      return;
    }
    REQUIRE(::chown(dir.path.c_str(), 65534, 65534) == 0);
    log_capture logs;
    store s({.root = dir.path});
    CHECK_FALSE(s.readable());
    CHECK_FALSE(s.writable());
    CHECK(logs.count(qd::log_level::warn) == 1);
    CHECK(logs.all().find("owned by uid 65534") != std::string::npos);
  }
}

TEST_CASE("a root that is / or a directory of other files is refused with an error, not filled") {
  for (const char* slash : {"/", "/tmp/..", "//"}) {
    CAPTURE(slash);
    CHECK_THROWS_WITH_AS(store({.root = slash}),
                         doctest::Contains("is not a Quadrants cache directory: it is the file "
                                           "system's root"),
                         qd::user_error);
  }
  CHECK_FALSE(std::filesystem::exists("/module"));
  temp_dir dir;
  write_file(dir / "notes.txt", bytes(3));
  std::filesystem::create_directory(dir / "src");
  CHECK_THROWS_WITH_AS(store({.root = dir.path}),
                       doctest::Contains("holds files Quadrants did not make ('notes.txt', "
                                         "'src') and no CACHEDIR.TAG"),
                       qd::user_error);
  for (const char* made : {"kernel", "module", "offload", "locks", "CACHEDIR.TAG"})
    CHECK_FALSE(std::filesystem::exists(dir / made));
  // An empty directory becomes a cache, tagged for backup tools too.
  temp_dir empty;
  {
    store s({.root = empty.path});
    CHECK(s.writable());
  }
  CHECK(read_file(empty / "CACHEDIR.TAG").size() > 43);
  // A tagged cache may hold other files; an untagged one made before the tag is adopted.
  write_file(empty / "README", bytes(1));
  CHECK_NOTHROW(store({.root = empty.path}));
  temp_dir legacy;
  std::filesystem::create_directory(legacy / "module");
  std::filesystem::create_directory(legacy / "locks");
  write_file(legacy / "scan-stamp", bytes(8));
  CHECK(store({.root = legacy.path}).writable());
  CHECK(std::filesystem::exists(legacy / "CACHEDIR.TAG"));
}

TEST_CASE("a save that finds its directory gone loses that save only, not the store") {
  temp_dir dir;
  const std::string root = dir / "cache";
  store s({.root = root});
  REQUIRE(s.save(entry_kind::kernel, key_of(40), bytes(5)));
  // The whole cache vanishes and a file takes its place for a moment.
  std::filesystem::remove_all(root);
  write_file(root, bytes(1));
  log_capture logs;
  CHECK_FALSE(s.save(entry_kind::kernel, key_of(41), bytes(5)));
  CHECK(s.writable());  // it used to switch to memory-only for the life of the process
  CHECK(logs.count(qd::log_level::warn) == 0);
  std::filesystem::remove(root);
  CHECK(s.save(entry_kind::kernel, key_of(42), bytes(5)));  // the directories are made again
  CHECK(s.load(entry_kind::kernel, key_of(42)) == bytes(5));
}

TEST_CASE("check_layout reports what a store refuses about its directories, and fixes what it can") {
  temp_dir dir;
  { store s({.root = dir.path}); }
  CHECK(check_layout(dir.path, false).empty());
  REQUIRE(::chmod(dir.path.c_str(), 0777) == 0);
  std::filesystem::remove_all(dir / "module");
  write_file(dir / "module", bytes(4));
  auto problems = check_layout(dir.path, false);
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].path == dir.path);
  CHECK(problems[0].problem == "untrusted: it is writable by group or others (mode 0777)");
  CHECK(problems[1].path == dir / "module");
  CHECK(problems[1].problem == "a file where the module directory belongs");
  CHECK_FALSE(problems[0].fixed);
  problems = check_layout(dir.path, true);
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].fixed);
  CHECK(problems[1].fixed);
  CHECK(check_layout(dir.path, false).empty());
  struct stat st;
  REQUIRE(::stat(dir.path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  CHECK(check_layout(dir / "absent", false).empty());
}

TEST_CASE("a root that cannot be created degrades to memory with one warning") {
  temp_dir dir;
  write_file(dir / "a-file", bytes(10));
  log_capture logs;
  store s({.root = dir / "a-file/qdcache"});
  CHECK(logs.count(qd::log_level::warn) == 1);
  CHECK(logs.all().find("a-file/qdcache") != std::string::npos);
  CHECK_FALSE(s.writable());
  CHECK_FALSE(s.readable());
  CHECK_FALSE(s.load(entry_kind::kernel, key_of(30)));
  CHECK_FALSE(s.save(entry_kind::kernel, key_of(30), qd_test::code_like_payload(100, 1)));
  CHECK_FALSE(s.lock_for_compile(key_of(30), std::chrono::milliseconds(1000)));
  s.enforce_size_limit();
  CHECK(s.stats().misses == 1);
  CHECK(s.stats().stores == 0);
  CHECK(logs.count(qd::log_level::warn) == 1);
}

TEST_CASE("a read-only root still serves its entries, refuses saves, and warns once") {
  // Root ignores directory permissions, so the scenario runs in a child process as an
  // unprivileged user: ourselves, or nobody (uid 65534) when the tests run as root.
  temp_dir dir;
  bytes payload = qd_test::code_like_payload(5000, 31);
  std::string path = entry_path(dir.path, entry_kind::kernel, key_of(31));
  int failed_step = run_unprivileged(dir.path, [&]() -> int {
    {
      store s({.root = dir.path});
      if (!s.save(entry_kind::kernel, key_of(31), payload)) return 1;
    }
    for (std::string d : {dir.path, dir / "kernel", dir / "module", dir / "offload"})
      if (::chmod(d.c_str(), 0500) != 0) return 2;
    if (::mkdir((dir / "probe").c_str(), 0700) == 0) return 3;  // really read-only for this user
    log_capture logs;
    store s({.root = dir.path});
    if (logs.count(qd::log_level::warn) != 1) return 4;
    if (logs.all().find("not writable") == std::string::npos) return 5;
    if (s.writable() || !s.readable()) return 6;
    if (s.load(entry_kind::kernel, key_of(31)) != payload) return 7;
    if (s.save(entry_kind::kernel, key_of(32), payload)) return 8;
    if (s.load(entry_kind::kernel, key_of(32))) return 9;
    if (s.lock_for_compile(key_of(32), std::chrono::milliseconds(1000))) return 10;
    s.enforce_size_limit();
    if (logs.count(qd::log_level::warn) != 1) return 11;
    return 0;
  });
  CHECK_MESSAGE(failed_step == 0, "step " << failed_step << " of the read-only scenario failed");
}

TEST_CASE("a full disk degrades the store with one warning and keeps its entries readable") {
  // RLIMIT_FSIZE makes writes fail like a full disk, even for root.
  temp_dir dir;
  log_capture logs;
  store s({.root = dir.path, .zstd_level = 0});
  bytes small = qd_test::random_payload(1000, 40);
  REQUIRE(s.save(entry_kind::kernel, key_of(40), small));

  struct rlimit old_limit;
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limit = old_limit;
  limit.rlim_cur = 4096;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &limit) == 0);
  bool saved = s.save(entry_kind::kernel, key_of(41), qd_test::random_payload(100000, 41));
  bool saved_again = s.save(entry_kind::kernel, key_of(42), small);
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::signal(SIGXFSZ, old_handler);

  CHECK_FALSE(saved);
  CHECK_FALSE(saved_again);  // degraded: not even a small entry is attempted
  CHECK_FALSE(s.writable());
  CHECK(logs.count(qd::log_level::warn) == 1);
  CHECK(logs.all().find("cannot write") != std::string::npos);
  CHECK(s.load(entry_kind::kernel, key_of(40)) == small);
  CHECK_FALSE(s.load(entry_kind::kernel, key_of(41)));
  CHECK(count_temporaries(dir.path) == 0);
  CHECK(s.stats().stores == 1);
}

TEST_CASE("an invalid zstd level is a user error") {
  temp_dir dir;
  CHECK_THROWS_AS(store({.root = dir.path, .zstd_level = 99}), qd::user_error);
  CHECK_THROWS_AS(store({.root = dir.path, .zstd_level = -1}), qd::user_error);
}

TEST_CASE("exceeding the cap evicts the least recently used entries") {
  temp_dir dir;
  // Raw 1000-byte payloads make every file exactly 1064 bytes.
  const std::uint64_t file_size = 1000 + entry_header_size;
  const std::int64_t base = now() - 7200;  // all last used more than touch_interval ago
  {
    store unlimited({.root = dir.path, .max_size = 0, .zstd_level = 0});
    for (std::uint64_t i = 0; i < 10; ++i) {
      REQUIRE(unlimited.save(entry_kind::kernel, key_of(100 + i), qd_test::random_payload(1000, i)));
      set_mtime(entry_path(dir.path, entry_kind::kernel, key_of(100 + i)), base + static_cast<std::int64_t>(i) * 60);
    }
  }
  store s({.root = dir.path, .max_size = 8000, .zstd_level = 0});
  // A hit on the oldest entry renews its stamp, since it is older than touch_interval.
  REQUIRE(s.load(entry_kind::kernel, key_of(100)));
  CHECK(mtime_of(entry_path(dir.path, entry_kind::kernel, key_of(100))) >= now() - 5);

  std::uint64_t evictions_before = s.stats().evictions;
  s.enforce_size_limit();
  // Down to 90 % of the cap: 7200 bytes hold 6 of the 10 entries.
  CHECK(s.stats().evictions - evictions_before == 4);
  CHECK(total_entry_bytes(dir.path) == 6 * file_size);
  CHECK(total_entry_bytes(dir.path) <= 8000);
  CHECK(exists(entry_path(dir.path, entry_kind::kernel, key_of(100))));
  for (std::uint64_t i = 1; i <= 4; ++i) CHECK_FALSE(exists(entry_path(dir.path, entry_kind::kernel, key_of(100 + i))));
  for (std::uint64_t i = 5; i < 10; ++i) CHECK(exists(entry_path(dir.path, entry_kind::kernel, key_of(100 + i))));
  CHECK_FALSE(s.load(entry_kind::kernel, key_of(101)));
  CHECK(s.load(entry_kind::kernel, key_of(109)));
}

TEST_CASE("eviction covers every kind of entry") {
  temp_dir dir;
  const std::int64_t base = now() - 7200;
  entry_kind order[] = {entry_kind::offload, entry_kind::module, entry_kind::kernel, entry_kind::module};
  {
    store unlimited({.root = dir.path, .max_size = 0, .zstd_level = 0});
    for (std::uint64_t i = 0; i < 4; ++i) {
      REQUIRE(unlimited.save(order[i], key_of(150 + i), qd_test::random_payload(1000, i)));
      set_mtime(entry_path(dir.path, order[i], key_of(150 + i)), base + static_cast<std::int64_t>(i));
    }
  }
  store s({.root = dir.path, .max_size = 3000, .zstd_level = 0});
  s.enforce_size_limit();  // 4256 bytes > 3000: keep 2 (2128 <= 2700)
  CHECK_FALSE(exists(entry_path(dir.path, entry_kind::offload, key_of(150))));
  CHECK_FALSE(exists(entry_path(dir.path, entry_kind::module, key_of(151))));
  CHECK(exists(entry_path(dir.path, entry_kind::kernel, key_of(152))));
  CHECK(exists(entry_path(dir.path, entry_kind::module, key_of(153))));
}

TEST_CASE("a recent hit does not rewrite the last-use stamp") {
  temp_dir dir;
  store s({.root = dir.path});
  REQUIRE(s.save(entry_kind::kernel, key_of(200), qd_test::code_like_payload(1000, 1)));
  std::string path = entry_path(dir.path, entry_kind::kernel, key_of(200));
  std::int64_t recent = now() - 300;
  set_mtime(path, recent);
  for (int i = 0; i < 10; ++i) REQUIRE(s.load(entry_kind::kernel, key_of(200)));
  CHECK(mtime_of(path) == recent);
}

TEST_CASE("saves evict automatically without scanning on every save") {
  temp_dir dir;
  const std::uint64_t cap = 64 * 1024;
  store s({.root = dir.path, .max_size = cap, .zstd_level = 0});
  for (std::uint64_t i = 0; i < 200; ++i)
    REQUIRE(s.save(entry_kind::offload, key_of(300 + i), qd_test::random_payload(1000, i)));
  CHECK(total_entry_bytes(dir.path) <= cap);
  CHECK(s.stats().evictions > 0);
  CHECK(s.stats().evictions + list_entries(dir.path).size() == 200);
  CHECK(s.load(entry_kind::offload, key_of(499)));

  // With room to spare, a scan in the last scan_interval (the stamp says when) means
  // none of the next saves scans again.
  temp_dir roomy;
  store t({.root = roomy.path});
  REQUIRE(t.save(entry_kind::kernel, key_of(600), qd_test::code_like_payload(1000, 1)));
  std::string stamp = roomy / "scan-stamp";
  REQUIRE(exists(stamp));
  std::int64_t stamped = now() - 60;
  set_mtime(stamp, stamped);
  for (std::uint64_t i = 1; i < 50; ++i)
    REQUIRE(t.save(entry_kind::kernel, key_of(600 + i), qd_test::code_like_payload(1000, i)));
  CHECK(mtime_of(stamp) == stamped);
  // Once the stamp is older than scan_interval, the next save scans.
  set_mtime(stamp, now() - scan_interval.count() - 60);
  store u({.root = roomy.path});
  REQUIRE(u.save(entry_kind::kernel, key_of(700), qd_test::code_like_payload(1000, 1)));
  CHECK(mtime_of(stamp) >= now() - 5);
}

TEST_CASE("scans remove stale temporary files and unheld lock files, and nothing in use") {
  temp_dir dir;
  store s({.root = dir.path});
  REQUIRE(s.save(entry_kind::kernel, key_of(400), qd_test::code_like_payload(1000, 1)));
  std::string path = entry_path(dir.path, entry_kind::kernel, key_of(400));
  std::string kind_dir = path.substr(0, path.rfind('/'));
  std::string stale = kind_dir + "/." + key_of(400).hex() + ".999999.0.tmp";
  std::string fresh = kind_dir + "/." + key_of(400).hex() + ".999999.1.tmp";
  std::string stale_root = dir / ".scan-stamp.999999.2.tmp";
  write_file(stale, bytes(100));
  write_file(fresh, bytes(100));
  write_file(stale_root, bytes(10));
  set_mtime(stale, now() - stale_temp_age.count() - 60);
  set_mtime(stale_root, now() - stale_temp_age.count() - 60);
  CHECK(list_entries(dir.path).size() == 1);  // temporaries are never entries

  auto held = s.lock_for_compile(key_of(401), std::chrono::milliseconds(0));
  REQUIRE(held);
  {
    auto released = s.lock_for_compile(key_of(402), std::chrono::milliseconds(0));
    REQUIRE(released);
  }
  std::string held_path = dir / ("locks/" + key_of(401).hex() + ".lock");
  std::string released_path = dir / ("locks/" + key_of(402).hex() + ".lock");
  set_mtime(held_path, now() - stale_temp_age.count() - 60);
  set_mtime(released_path, now() - stale_temp_age.count() - 60);

  s.enforce_size_limit();
  CHECK_FALSE(exists(stale));
  CHECK_FALSE(exists(stale_root));
  CHECK(exists(fresh));  // may be a live writer's
  CHECK(exists(path));
  CHECK(exists(held_path));
  CHECK_FALSE(exists(released_path));
}

TEST_CASE("cleaning a directory that is not a cache removes nothing of its own") {
  temp_dir dir;
  std::vector<std::string> foreign = {dir / ".profile.tmp",
                                      dir / ".x.1.tmp",
                                      dir / "notes.qdc",
                                      dir / "kernel/.notakey.1.tmp",
                                      dir / "kernel/readme",
                                      dir / "kernel/abcdef.qdc",
                                      dir / "kernel/ab/" + std::string(32, 'a') + ".qdc",
                                      dir / "locks/mine.lock"};
  std::filesystem::create_directories(dir / "kernel/ab");
  std::filesystem::create_directories(dir / "locks");
  for (const std::string& f : foreign) {
    write_file(f, bytes(10));
    set_mtime(f, now() - 86400);
  }
  clean_result r = evict_to_size(dir.path, 0);
  CHECK(r.removed_entries == 0);
  CHECK(r.removed_temporaries == 0);
  for (const std::string& f : foreign) CHECK_MESSAGE(exists(f), f);
}

TEST_CASE("a compile lock excludes a second holder until released, and times out") {
  temp_dir dir;
  store s({.root = dir.path});
  store other({.root = dir.path});
  key k = key_of(500);
  auto first = s.lock_for_compile(k, std::chrono::milliseconds(0));
  REQUIRE(first.owns_lock());
  auto start = std::chrono::steady_clock::now();
  auto second = other.lock_for_compile(k, std::chrono::milliseconds(60));
  auto waited = std::chrono::steady_clock::now() - start;
  CHECK_FALSE(second.owns_lock());
  CHECK(waited >= std::chrono::milliseconds(60));
  CHECK(waited < std::chrono::seconds(5));
  CHECK(other.lock_for_compile(key_of(501), std::chrono::milliseconds(0)));  // other keys are free

  // Released while the other waits: the waiter gets it.
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    first.unlock();
  });
  auto third = other.lock_for_compile(k, std::chrono::seconds(10));
  releaser.join();
  CHECK(third.owns_lock());
  store::compile_lock moved = std::move(third);
  CHECK(moved.owns_lock());
  CHECK_FALSE(third.owns_lock());
}

TEST_CASE("threads saving and loading the same and different keys all see exact bytes") {
  temp_dir dir;
  store s({.root = dir.path});
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (std::uint64_t round = 0; round < 3; ++round)
        for (std::uint64_t i = 0; i < 20; ++i) {
          std::uint64_t id = t % 2 == 0 ? i : 1000 * static_cast<std::uint64_t>(t) + i;
          bytes expected = qd_test::code_like_payload(2000 + id % 7 * 500, id);
          if (auto got = s.load(entry_kind::offload, key_of(id))) {
            if (*got != expected) ++wrong;
          } else if (!s.save(entry_kind::offload, key_of(id), expected)) {
            ++wrong;
          }
        }
    });
  for (auto& t : threads) t.join();
  CHECK(wrong == 0);
  store_stats st = s.stats();
  CHECK(st.hits + st.misses == 8 * 3 * 20);
  CHECK(list_entries(dir.path).size() == 20 + 4 * 20);
  CHECK(count_temporaries(dir.path) == 0);
  for (const entry_info& e : list_entries(dir.path)) {
    std::string why;
    CHECK_MESSAGE(verify_entry(e.path, &why), e.path << ": " << why);
  }
}

TEST_CASE("list_entries, evict_to_size and remove_unused_since see every entry") {
  temp_dir dir;
  store s({.root = dir.path, .zstd_level = 0});
  for (std::uint64_t i = 0; i < 6; ++i) {
    entry_kind kind = all_entry_kinds[i % 3];
    REQUIRE(s.save(kind, key_of(800 + i), qd_test::random_payload(1000, i)));
    set_mtime(entry_path(dir.path, kind, key_of(800 + i)), now() - 86400 * static_cast<std::int64_t>(6 - i));
  }
  std::vector<entry_info> listed = list_entries(dir.path);
  REQUIRE(listed.size() == 6);
  std::set<std::string> keys;
  for (const entry_info& e : listed) {
    keys.insert(e.k.hex());
    CHECK(e.file_size == 1064);
    CHECK(e.path == entry_path(dir.path, e.kind, e.k));
  }
  CHECK(keys.size() == 6);

  clean_result old = remove_unused_since(dir.path, now() - 86400 * 4 + 10);  // entries 0..2 are older
  CHECK(old.removed_entries == 3);
  CHECK(old.remaining_entries == 3);
  CHECK(old.remaining_bytes == 3 * 1064);
  clean_result trimmed = evict_to_size(dir.path, 1064);
  CHECK(trimmed.removed_entries == 2);
  CHECK(trimmed.remaining_bytes == 1064);
  CHECK(exists(entry_path(dir.path, all_entry_kinds[5 % 3], key_of(805))));  // the newest stays
  clean_result all = evict_to_size(dir.path, 0);
  CHECK(all.removed_entries == 1);
  CHECK(list_entries(dir.path).empty());
}

TEST_CASE("verify_entry names what is wrong") {
  temp_dir dir;
  store s({.root = dir.path});
  REQUIRE(s.save(entry_kind::kernel, key_of(900), qd_test::code_like_payload(1000, 1)));
  std::string path = entry_path(dir.path, entry_kind::kernel, key_of(900));
  std::string why;
  CHECK(verify_entry(path, &why));
  bytes file = read_file(path);
  file.back() ^= std::byte{1};
  write_file(path, file);
  CHECK_FALSE(verify_entry(path, &why));
  CHECK(why.find("zstd") != std::string::npos);
  CHECK(exists(path));  // verifying never removes
  CHECK_FALSE(verify_entry(dir / "kernel/nonsense.qdc", &why));
  CHECK(why.find("not an entry path") != std::string::npos);
  CHECK_FALSE(verify_entry(dir / ("elsewhere/" + key_of(900).hex() + ".qdc"), &why));
  CHECK(why.find("not an entry path") != std::string::npos);
  CHECK_FALSE(verify_entry("relative.qdc", &why));
}

TEST_CASE("default_root follows QD_OFFLINE_CACHE_FILE_PATH, then XDG_CACHE_HOME, then HOME") {
  struct saved_env {
    const char* name;
    std::optional<std::string> value;
    explicit saved_env(const char* n) : name(n) {
      if (const char* v = std::getenv(n)) value = v;
    }
    ~saved_env() {
      if (value)
        ::setenv(name, value->c_str(), 1);
      else
        ::unsetenv(name);
    }
  } a("QD_OFFLINE_CACHE_FILE_PATH"), b("XDG_CACHE_HOME"), c("HOME");
  ::setenv("QD_OFFLINE_CACHE_FILE_PATH", "/x/explicit", 1);
  ::setenv("XDG_CACHE_HOME", "/x/xdg", 1);
  ::setenv("HOME", "/x/home", 1);
  CHECK(default_root() == "/x/explicit");
  ::unsetenv("QD_OFFLINE_CACHE_FILE_PATH");
  CHECK(default_root() == "/x/xdg/quadrants/qdcache");
  ::setenv("XDG_CACHE_HOME", "relative/ignored", 1);
  CHECK(default_root() == "/x/home/.cache/quadrants/qdcache");
  ::unsetenv("XDG_CACHE_HOME");
  CHECK(default_root() == "/x/home/.cache/quadrants/qdcache");
}
