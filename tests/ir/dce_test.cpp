// Dead-code elimination keeps everything observable and removes the rest.
#include <doctest/doctest.h>

#include "ir/ir_fixtures.hpp"
#include "quadrants/ir/dce.hpp"
#include "quadrants/ir/walk.hpp"

using namespace qd;

namespace {
constexpr int reachable(const ir::function& fn) {
  int n = 0;
  ir::walk(fn, 0, [&](ir::id, int) { ++n; });
  return n;
}
constexpr int after_dce(ir::function fn) {
  ir::eliminate_dead_code(fn);
  return reachable(fn);
}
}  // namespace

// Nothing in running_total is dead: every statement leads to the store.
QD_CONSTEXPR_CHECK(after_dce(test::running_total_ir()) == reachable(test::running_total_ir()));

TEST_CASE("an unused load, an unused variable and an empty loop disappear") {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::f32, 1, false});
  std::array<ir::id, 1> zero{b.constant_int(dtype::i32, 0)};
  b.global_load(0, 0, zero);  // unused
  ir::id v = b.local_decl(dtype::f32, b.constant_float(dtype::f32, 1.0));
  b.local_store(v, b.constant_float(dtype::f32, 2.0));  // a variable nobody reads
  ir::id loop = b.range_for(b.constant_int(dtype::i32, 0), b.shape(0, 0));
  b.push_block(fn.at(loop).block0);
  b.binary(ir::binary_op::add, dtype::i32, b.loop_index_of(loop), b.constant_int(dtype::i32, 1));
  b.pop_block();
  ir::eliminate_dead_code(fn);
  CHECK(reachable(fn) == 0);
}

TEST_CASE("volatile loads, prints, stores and atomics stay, with what they need") {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::i32, 1, false});
  std::array<ir::id, 1> zero{b.constant_int(dtype::i32, 0)};
  b.global_load(0, ir::access::is_volatile, zero);
  ir::id v = b.local_decl(dtype::i32, b.constant_int(dtype::i32, 1));
  b.print({b.local_load(v)});
  b.global_atomic(ir::atomic_op::add, 0, 0, zero, b.constant_int(dtype::i32, 3));
  ir::function before = fn;
  ir::eliminate_dead_code(fn);
  CHECK(reachable(fn) == reachable(before));
}

TEST_CASE("a conditional store keeps its if and condition; a variable's stores live with its reads") {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::i32, 1, false});
  std::array<ir::id, 1> zero{b.constant_int(dtype::i32, 0)};
  ir::id v = b.local_decl(dtype::i32, b.constant_int(dtype::i32, 0));
  ir::id cond = b.binary(ir::binary_op::gt, dtype::boolean, b.shape(0, 0), b.constant_int(dtype::i32, 4));
  ir::id branch = b.if_(cond);
  b.push_block(fn.at(branch).block0);
  b.local_store(v, b.constant_int(dtype::i32, 9));
  b.pop_block();
  b.global_store(0, 0, zero, b.local_load(v));
  ir::function before = fn;
  ir::eliminate_dead_code(fn);
  CHECK(reachable(fn) == reachable(before));
  CHECK(fn.block(fn.at(branch).block0).size() == 2);
}
