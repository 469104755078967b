// Source locations (SPEC §11.8, issue 14): every DSL statement records the user's file and
// line; kernel.ir(), fallback details, bounds errors and trace errors name them, and cache
// keys do not change when code moves.
// Cases below check source lines by number (__LINE__ + n), so their layout stays as written:
// clang-format off
#include <doctest/doctest.h>

#include <string>

#include <quadrants/quadrants.hpp>

#include "quadrants/runtime/pipeline/kernel_state.hpp"
#include "quadrants/runtime/pipeline/variant_choice.hpp"
#include "support/fresh_dir.hpp"
#include "support/log_capture.hpp"

using doctest::Contains;

namespace {

std::string at(int line) { return std::string(__FILE__) + ":" + std::to_string(line); }

// The kernel state behind a lambda, traced, for calling the analysis' message helpers.
template <class F>
std::shared_ptr<qd::detail::kernel_state> traced(std::string name, std::vector<std::string> params, F body) {
  auto k = qd::detail::make_kernel_state(std::move(name), std::move(params), qd::detail::parameter_descs<F>(),
                                         [body](qd::detail::tracer& t) { qd::detail::trace_kernel(body, t); });
  qd::detail::ensure_traced(*k);
  return k;
}

qd::ir::id find_node(const qd::ir::function& fn, qd::ir::op code, bool top_level) {
  for (std::size_t i = 0; i < fn.nodes.size(); ++i)
    if (fn.nodes[i].code == code && fn.is_top_level(static_cast<qd::ir::id>(i)) == top_level)
      return static_cast<qd::ir::id>(i);
  return qd::ir::none;
}

}  // namespace

TEST_CASE("kernel.ir() names the user's file and line of each statement") {
  const int first = __LINE__ + 2;
  auto k = qd::kernel("lines", {"a", "out"}, [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> out) {
    qd::var<float> total = 0.0f;
    qd::range_for(a.shape(0), [&](qd::i32 i) {
      total += a[i];
    });
    qd::if_(total > 1.0f, [&] { out[0] = total; }).else_([&] { out[0] = 0.0f; });
  });
  const std::string ir = k.ir();
  for (int line : {first, first + 1, first + 2, first + 4}) CHECK_MESSAGE(ir.find("@ " + at(line)) != std::string::npos, ir);
}

TEST_CASE("fallback details name the re-read, the loop that overwrites it, and the construct, by file and line") {
  const int line = __LINE__ + 2;
  auto k = traced("stale", {"a", "out"}, [](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> out) {
    qd::f32 v = a[0];
    qd::range_for(a.shape(0), [&](qd::i32 i) { a[i] = 5.0f; });
    qd::range_for(out.shape(0), [&](qd::i32 i) { out[i] = v; });
  });
  qd::analysis::split_decision d;
  d.reason = qd::fallback_reason::stale_reread;
  d.read = find_node(k->ir, qd::ir::op::global_load, true);
  d.write = find_node(k->ir, qd::ir::op::global_store, false);
  d.construct = 1;
  d.other_construct = 0;
  REQUIRE(d.read != qd::ir::none);
  CHECK(qd::detail::fallback_detail(*k, d) ==
        "a[0] read at " + at(line) + " is overwritten by the loop at " + at(line + 1) +
            " (construct 1) before construct 2 (the loop at " + at(line + 2) + ") re-reads it");
  d.reason = qd::fallback_reason::side_effect;
  const qd::ir::id loop = find_node(k->ir, qd::ir::op::range_for, true);
  for (std::size_t st = 0; st < k->structure.statements.size(); ++st)
    if (k->structure.statements[st].node == loop) d.statement = static_cast<std::int32_t>(st);
  CHECK(qd::detail::fallback_detail(*k, d) ==
        "construct 2 (the loop at " + at(line + 2) + ") would recompute a global store at " + at(line + 1));
  d.reason = qd::fallback_reason::carried_value;
  CHECK(qd::detail::fallback_detail(*k, d) == "construct 2 (the loop at " + at(line + 2) +
                                                  ") needs a top-level value produced or modified inside construct 1 "
                                                  "(the loop at " + at(line + 1) + ")");
}

TEST_CASE("a bounds error names the construct and the lines that access the array") {
  qd_test::fresh_dir dir("loc-bounds");
  for (qd::arch arch : {qd::arch::cpu, qd::arch::reference}) {
    qd::init({.arch = arch, .offline_cache_file_path = dir.str(), .check_out_of_bound = true});
    const int line = __LINE__ + 2;
    auto k = qd::kernel("off_by_one", {"x"}, [](qd::types::ndarray<float, 1> x) {
      qd::range_for(x.shape(0), [&](qd::i32 i) {
        x[i + 1] = 1.0f;
      });
    });
    qd::ndarray<float, 1> x(4);
    const std::string expected = "index 4 is out of range for dimension 0 (extent 4) in construct 1 (the loop at " +
                                 at(line) + "); x is accessed there at " + at(line + 1);
    CHECK_THROWS_WITH_AS(k(x), Contains(expected.c_str()), qd::user_error);
    qd::reset();
  }
}

TEST_CASE("a trace error starts with the file and line of the statement") {
  qd::init({.arch = qd::arch::reference});
  const int line = __LINE__ + 2;
  auto k = qd::kernel("too_long", [](qd::types::ndarray<float, 1> x) {
    qd::range_for(std::int64_t{5000000000}, [&](qd::i32 i) { x[i] = 1.0f; });
  });
  qd::ndarray<float, 1> x(4);
  const std::string expected = at(line) + ": kernel 'too_long': a qd::range_for bound of 5000000000";
  CHECK_THROWS_WITH_AS(k(x), Contains(expected.c_str()), qd::user_error);
  qd::reset();
}

// The same two constructs, written on different lines by two kernels of different names.
auto first_place() {
  return qd::kernel("first", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 2.0f; });
    qd::range_for(y.shape(0), [&](qd::i32 i) { y[i] = x[i] + 1.0f; });
  });
}



auto moved_down() {
  return qd::kernel("moved", [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y) {

    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 2.0f; });


    qd::range_for(y.shape(0), [&](qd::i32 i) {
      y[i] = x[i] + 1.0f;
    });
  });
}

TEST_CASE("moving code keeps every cache key: a second process loads the moved kernel's constructs") {
  qd_test::fresh_dir dir("loc-keys");
  for (qd::per_offload_mode mode : {qd::per_offload_mode::on, qd::per_offload_mode::off}) {
    qd::init({.arch = qd::arch::cpu, .offline_cache_file_path = dir.str(), .per_offload = mode});
    auto a = first_place();
    qd::ndarray<float, 1> x(3), y(3);
    a(x, y);
    CHECK(a.per_offload_cache_observations().constructs_compiled == 2);
    qd::reset();
    qd::init({.arch = qd::arch::cpu, .offline_cache_file_path = dir.str(), .per_offload = mode});
    auto b = moved_down();
    CHECK(a.ir() != b.ir());  // the text names different lines
    qd::ndarray<float, 1> x2(3), y2(3);
    b(x2, y2);
    CHECK(y2.to_host()[1] == 3.0f);
    const auto o = b.per_offload_cache_observations();
    CHECK(o.constructs_compiled == 0);
    CHECK(o.constructs_loaded == 2);
    qd::reset();
  }
}
