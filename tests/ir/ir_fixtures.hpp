// Hand-built IR shared by the ir and analysis tests; constexpr so static_assert can use it.
#pragma once

#include <array>

#include "quadrants/ir/builder.hpp"
#include "support/constexpr_check.hpp"

namespace qd::test {

// A top-level loop over the 1-D array parameter `out` storing `value`, a node defined
// before the loop, in every element.
constexpr void fill_loop(ir::function& fn, ir::builder& b, std::int32_t out, ir::id value) {
  ir::id loop = b.range_for(b.constant_int(dtype::i32, 0), b.shape(out, 0));
  b.push_block(fn.at(loop).block0);
  std::array<ir::id, 1> j{b.loop_index_of(loop)};
  b.global_store(out, 0, j, value);
  b.pop_block();
}

// The seed's running_total: total reduced in loop 1, read by loop 2.
constexpr ir::function running_total_ir(float init = 0.0f) {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::f32, 1, false});  // x
  b.add_param({true, dtype::f32, 1, false});  // out
  ir::id total = b.local_decl(dtype::f32, b.constant_float(dtype::f32, init));
  ir::id loop1 = b.range_for(b.constant_int(dtype::i32, 0), b.shape(0, 0));
  b.push_block(fn.at(loop1).block0);
  ir::id i = b.loop_index_of(loop1);
  std::array<ir::id, 1> idx{i};
  b.local_atomic(ir::atomic_op::add, total, b.global_load(0, 0, idx));
  b.pop_block();
  ir::id loop2 = b.range_for(b.constant_int(dtype::i32, 0), b.shape(1, 0));
  b.push_block(fn.at(loop2).block0);
  std::array<ir::id, 1> jdx{b.loop_index_of(loop2)};
  b.global_store(1, 0, jdx, b.local_load(total));  // the load inside loop 2
  b.pop_block();
  return fn;
}

// The seed's stale_snapshot: a[0] read at the top level, a overwritten, the snapshot stored to out.
constexpr ir::function stale_snapshot_ir(std::uint8_t read_flags = 0) {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::f32, 1, false});  // a
  b.add_param({true, dtype::f32, 1, false});  // out
  std::array<ir::id, 1> zero{b.constant_int(dtype::i32, 0)};
  ir::id first = b.global_load(0, read_flags, zero);
  ir::id loop1 = b.range_for(b.constant_int(dtype::i32, 0), b.shape(0, 0));
  b.push_block(fn.at(loop1).block0);
  std::array<ir::id, 1> i{b.loop_index_of(loop1)};
  b.global_store(0, 0, i, b.constant_float(dtype::f32, 0.0));
  b.pop_block();
  fill_loop(fn, b, 1, first);
  return fn;
}

}  // namespace qd::test
