// Program-order traversal of the flat IR and canonical node numbering.
// A node's canonical number is its position in a depth-first walk of the blocks.
#pragma once

#include <type_traits>
#include <vector>

#include "quadrants/ir/node.hpp"

namespace qd::inline v0::ir {

// What a walk's callback may return: walk the node's blocks next (the default, also for
// a callback returning void), or skip them.
enum class next : std::uint8_t { into_blocks, skip_blocks };

namespace detail {
template <class Visit>
constexpr next visit_step(Visit& visit, id i, int depth) {
  if constexpr (std::is_same_v<std::invoke_result_t<Visit&, id, int>, next>) {
    return visit(i, depth);
  } else {
    visit(i, depth);
    return next::into_blocks;
  }
}
}  // namespace detail

// Calls visit(node_id, depth) for every statement reachable from `block`, in
// program order: a control-flow node before the contents of its blocks. An explicit
// stack rather than recursion, so no nesting depth can exhaust the thread's stack.
template <class Visit>
constexpr void walk(const function& fn, std::int32_t block, Visit&& visit, int depth = 0) {
  struct cursor {
    std::int32_t block;
    std::size_t next;
    int depth;
  };
  std::vector<cursor> open = {{block, 0, depth}};
  while (!open.empty()) {
    cursor& c = open.back();
    if (c.next == fn.block(c.block).size()) {
      open.pop_back();
      continue;
    }
    const id i = fn.block(c.block)[c.next++];
    const int d = c.depth;
    if (detail::visit_step(visit, i, d) == next::skip_blocks) continue;
    const node& n = fn.at(i);
    if (n.block1 >= 0) open.push_back({n.block1, 0, d + 1});  // walked after block0
    if (n.block0 >= 0) open.push_back({n.block0, 0, d + 1});
  }
}

// The walk of one statement: visit(i, depth), then its blocks' statements (block0's first).
template <class Visit>
constexpr void walk_statement(const function& fn, id i, Visit&& visit, int depth = 0) {
  if (detail::visit_step(visit, i, depth) == next::skip_blocks) return;
  const node& n = fn.at(i);
  if (n.block0 >= 0) walk(fn, n.block0, visit, depth + 1);
  if (n.block1 >= 0) walk(fn, n.block1, visit, depth + 1);
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

}  // namespace qd::inline v0::ir
