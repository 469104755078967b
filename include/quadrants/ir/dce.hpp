// Dead-code elimination: removes statements whose results nothing observable uses.
// Liveness flows from effects (stores, atomics, prints) back through operands; graph
// marks (ir/graph_mark.hpp) structure the schedule and always stay.
#pragma once

#include <algorithm>
#include <vector>

#include "quadrants/ir/edge_list.hpp"
#include "quadrants/ir/visit.hpp"

namespace qd::inline v0::ir {

constexpr void eliminate_dead_code(function& fn) {
  const std::size_t count = fn.nodes.size();
  // A local_decl or local_array -> its stores and atomics; a loop -> the break_/continue_
  // that leave or restart it.
  edge_list writers, jumps;
  std::vector<bool> reachable(count, false);
  walk(fn, 0, [&](id i, int) {
    reachable[static_cast<std::size_t>(i)] = true;
    match(
        fn, i, [&](view<op::local_store> s) { writers.add(s.variable(), i); },
        [&](view<op::local_atomic> u) { writers.add(u.variable(), i); },
        [&](view<op::array_store> s) { writers.add(s.array(), i); },
        [&]<op O>(jump_view<O> j) { jumps.add(j.loop(), i); });
  });
  writers.seal();
  jumps.seal();
  std::vector<bool> live(count, false);
  std::vector<id> work;
  auto mark = [&](id i) {
    if (i == none || live[static_cast<std::size_t>(i)]) return;
    live[static_cast<std::size_t>(i)] = true;
    work.push_back(i);
  };
  for (std::size_t i = 0; i < count; ++i)
    if (reachable[i] && (is_liveness_root(fn.nodes[i]) || fn.nodes[i].code == op::graph_mark)) mark(static_cast<id>(i));
  while (!work.empty()) {
    id i = work.back();
    work.pop_back();
    const node& n = fn.at(i);
    for_each_operand(fn, n, mark);
    // The enclosing control flow executes this node, so it lives too.
    std::int32_t b = fn.node_block[static_cast<std::size_t>(i)];
    if (b != 0) mark(fn.block_owner[static_cast<std::size_t>(b)]);
    if (n.code == op::local_decl || n.code == op::local_array) writers.for_each(i, mark);
    if (n.code == op::range_for)  // its loop indices
      for (std::int32_t d = 0; d < view<op::range_for>(fn, i).rank(); ++d) mark(view<op::range_for>(fn, i).index(d));
    // A live loop keeps the jumps that decide how many iterations run.
    if (n.code == op::range_for || n.code == op::while_) jumps.for_each(i, mark);
  }
  for (auto& block : fn.blocks) std::erase_if(block, [&](id i) { return !live[static_cast<std::size_t>(i)]; });
}

}  // namespace qd::inline v0::ir
