// kernel.explain() and kernel.dot() (issue 14): constructs with their source
// lines, what each recomputes or reads from the persisted buffer, the decision and the
// run-time checks; the DOT form renders with Graphviz.
// Cases below check source lines by number (__LINE__ + n), so their layout stays as written:
// clang-format off
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <quadrants/quadrants.hpp>

#include "support/fresh_dir.hpp"

namespace {

std::string at(int line) { return std::string(__FILE__) + ":" + std::to_string(line); }
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("explain names each construct by its line, what it recomputes and what it reads from the persisted buffer") {
  const int line = __LINE__ + 2;
  auto k = qd::kernel("stale_snapshot", {"a", "out"}, [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> out) {
    qd::f32 v = a[0];
    qd::range_for(a.shape(0), [&](qd::i32 i) { a[i] = 5.0f; });
    qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = v; });
  });
  const std::string text = k.explain();
  MESSAGE(text);
  CHECK(has(text, "kernel 'stale_snapshot': 2 constructs\n"));
  CHECK(has(text, "construct 1 (the loop at " + at(line + 1) + ")\n    recomputes: a.shape(0)\n"));
  CHECK(has(text, "construct 2 (the loop at " + at(line + 2) + ")"));
  CHECK(has(text, "recomputes: out.shape(0)\n"));
  CHECK(has(text, "reads from the persisted buffer: a[0] at " + at(line)));
  CHECK(has(text, "computed once and persisted: a[0] at " + at(line)));
  CHECK_FALSE(has(text, "constant"));
  CHECK(has(text, "decision: splits"));
  CHECK_FALSE(has(text, "in this program"));  // not compiled yet (no qd::init needed)
}

TEST_CASE("explain and dot show a reduction flowing to a later construct, and a serialized loop by its own lines") {
  const int line = __LINE__ + 2;
  auto k = qd::kernel("normalise", {"x", "y"}, [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y) {
    qd::var<float> total = 0.0f;
    qd::range_for(x.shape(0), [&](qd::i32 i) { total += x[i]; });
    qd::range_for(y.shape(0), [&](qd::i32 i) { y[i] = x[i] / total; });
  });
  const std::string text = k.explain();
  MESSAGE(text);
  const std::string var = "the qd::var declared at " + at(line);
  CHECK(has(text, "construct 1 (the loop at " + at(line + 1) + ")"));
  CHECK(has(text, "reduces into " + var + " in the persisted buffer, read by construct 2 (the loop at " +
                      at(line + 2) + ")"));
  CHECK(has(text, "reads " + var + " from the persisted buffer, reduced by construct 1 (the loop at " + at(line + 1) +
                      ")"));
  const std::string dot = k.dot();
  CHECK(has(dot, "label=\"" + var + "\""));
  CHECK(has(dot, "c0 -> v"));
  CHECK(has(dot, "label=\"reduces into\""));

  const int serial_line = __LINE__ + 2;
  auto s = qd::kernel("doubling", {"x"}, [](qd::types::ndarray<float, 1> x) {
    qd::var<float> a = 1.0f;
    qd::range_for(x.shape(0), qd::loop_config{.serialize = true}, [&](qd::i32 i) {
      x[i] = a;
      a *= 2.0f;
    });
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] += 1.0f; });
  });
  const std::string serial = s.explain();
  MESSAGE(serial);
  CHECK(has(serial, "construct 1 (the serial loop at " + at(serial_line + 1) + ")\n"));
  CHECK(has(serial, "statements at " + at(serial_line) + " " + at(serial_line + 1) + "\n"));
  CHECK_FALSE(has(serial, "statements at " + at(serial_line) + " " + at(serial_line + 1) + " "));  // not the next loop's line
  CHECK(has(serial, "construct 2 (the loop at " + at(serial_line + 5) + ")"));
}

