// Dead-code elimination: removes statements whose results nothing observable uses.
// Liveness flows from effects (stores, atomics, prints) back through operands; graph
// marks (ir/graph_mark.hpp) structure the schedule and always stay.
#pragma once

#include <vector>

#include "quadrants/ir/visit.hpp"

namespace qd::inline v0::ir {

constexpr void eliminate_dead_code(function& fn) {
  const std::size_t count = fn.nodes.size();
  std::vector<std::vector<id>> writers(count);  // local_decl or local_array -> its stores and atomics
  std::vector<std::vector<id>> jumps(count);    // loop -> the break_/continue_ that leave or restart it
  std::vector<bool> reachable(count, false);
  walk(fn, 0, [&](id i, int) {
    reachable[static_cast<std::size_t>(i)] = true;
    auto add = [i](std::vector<std::vector<id>>& to, id key) { to[static_cast<std::size_t>(key)].push_back(i); };
    match(
        fn, i, [&](view<op::local_store> s) { add(writers, s.variable()); },
        [&](view<op::local_atomic> u) { add(writers, u.variable()); },
        [&](view<op::array_store> s) { add(writers, s.array()); }, [&]<op O>(jump_view<O> j) { add(jumps, j.loop()); });
  });
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
    if (n.code == op::local_decl || n.code == op::local_array)
      for (id w : writers[static_cast<std::size_t>(i)]) mark(w);
    if (n.code == op::range_for)  // its loop indices
      for (std::int32_t d = 0; d < view<op::range_for>(fn, i).rank(); ++d) mark(view<op::range_for>(fn, i).index(d));
    // A live loop keeps the jumps that decide how many iterations run.
    if (n.code == op::range_for || n.code == op::while_)
      for (id j : jumps[static_cast<std::size_t>(i)]) mark(j);
  }
  for (auto& block : fn.blocks) {
    std::vector<id> kept;
    for (id i : block)
      if (live[static_cast<std::size_t>(i)]) kept.push_back(i);
    block = kept;
  }
}

}  // namespace qd::inline v0::ir
