// Tests of the qd-cache tool: run it on caches made through the store API and check its
// output and exit status.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cache/cache_test_support.hpp"
#include "quadrants/cache/store.hpp"

using namespace qd::cache;
using qd_test::temp_dir;

namespace {

struct tool_result {
  int status = -1;
  std::string output;
};

// Runs `qd-cache <args>` through the shell (stdout and stderr together).
tool_result run_tool(const std::string& args, const std::string& env = "") {
  std::string command = env + " '" + std::string(QD_CACHE_TOOL) + "' " + args + " 2>&1";
  tool_result r;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe);
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) r.output.append(buffer, n);
  int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The whitespace-separated fields of the line that starts with `label`.
std::vector<std::string> row(const std::string& output, const std::string& label) {
  for (const std::string& line : lines_of(output))
    if (line.starts_with(label + " ")) {
      std::vector<std::string> fields;
      std::istringstream in(line);
      for (std::string f; in >> f;) fields.push_back(f);
      return fields;
    }
  return {};
}

key key_of(std::uint64_t i) { return key_builder().add("tool test").add(i).finish(); }

void set_mtime(const std::string& path, std::int64_t unix_seconds) {
  struct timespec times[2] = {{static_cast<time_t>(unix_seconds), 0}, {static_cast<time_t>(unix_seconds), 0}};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) == 0);
}

}  // namespace

TEST_CASE("qd-cache path prints the root it would use") {
  temp_dir dir;
  tool_result r = run_tool("--root '" + dir.path + "/' path");
  CHECK(r.status == 0);
  CHECK(r.output == dir.path + "\n");
  r = run_tool("path", "QD_OFFLINE_CACHE_FILE_PATH=/x/explicit");
  CHECK(r.output == "/x/explicit\n");
  r = run_tool("path", "env -u QD_OFFLINE_CACHE_FILE_PATH XDG_CACHE_HOME=/x/xdg");
  CHECK(r.output == "/x/xdg/quadrants/qdcache\n");
}