TEST_CASE("explain lists the run-time checks and says which variant the running program uses") {
  qd_test::fresh_dir dir("explain");
  qd::init({.arch = qd::arch::cpu, .offline_cache_file_path = dir.str()});
  const int line = __LINE__ + 3;
  auto k = qd::kernel("two_params", {"a", "b", "out"},
                      [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> b, qd::types::ndarray<float, 1> out) {
                        qd::f32 v = a[0];
                        qd::range_for(b.shape(0), [&](qd::i32 i) { b[i] = 2.0f; });
                        qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = v + b[i]; });
                      });
  qd::ndarray<float, 1> a(2), b(2), out(2);
  k(a, b, out);
  const std::string text = k.explain();
  MESSAGE(text);
  CHECK(has(text, "recomputes: a[0] at " + at(line)));
  CHECK(has(text, "decision: splits: 2 tasks"));
  CHECK(has(text, "checked before each split launch: 'a' and 'b' must not overlap"));
  CHECK(has(text, "in this program: whole kernel: policy_backend"));
  qd::reset();
}

TEST_CASE("dot renders with Graphviz") {
  auto k = qd::kernel("graph \"quoted\"", {"a", "out"}, [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> out) {
    qd::f32 v = a[0];
    qd::range_for(a.shape(0), [&](qd::i32 i) { a[i] = 5.0f; });
    qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = v; });
  });
  const std::string dot = k.dot();
  CHECK(dot.starts_with("digraph"));
  CHECK(has(dot, "persisted"));
  CHECK(has(dot, "recomputed"));
  if (std::system("command -v dot > /dev/null 2>&1") != 0) {
    MESSAGE("skipped: Graphviz's dot is not installed (scripts/install-deps installs it)");
    return;
  }
  qd_test::fresh_dir dir("dot");
  const auto in = dir.path() / "k.dot", out = dir.path() / "k.svg";
  std::ofstream(in) << dot;
  const std::string command = "dot -Tsvg '" + in.string() + "' -o '" + out.string() + "'";
  REQUIRE(std::system(command.c_str()) == 0);
  std::ifstream svg(out);
  std::string content((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  CHECK(has(content, "<svg"));
  CHECK(has(content, "construct 2"));
}

#ifdef QD_CACHE_TOOL  // built with the qd-cache tool (QD_BUILD_TOOLS)
namespace {

struct tool_output {
  int status = -1;
  std::string text;
};

// Runs `qd-cache <args>` (stdout and stderr together).
tool_output qd_cache(const std::string& root, const std::string& args) {
  std::string command = "'";
  command += QD_CACHE_TOOL;
  command += "' --root '";
  command += root;
  command += "' ";
  command += args;
  command += " 2>&1";
  tool_output r;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe);
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) r.text.append(buffer, n);
  const int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The keys after "cached as N records (<variant>):" in qd-cache explain's output: the
// first such line, or the one of `variant`.
std::vector<std::string> listed_keys(const std::string& text, const std::string& variant = "") {
  std::vector<std::string> keys;
  const std::size_t at_line = text.find(variant.empty() ? "cached as " : "(" + variant + "):");
  if (at_line == std::string::npos) return keys;
  const std::size_t colon = text.find(':', at_line);
  std::istringstream in(text.substr(colon + 1, text.find('\n', at_line) - colon - 1));
  for (std::string k; in >> k;) keys.push_back(k);
  return keys;
}

bool entry_exists(const std::string& root, const char* kind, const std::string& key) {
  return std::filesystem::exists(std::filesystem::path(root) / kind / (key + ".qdc"));
}

}  // namespace

