// kernel.explain() and kernel.dot() (SPEC §11.8, issue 14): constructs with their source
// lines, what each recomputes or reads from the persisted buffer, the decision and the
// run-time checks; the DOT form renders with Graphviz.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

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
