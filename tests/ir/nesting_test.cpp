// Nesting depth: measured without recursion, and IR nested far past the tracer's limit
// walked, numbered, serialized and cleaned of dead code without exhausting the stack.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <span>

#include "quadrants/ir/builder.hpp"
#include "quadrants/ir/dce.hpp"
#include "quadrants/ir/nesting.hpp"
#include "quadrants/ir/serialize.hpp"
#include "quadrants/ir/walk.hpp"

using namespace qd;

namespace {

// `levels` nested ifs (or rank-`rank` loops when rank > 0) around one store x[0] = 1.
ir::function nested(int levels, int rank = 0) {
  ir::function fn;
  ir::builder b(fn);
  b.add_param({true, dtype::i32, 1, false});
  for (int l = 0; l < levels; ++l) {
    ir::id owner = 0;
    if (rank == 0) {
      owner = b.if_(
          b.binary(ir::binary_op::lt, dtype::boolean, b.constant_int(dtype::i32, 0), b.constant_int(dtype::i32, 1)));
    } else {
      std::array<ir::id, 4> extents{};
      for (int d = 0; d < rank; ++d) extents[static_cast<std::size_t>(d)] = b.constant_int(dtype::i32, 1);
      owner = b.range_for_nd(std::span<const ir::id>(extents.data(), static_cast<std::size_t>(rank)));
    }
    b.push_block(fn.at(owner).block0);
  }
  std::array<ir::id, 1> zero{b.constant_int(dtype::i32, 0)};
  b.global_store(0, 0, zero, b.constant_int(dtype::i32, 1));
  return fn;
}

constexpr int depth_of_small_nest() {
  ir::function fn;
  ir::builder b(fn);
  ir::id outer = b.if_(b.constant_int(dtype::boolean, 1));
  b.push_block(fn.at(outer).block1);  // the else body is one level too
  ir::id inner = b.while_();
  b.push_block(fn.at(inner).block1);
  std::array<ir::id, 2> extents{b.constant_int(dtype::i32, 2), b.constant_int(dtype::i32, 3)};
  b.range_for_nd(extents);
  return ir::nesting_depth(fn);
}

}  // namespace

// if (1), its else, a while, then a 2-D loop: 1 + 1 + 2.
static_assert(depth_of_small_nest() == 4);

TEST_CASE("the nesting depth counts each body once and each loop dimension") {
  CHECK(ir::nesting_depth(nested(0)) == 0);
  CHECK(ir::nesting_depth(nested(7)) == 7);
  CHECK(ir::nesting_depth(nested(5, 3)) == 15);
  CHECK(ir::nesting_depth(nested(ir::max_nesting_depth)) == ir::max_nesting_depth);
}

TEST_CASE("IR nested 200,000 levels deep is walked, serialized and cleaned without recursion") {
  const int levels = 200000;  // a recursive walk needed more than the 8 MiB main stack
  ir::function fn = nested(levels);
  CHECK(ir::nesting_depth(fn) == levels);
  int visited = 0, deepest = 0;
  ir::walk(fn, 0, [&](ir::id, int depth) {
    ++visited;
    deepest = std::max(deepest, depth);
  });
  CHECK(deepest == levels);
  CHECK(visited == 4 * levels + 3);  // per level: two constants, the compare, the if; then two constants and the store
  const auto numbers = ir::canonical_numbering(fn);
  CHECK(numbers[static_cast<std::size_t>(fn.block(0).front())] == 0);
  CHECK(ir::canonical_bytes(fn).size() > static_cast<std::size_t>(levels));
  ir::eliminate_dead_code(fn);  // every if leads to the store, so everything stays
  int kept = 0;
  ir::walk(fn, 0, [&](ir::id, int) { ++kept; });
  CHECK(kept == visited);
}