TEST_CASE("qd-cache explain prints a cached kernel's explanation, by name or by the key of one of its entries") {
  qd_test::fresh_dir dir("qd-cache-explain");
  const std::string root = dir.str();
  qd::init({.arch = qd::arch::cpu, .offline_cache_file_path = root, .per_offload = qd::per_offload_mode::on});
  auto k = qd::kernel("cached_snapshot", {"a", "out"}, [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> out) {
    qd::f32 v = a[0];
    qd::range_for(a.shape(0), [&](qd::i32 i) { a[i] = 5.0f; });
    qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = v; });
  });
  qd::ndarray<float, 1> a(4), out(4);
  k(a, out);
  const std::string in_process = k.explain();
  qd::reset();

  const tool_output by_name = qd_cache(root, "explain cached_snapshot");
  MESSAGE(by_name.text);
  REQUIRE(by_name.status == 0);
  // The stored text is kernel.explain() as the compiling process saw it.
  CHECK(by_name.text.starts_with(in_process));
  CHECK(has(by_name.text, "kernel 'cached_snapshot': 2 constructs\n"));
  CHECK(has(by_name.text, "decision: splits"));
  // It lists the split's offload records, each an entry of the cache.
  const std::vector<std::string> keys = listed_keys(by_name.text);
  REQUIRE(keys.size() >= 2);
  for (const std::string& key : keys) {
    CAPTURE(key);
    CHECK(std::filesystem::exists(std::filesystem::path(root) / "offload" / (key + ".qdc")));
  }
  // Found again by any of those keys, and as a graph.
  const tool_output by_key = qd_cache(root, "explain " + keys.back());
  CHECK(by_key.status == 0);
  CHECK(by_key.text == by_name.text);
  const tool_output dot = qd_cache(root, "explain --dot cached_snapshot");
  CHECK(dot.status == 0);
  CHECK(dot.text.starts_with("digraph"));
  // A kernel the cache does not hold, and misuse.
  const tool_output missing = qd_cache(root, "explain no_such_kernel");
  CHECK(missing.status == 1);
  CHECK(has(missing.text, "no kernel named or keyed 'no_such_kernel'"));
  CHECK(qd_cache(root, "explain").status == 2);
  CHECK(qd_cache(root, "explain a b").status == 2);
  // The explanation entries are entries like the others: stats counts them, verify accepts them.
  const tool_output stats = qd_cache(root, "stats");
  CHECK(has(stats.text, "explain"));
  CHECK(qd_cache(root, "verify").status == 0);
}

TEST_CASE("qd-cache explain keeps the records of every variant compiled: print_ir's and coverage's whole kernel, "
          "then the split") {
  qd_test::fresh_dir dir("qd-cache-explain-variants");
  const std::string root = (dir.path() / "cache").string();
  ::setenv("QD_KERNEL_COVERAGE_FILE", (dir.path() / "coverage.info").c_str(), 1);
  auto k = qd::kernel("three_ways", {"a", "out"}, [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> out) {
    qd::range_for(a.shape(0), [&](qd::i32 i) { a[i] = 2.0f; });
    qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = 3.0f; });
  });
  const qd::config base{.arch = qd::arch::cpu, .offline_cache_file_path = root, .per_offload = qd::per_offload_mode::on};
  // A diagnostic run keeps the kernel whole and compiles that variant, then a normal run splits it.
  qd::config dump = base;
  dump.debug_dump_path = (dir.path() / "dump").string();
  dump.print_ir = true;
  qd::config coverage = base;
  coverage.kernel_coverage = true;
  for (const qd::config& c : {dump, coverage, base}) {
    qd::init(c);
    qd::ndarray<float, 1> a(4), out(4);
    k(a, out);
    CHECK(out.to_host()[0] == 3.0f);
    CHECK(k.per_offload_cache_observations().constructs_compiled == 2);
    qd::reset();
  }
  ::unsetenv("QD_KERNEL_COVERAGE_FILE");

  const tool_output shown = qd_cache(root, "explain three_ways");
  MESSAGE(shown.text);
  REQUIRE(shown.status == 0);
  // One kernel, its newest explanation (the split run's) once, and the records of all three variants.
  CHECK(has(shown.text, "kernel 'three_ways': 2 constructs\n"));
  CHECK(shown.text.find("kernel 'three_ways'") == shown.text.rfind("kernel 'three_ways'"));
  CHECK(has(shown.text, "in this program: split (per-offload)"));
  const std::vector<std::string> whole = listed_keys(shown.text, "whole");
  const std::vector<std::string> with_probes = listed_keys(shown.text, "coverage");
  const std::vector<std::string> split = listed_keys(shown.text, "split");
  REQUIRE(whole.size() == 1);
  REQUIRE(with_probes.size() == 1);
  REQUIRE(split.size() == 2);
  CHECK(entry_exists(root, "kernel", whole[0]));
  CHECK(entry_exists(root, "kernel", with_probes[0]));
  CHECK(whole[0] != with_probes[0]);  // the probes are other IR, so another kernel record
  for (const std::string& key : split) CHECK(entry_exists(root, "offload", key));
  // Found by any record's key, and by an offload's entry point as a profiler names it.
  CHECK(qd_cache(root, "explain " + whole[0]).text == shown.text);
  CHECK(qd_cache(root, "explain qd_o" + split[1]).text == shown.text);
}
#endif
