// Implementation of codegen/reductions.hpp.
#pragma once

#include <algorithm>

#include "quadrants/codegen/reductions.hpp"
#include "quadrants/ir/walk.hpp"

namespace qd::inline v0::codegen {

QD_FUNC std::vector<chunk_reduction> find_chunk_reductions(const ir::function& fn, std::int32_t body) {
  std::vector<bool> used(fn.nodes.size(), false);
  std::vector<std::int64_t> accessed;  // slots the body loads or stores
  ir::walk(fn, body, [&](ir::id i, int) {
    ir::for_each_operand(fn, fn.at(i), [&](ir::id o) { used[static_cast<std::size_t>(o)] = true; });
    if (fn.at(i).code == ir::op::temp_load || fn.at(i).code == ir::op::temp_store) accessed.push_back(fn.at(i).imm);
  });
  std::vector<chunk_reduction> found;
  std::vector<std::int64_t> rejected;
  ir::walk(fn, body, [&](ir::id i, int) {
    const ir::node& n = fn.at(i);
    if (n.code != ir::op::temp_atomic) return;
    auto op = static_cast<ir::atomic_op>(n.sub);
    // Only the reductions (an exchange or cas per chunk would change what later ones see).
    const bool reduction =
        op == ir::atomic_op::add || op == ir::atomic_op::sub || op == ir::atomic_op::min || op == ir::atomic_op::max;
    bool ok = reduction && !used[static_cast<std::size_t>(i)] &&
              std::find(accessed.begin(), accessed.end(), n.imm) == accessed.end();
    for (const auto& r : found)
      if (r.slot == n.imm && (r.op != op || r.type != n.type)) ok = false;
    if (!ok) {
      rejected.push_back(n.imm);
      return;
    }
    bool known = false;
    for (const auto& r : found) known |= r.slot == n.imm;
    if (!known) found.push_back({n.imm, op, n.type});
  });
  std::erase_if(found, [&](const chunk_reduction& r) {
    return std::find(rejected.begin(), rejected.end(), r.slot) != rejected.end();
  });
  return found;
}

QD_FUNC bool has_nested_loop(const ir::function& fn, std::int32_t body) {
  bool found = false;
  ir::walk(fn, body,
           [&](ir::id i, int) { found |= fn.at(i).code == ir::op::range_for || fn.at(i).code == ir::op::while_; });
  return found;
}

}  // namespace qd::inline v0::codegen
