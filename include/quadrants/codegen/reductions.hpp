// Which reductions of a parallel task accumulate privately (per CPU chunk, per GPU
// thread) and are combined with one atomic at the end: one decision for every backend.
#pragma once

#include <cstdint>
#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/ir/node.hpp"

namespace qd::inline v0::codegen {

struct chunk_reduction {
  std::int64_t slot = 0;  // the global temporary it combines into
  ir::atomic_op op = ir::atomic_op::add;
  dtype type = dtype::i32;
};

// The temp_atomics in the loop body `body` whose old value nothing uses, on slots the
// body never loads or stores, always with one op and type per slot: their slots, in
// order of first appearance. Any other atomic on a slot stays a real atomic.
QD_FUNC std::vector<chunk_reduction> find_chunk_reductions(const ir::function& fn, std::int32_t body);

// The index in `reductions` of the accumulator node `n` updates, or -1.
inline int reduction_index(const std::vector<chunk_reduction>& reductions, const ir::node& n) {
  if (n.code != ir::op::temp_atomic) return -1;
  for (std::size_t r = 0; r < reductions.size(); ++r)
    if (reductions[r].slot == n.imm) return static_cast<int>(r);
  return -1;
}

}  // namespace qd::codegen

#ifdef QD_HEADER_ONLY
#include "quadrants/codegen/reductions-inl.hpp"
#endif
