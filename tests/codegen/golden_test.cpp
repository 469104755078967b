// Golden text of lowering and code generation: each task's lowered IR and generated
// C++, in both variants, for a few kernels, compared with the reviewed files in
// tests/codegen/golden/. After an intended change, review the diff, then rewrite the
// files with QD_UPDATE_GOLDEN=1 (docs/testing.md); never regenerate blindly.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "ir/ir_fixtures.hpp"
#include "quadrants/analysis/split.hpp"
#include "quadrants/analysis/task_plan.hpp"
#include "quadrants/codegen/cpp_emitter.hpp"
#include "quadrants/codegen/lower.hpp"
#include "quadrants/ir/dce.hpp"
#include "quadrants/ir/printer.hpp"
#include "quadrants/lang/kernel_signature.hpp"
#include "quadrants/quadrants.hpp"

using namespace qd;

namespace {

template <class F>
ir::function trace_ir(const F& body) {
  detail::tracer t("golden", {});
  detail::trace_kernel(body, t);
  ir::eliminate_dead_code(t.fn);
  return std::move(t.fn);
}

std::string tasks_text(const ir::function& fn, const analysis::kernel_structure& s, const analysis::task_plan& plan,
                       std::string_view variant, bool bounds_checks) {
  std::string out;
  for (std::size_t k = 0; k < plan.tasks.size(); ++k) {
    codegen::lowered_task t = codegen::lower_task(fn, s, plan.tasks[k], plan);
    codegen::verify(t);
    std::string entry = std::string(variant) + "_task" + std::to_string(k);
    out += "== " + std::string(variant) + " task " + std::to_string(k) + (t.parallel ? " (parallel)" : " (serial)") +
           ", construct " + std::to_string(t.construct) + "\n";
    out += "-- lowered IR\n" + ir::to_text(t.fn, {.locations = false});  // lines move with edits
    out += "-- C++\n" + codegen::emit_task(t, entry, {bounds_checks});
  }
  return out;
}

// Both variants of `fn`: the whole kernel's tasks, and the split's or its fallback.
std::string golden_text(const ir::function& fn, bool bounds_checks = false) {
  analysis::kernel_structure s = analysis::analyze_structure(fn);
  std::string out = "== traced IR\n" + ir::to_text(fn, {.locations = false});
  out += tasks_text(fn, s, analysis::plan_whole_kernel(fn, s), "whole", bounds_checks);
  analysis::split_decision d = analysis::plan_split(fn, s);
  if (d.reason == fallback_reason::none)
    out += tasks_text(fn, s, d.plan, "split", bounds_checks);
  else
    out += "== split: falls back (" + std::string(name(d.reason)) + ")\n";
  return out;
}

void check_golden(const std::string& file, const std::string& got) {
  const std::string path = std::string(QD_GOLDEN_DIR) + "/" + file;
  if (const char* update = std::getenv("QD_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << got;
    MESSAGE("rewrote " << path);
    return;
  }
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing golden file " << path << "; create it with QD_UPDATE_GOLDEN=1 and review it");
  std::stringstream want;
  want << in.rdbuf();
  if (want.str() == got) return;
  std::istringstream a(want.str()), b(got);
  std::string la, lb;
  int line = 1;
  while (std::getline(a, la) && std::getline(b, lb) && la == lb) ++line;
  FAIL_CHECK(path << " differs at line " << line << ":\n  golden:    " << la << "\n  generated: " << lb
                  << "\nReview the change, then rerun with QD_UPDATE_GOLDEN=1.");
}

}  // namespace

TEST_CASE("golden: the seed's running_total: a reduction in temporaries, whole and split (persisted buffer)") {
  check_golden("running_total.txt", golden_text(test::running_total_ir()));
}

TEST_CASE("golden: the seed's stale_snapshot: a serial task publishes the snapshot, whole and split") {
  check_golden("stale_snapshot.txt", golden_text(test::stale_snapshot_ir()));
}

TEST_CASE("golden: saxpy with a scalar and recomputed bounds splits into one offload") {
  check_golden("saxpy.txt",
               golden_text(trace_ir([](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y, qd::f32 a) {
                 qd::range_for(x.shape(0), [&](qd::i32 i) { y[i] = a * x[i] + y[i]; });
               })));
}

TEST_CASE("golden: a 2-D stencil with clamped reads, bounds checks on") {
  check_golden("stencil_checked.txt",
               golden_text(trace_ir([](qd::types::ndarray<float, 2> u, qd::types::ndarray<float, 2> out) {
                             qd::range_for(qd::ndrange(u.shape(0), u.shape(1)), [&](qd::i32 i, qd::i32 j) {
                               out(i, j) =
                                   0.25f * (u.at(i - 1, j, qd::boundary::clamp) + u.at(i + 1, j, qd::boundary::clamp) +
                                            u.at(i, j - 1, qd::boundary::clamp) + u.at(i, j + 1, qd::boundary::clamp));
                             });
                           }),
                           true));
}

TEST_CASE("golden: serial control flow, atomics, a reduction, random draws and print") {
  check_golden("statements.txt",
               golden_text(trace_ir([](qd::types::ndarray<std::int32_t, 1> x, qd::types::ndarray<float, 1> y,
                                       qd::types::ndarray<std::int32_t, 0> count) {
                 qd::var<std::int32_t> n = x.shape(0);
                 qd::while_([&] { return n > 3; }, [&] { n -= 2; });
                 qd::if_(n == 3, [&] { count() = n; }).else_([&] { count() = -n; });
                 qd::range_for(x.shape(0), [&](qd::i32 i) {
                   qd::if_(x[i] % 2 == 0, [&] { qd::atomic_add(count(), 1); });
                   y[i] = qd::random<float>() + qd::cast<float>(x[i]);
                 });
                 qd::range_for(1, [&](qd::i32) { qd::print("count", count()); });
               })));
}
