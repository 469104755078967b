// The writer and reader of the files the runtime writes for the user (runtime/diagnostics/text_file.hpp:
// debug dumps, coverage tracefiles) under attack: links, FIFOs and devices planted in a
// temporary directory, directories others may write, and temporary names planted ahead.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "quadrants/runtime/diagnostics/text_file.hpp"
#include "support/fresh_dir.hpp"

namespace fs = std::filesystem;
using qd::detail::read_regular_file;
using qd::detail::write_text_atomically;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool still_fifo(const fs::path& p) { return fs::is_fifo(fs::symlink_status(p)); }

// A character device like /dev/null or /dev/zero: a private copy in `dir` when this process
// may make one (root), else the system's own, which only root could harm.
std::string device(const qd_test::fresh_dir& dir, const char* name, unsigned minor) {
  const std::string system = std::string("/dev/") + name;
  if (::geteuid() != 0) return system;
  const std::string copy = (dir.path() / name).string();
  if (::mknod(copy.c_str(), S_IFCHR | 0666, makedev(1, minor)) == 0) return copy;
  return {};  // root without CAP_MKNOD: never risk the real one
}

}  // namespace

TEST_CASE("a new name is created and a regular file is replaced whole") {
  qd_test::fresh_dir dir("text-file-plain");
  const fs::path file = dir.path() / "sub" / "out.txt";
  std::string why;
  REQUIRE(write_text_atomically(file.string(), "first", &why));
  CHECK(read(file) == "first");
  REQUIRE(write_text_atomically(file.string(), "second, longer", &why));
  CHECK(read(file) == "second, longer");
  CHECK(std::distance(fs::directory_iterator(file.parent_path()), fs::directory_iterator()) == 1);  // no temporaries
  std::string text;
  CHECK(read_regular_file(file.string(), text, &why));
  CHECK(text == "second, longer");
  CHECK(read_regular_file((dir.path() / "missing").string(), text, &why));  // a new name reads as empty
  CHECK(text.empty());
}

TEST_CASE("a symbolic link at the file's name is refused; the file it names is untouched") {
  qd_test::fresh_dir dir("text-file-link");
  const fs::path victim = dir.path() / "victim", link = dir.path() / "out.txt";
  std::ofstream(victim) << "precious";
  fs::create_symlink(victim, link);
  std::string why;
  CHECK_FALSE(write_text_atomically(link.string(), "attack", &why));
  CHECK(why.find("symbolic link") != std::string::npos);
  CHECK(fs::is_symlink(link));
  CHECK(read(victim) == "precious");
  std::string text;
  CHECK_FALSE(read_regular_file(link.string(), text, &why));
  CHECK(why.find("symbolic link") != std::string::npos);
}

TEST_CASE("a FIFO or a device at the file's name is refused at once and stays what it was") {
  qd_test::fresh_dir dir("text-file-special");
  const fs::path fifo = dir.path() / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string why, text;
  auto t0 = std::chrono::steady_clock::now();
  CHECK_FALSE(read_regular_file(fifo.string(), text, &why));  // a reader would wait for a writer forever
  CHECK(why.find("FIFO") != std::string::npos);
  CHECK_FALSE(write_text_atomically(fifo.string(), "x", &why));
  CHECK(why.find("FIFO") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  CHECK(still_fifo(fifo));
  for (auto [name, minor] : {std::pair{"null", 3u}, std::pair{"zero", 5u}}) {
    const std::string dev = device(dir, name, minor);
    if (dev.empty()) {
      MESSAGE("skipped /dev/" << name << ": root without CAP_MKNOD");
      continue;
    }
    INFO(dev);
    CHECK_FALSE(read_regular_file(dev, text, &why));  // /dev/zero would be read until memory runs out
    CHECK(why.find("character device") != std::string::npos);
    CHECK_FALSE(write_text_atomically(dev, "x", &why));
    CHECK(why.find("not a regular file") != std::string::npos);
    CHECK(fs::is_character_file(fs::symlink_status(dev)));
  }
}

TEST_CASE("a directory others may write is refused unless sticky; one owned by another user too") {
  qd_test::fresh_dir dir("text-file-dirs");
  const fs::path open_dir = dir.path() / "open", file = open_dir / "out.txt";
  fs::create_directory(open_dir);
  std::string why;
  for (mode_t mode : {mode_t{0777}, mode_t{0775}, mode_t{0757}}) {
    ::chmod(open_dir.c_str(), mode);
    CHECK_FALSE(write_text_atomically(file.string(), "x", &why));
    CHECK(why.find("writable by group or others") != std::string::npos);
    CHECK_FALSE(fs::exists(file));
  }
  ::chmod(open_dir.c_str(), 01777);  // like /tmp: others cannot rename or remove what is ours
  CHECK(write_text_atomically(file.string(), "sticky", &why));
  CHECK(read(file) == "sticky");
  // Checked from the given root down: a dump's subdirectories too.
  const fs::path root = dir.path() / "root";
  fs::create_directories(root / "kernel");
  ::chmod((root / "kernel").c_str(), 0777);
  CHECK_FALSE(write_text_atomically((root / "kernel" / "f.txt").string(), "x", &why, root.string()));
  CHECK(why.find("writable by group or others") != std::string::npos);
  if (::geteuid() != 0) {
    MESSAGE("skipped: a directory owned by another user needs root to make");
    return;
  }
  const fs::path theirs = dir.path() / "theirs";
  fs::create_directory(theirs);
  REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
  CHECK_FALSE(write_text_atomically((theirs / "out.txt").string(), "x", &why));
  CHECK(why.find("owned by uid 65534") != std::string::npos);
  CHECK_FALSE(fs::exists(theirs / "out.txt"));
}

TEST_CASE("links planted below a root or at temporary names are never followed") {
  qd_test::fresh_dir dir("text-file-planted");
  const fs::path root = dir.path() / "dump", elsewhere = dir.path() / "elsewhere", victim = dir.path() / "victim";
  fs::create_directories(root);
  fs::create_directories(elsewhere);
  std::ofstream(victim) << "precious";
  // A directory of the path below the root replaced by a link to another directory.
  fs::create_directory_symlink(elsewhere, root / "kernel");
  std::string why;
  CHECK_FALSE(write_text_atomically((root / "kernel" / "traced.ir.txt").string(), "x", &why, root.string()));
  CHECK(why.find("symbolic link") != std::string::npos);
  CHECK(fs::is_empty(elsewhere));
  // Links at every name the writer used to pick for its temporary file.
  const fs::path target = dir.path() / "out.txt";
  for (int n = 0; n < 64; ++n)
    fs::create_symlink(victim, target.string() + "." + std::to_string(::getpid()) + "." + std::to_string(n) + ".tmp");
  REQUIRE(write_text_atomically(target.string(), "mine", &why));
  CHECK(read(victim) == "precious");
  CHECK(fs::is_regular_file(fs::symlink_status(target)));
  CHECK(read(target) == "mine");
}
