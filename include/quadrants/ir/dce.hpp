// Dead-code elimination: removes statements whose results nothing observable uses.
// Liveness flows from effects (stores, atomics, prints) back through operands; graph
// marks (ir/graph_mark.hpp) structure the schedule and always stay.
#pragma once

#include <vector>

#include "quadrants/ir/walk.hpp"

namespace qd::ir {

constexpr void eliminate_dead_code(function& fn) {
  const std::size_t count = fn.nodes.size();
  std::vector<std::vector<id>> writers(count);  // local_decl -> its stores and atomics
  std::vector<std::vector<id>> jumps(count);    // loop -> the break_/continue_ that leave or restart it
  std::vector<bool> reachable(count, false);
  walk(fn, 0, [&](id i, int) {
    reachable[static_cast<std::size_t>(i)] = true;
    const node& n = fn.at(i);
    if (n.code == op::local_store || n.code == op::local_atomic) writers[static_cast<std::size_t>(n.a)].push_back(i);
    if (is_jump(n.code)) jumps[static_cast<std::size_t>(n.a)].push_back(i);
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
    if (n.code == op::local_decl)
      for (id w : writers[static_cast<std::size_t>(i)]) mark(w);
    if (n.code == op::range_for)  // its loop indices
      for (std::int64_t d = 0; d < n.imm; ++d) mark(fn.block(n.block0)[static_cast<std::size_t>(d)]);
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

}  // namespace qd::ir
