// Program-order traversal of the flat IR and canonical node numbering.
// A node's canonical number is its position in a depth-first walk of the blocks.
#pragma once

#include <vector>

#include "quadrants/ir/node.hpp"

namespace qd::ir {

// Calls visit(node_id, depth) for every statement reachable from `block`, in
// program order: a control-flow node before the contents of its blocks.
template <class Visit>
constexpr void walk(const function& fn, std::int32_t block, Visit&& visit, int depth = 0) {
  for (id i : fn.block(block)) {
    visit(i, depth);
    const node& n = fn.at(i);
    if (n.block0 >= 0) walk(fn, n.block0, visit, depth + 1);
    if (n.block1 >= 0) walk(fn, n.block1, visit, depth + 1);
  }
}

// canonical[i] = position of node i in the walk of `block`, or none if unreachable.
constexpr std::vector<id> canonical_numbering(const function& fn, std::int32_t block = 0) {
  std::vector<id> number(fn.nodes.size(), none);
  id next = 0;
  walk(fn, block, [&](id i, int) { number[static_cast<std::size_t>(i)] = next++; });
  return number;
}

// Calls f(operand_id) for each node operand of `n` (not blocks, not text pieces).
template <class F>
constexpr void for_each_operand(const function& fn, const node& n, F&& f) {
  if (n.a != none) f(n.a);
  if (n.b != none) f(n.b);
  if (n.c != none) f(n.c);
  for (std::int32_t k = 0; k < n.list_size; ++k) {
    std::int32_t item = fn.list(n, k);
    if (!is_text(item)) f(item);
  }
}

}  // namespace qd::ir