TEST_CASE("qd-cache stats, list, verify and clean work on a real cache") {
  temp_dir dir;
  const std::string root = "--root '" + dir.path + "' ";
  const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  store s({.root = dir.path, .zstd_level = 0});  // raw: every entry file is 1064 bytes
  entry_kind kinds[] = {entry_kind::module,  entry_kind::module,  entry_kind::kernel,
                        entry_kind::offload, entry_kind::offload, entry_kind::offload};
  for (std::uint64_t i = 0; i < 6; ++i) {
    REQUIRE(s.save(kinds[i], key_of(i), qd_test::random_payload(1000, i)));
    set_mtime(entry_path(dir.path, kinds[i], key_of(i)), now - 3 * 86400 + static_cast<std::int64_t>(i) * 43200);
  }

  tool_result r = run_tool(root + "stats");
  REQUIRE(r.status == 0);
  CHECK(row(r.output, "root") == std::vector<std::string>{"root", dir.path});
  CHECK(row(r.output, "module").at(1) == "2");
  CHECK(row(r.output, "module").at(2) == "2128");
  CHECK(row(r.output, "kernel").at(1) == "1");
  CHECK(row(r.output, "offload").at(2) == "3192");
  CHECK(row(r.output, "total").at(1) == "6");
  CHECK(row(r.output, "total").at(2) == "6384");

  r = run_tool(root + "list");
  REQUIRE(r.status == 0);
  std::vector<std::string> listed = lines_of(r.output);
  REQUIRE(listed.size() == 6);
  CHECK(listed[0].find(key_of(5).hex()) != std::string::npos);  // most recently used first
  CHECK(listed[0].starts_with("offload "));
  CHECK(listed[5].find(key_of(0).hex()) != std::string::npos);
  CHECK(listed[5].find(entry_path(dir.path, entry_kind::module, key_of(0))) != std::string::npos);

  r = run_tool(root + "verify");
  CHECK(r.status == 0);
  CHECK(r.output.find("6 entries checked, 0 bad, 0 removed") != std::string::npos);

  // One flipped byte and a directory in an entry's place.
  std::string flipped = entry_path(dir.path, entry_kind::kernel, key_of(2));
  {
    std::fstream f(flipped, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(500);
    f.put('\x5a');
  }
  std::string blocked = entry_path(dir.path, entry_kind::kernel, key_of(99));
  std::filesystem::create_directories(blocked);
  r = run_tool(root + "verify");
  CHECK(r.status == 1);
  CHECK(r.output.find("bad      " + flipped + ": payload checksum mismatch") != std::string::npos);
  CHECK(r.output.find("bad      " + blocked + ": a directory") != std::string::npos);
  CHECK(r.output.find("7 entries checked, 2 bad, 0 removed") != std::string::npos);
  CHECK(std::filesystem::exists(flipped));
  r = run_tool(root + "verify --fix");
  CHECK(r.status == 0);
  CHECK(r.output.find("7 entries checked, 2 bad, 2 removed") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(flipped));
  CHECK_FALSE(std::filesystem::exists(blocked));
  r = run_tool(root + "verify");
  CHECK(r.status == 0);
  CHECK(r.output.find("5 entries checked, 0 bad") != std::string::npos);

  // Entry i was last used 3 days - 12 h * i ago: 0 and 1 are older than 2 days.
  r = run_tool(root + "clean --older-than 2d");
  CHECK(r.status == 0);
  CHECK(r.output.find("removed 2 entries") != std::string::npos);
  CHECK(list_entries(dir.path).size() == 3);
  r = run_tool(root + "clean --to-size 2.1K");  // 2150 bytes hold two 1064-byte entries
  CHECK(r.status == 0);
  CHECK(r.output.find("removed 1 entry (") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(entry_path(dir.path, entry_kind::offload, key_of(3))));
  CHECK(std::filesystem::exists(entry_path(dir.path, entry_kind::offload, key_of(5))));
  r = run_tool(root + "clean");
  CHECK(r.status == 0);
  CHECK(r.output.find("removed 2 entries") != std::string::npos);
  CHECK(list_entries(dir.path).empty());
  r = run_tool(root + "stats");
  CHECK(row(r.output, "total").at(1) == "0");

  // The store keeps working on the cleaned root.
  CHECK(s.save(entry_kind::kernel, key_of(7), qd_test::random_payload(10, 7)));
  CHECK(s.load(entry_kind::kernel, key_of(7)));
}

TEST_CASE("qd-cache verify applies the store's trust checks to the directories and --fix repairs them") {
  temp_dir dir;
  const std::string root = "--root '" + dir.path + "' ";
  {
    store s({.root = dir.path});
    REQUIRE(s.save(entry_kind::kernel, key_of(1), qd_test::random_payload(100, 1)));
  }
  // A root anyone may write (a program refuses the whole cache) and a file where a kind
  // directory belongs: every entry was valid, and verify used to call this cache clean.
  REQUIRE(::chmod(dir.path.c_str(), 0777) == 0);
  std::filesystem::remove_all(dir.path + "/offload");
  std::ofstream(dir.path + "/offload") << "x";
  tool_result r = run_tool(root + "verify");
  CHECK(r.status == 1);
  CHECK(r.output.find("bad      " + dir.path + ": untrusted: it is writable by group or others (mode 0777)") !=
        std::string::npos);
  CHECK(r.output.find("bad      " + dir.path + "/offload: a file where the offload directory belongs") !=
        std::string::npos);
  CHECK(r.output.find("2 problems with the cache directory remain") != std::string::npos);
  r = run_tool(root + "verify --fix");
  CHECK(r.status == 0);
  CHECK(r.output.find("fixed    " + dir.path + ": untrusted") != std::string::npos);
  CHECK(r.output.find("fixed    " + dir.path + "/offload: a file") != std::string::npos);
  r = run_tool(root + "verify");
  CHECK(r.status == 0);
  CHECK(r.output.find("1 entry checked, 0 bad, 0 removed") != std::string::npos);
  CHECK(store({.root = dir.path}).load(entry_kind::kernel, key_of(1)));  // a program trusts it again
  // A directory that is not a cache is reported as such.
  temp_dir other;
  std::ofstream(other.path + "/thesis.tex") << "x";
  r = run_tool("--root '" + other.path + "' verify --fix");
  CHECK(r.status == 1);
  CHECK(r.output.find("not a Quadrants cache directory") != std::string::npos);
  CHECK(std::filesystem::exists(other.path + "/thesis.tex"));
}

TEST_CASE("qd-cache reports misuse with exit status 2 and copes with a missing root") {
  temp_dir dir;
  const std::string root = "--root '" + dir.path + "/none' ";
  CHECK(run_tool(root + "frobnicate").status == 2);
  CHECK(run_tool("").status == 2);
  CHECK(run_tool(root + "clean --to-size banana").status == 2);
  CHECK(run_tool(root + "clean --older-than 7").status == 2);
  CHECK(run_tool(root + "verify --force").status == 2);
  CHECK(run_tool("--root").status == 2);
  CHECK(run_tool("--help").status == 0);
  tool_result r = run_tool(root + "stats");
  CHECK(r.status == 0);
  CHECK(row(r.output, "total").at(1) == "0");
  CHECK(run_tool(root + "verify").status == 0);
  CHECK(run_tool(root + "clean").status == 0);
  CHECK_FALSE(std::filesystem::exists(dir.path + "/none"));  // inspecting creates nothing
}
