// How deeply control flow nests in a kernel, and the limit every kernel keeps. The
// generated C++ opens a brace per level, and clang (so hipRTC) refuses over 256.
#pragma once

#include <algorithm>
#include <vector>

#include "quadrants/ir/node.hpp"

namespace qd::inline v0::ir {

// Levels a kernel may nest: each qd::if_/else_ body, qd::while_ and each dimension of a
// loop inside another statement counts one. The generated code's braces then stay well
// below the 256 nested brackets clang and hipRTC accept, and every recursive pass over
// the IR (printer, lowering, emitter, interpreter) stays a few hundred frames deep.
inline constexpr int max_nesting_depth = 200;

// The levels a block adds: its loop's rank for a loop body, else 1 (0 for the top level).
constexpr int nesting_weight(const function& fn, std::int32_t block) {
  const id owner = fn.block_owner[static_cast<std::size_t>(block)];
  if (owner == none) return 0;
  const node& n = fn.at(owner);
  return n.code == op::range_for ? static_cast<int>(n.imm) : 1;
}

// The deepest nesting in `fn`, without recursion: a block's owner always sits in a block
// created before it, so one forward pass over the blocks suffices.
constexpr int nesting_depth(const function& fn) {
  std::vector<int> depth(fn.blocks.size(), 0);
  int deepest = 0;
  for (std::size_t b = 1; b < fn.blocks.size(); ++b) {
    const id owner = fn.block_owner[b];
    if (owner == none) continue;
    const auto parent = static_cast<std::size_t>(fn.node_block[static_cast<std::size_t>(owner)]);
    depth[b] = (parent < b ? depth[parent] : 0) + nesting_weight(fn, static_cast<std::int32_t>(b));
    deepest = std::max(deepest, depth[b]);
  }
  return deepest;
}

}  // namespace qd::inline v0::ir
