// Copying a node of one function into another through a builder: operands renumbered,
// a control op's blocks filled statement by statement (how lowering rebuilds IR).
#pragma once

#include <string>
#include <vector>

#include "quadrants/base/error.hpp"
#include "quadrants/ir/builder.hpp"
#include "quadrants/ir/view.hpp"

namespace qd::inline v0::ir {

namespace detail {
template <class = void>
[[noreturn, gnu::cold]] void no_copy(id i, op code, id operand) {
  throw internal_error("copying node " + std::to_string(i) + " (" + std::string(name(code)) + "): operand " +
                       std::to_string(operand) + " has no copy (a bug in Quadrants; please report it)");
}
}  // namespace detail

// Appends to `b`'s insertion block a copy of `from`'s node i and records it in map[i].
// Operands and list items go through `map`: each must have its copy already, or lie in
// the node's own blocks (a while_'s condition); text pieces are added again. Where the
// op's param names a parameter (ir::layout_of), it goes through param(p). A control op
// gets new blocks, created as the builder creates them; `statement(j)` is called for
// each statement j of the old ones, in order, with the copy's block as insertion block
// (a pass recurses by passing its own copy of one statement).
template <class Param, class Statement>
constexpr id copy_node(builder& b, const function& from, id i, std::vector<id>& map, Param&& param,
                       Statement&& statement) {
  const node& old = from.at(i);
  const operand_layout& layout = layout_of(old.code);
  auto mapped = [&](id o) {
    if (o == none) return none;
    const id m = map[static_cast<std::size_t>(o)];
    if (m == none) [[unlikely]]
      detail::no_copy(i, old.code, o);
    return m;
  };
  node n = old;
  n.a = n.b = n.c = none;
  n.block0 = n.block1 = -1;
  if (names_parameter(layout.param) && old.param >= 0) n.param = param(old.param);
  if (old.list_size > 0) {  // appended in place: no temporary vector per node (add_string touches no list)
    n.list_begin = static_cast<std::int32_t>(b.fn().lists.size());
    for (std::int32_t k = 0; k < old.list_size; ++k) {
      const std::int32_t item = from.list(old, k);
      b.fn().lists.push_back(is_text(item) ? b.add_string(from.strings[static_cast<std::size_t>(text_index(item))])
                                           : mapped(item));
    }
  }
  if (layout.blocks == 0) {
    n.a = mapped(old.a);
    n.b = mapped(old.b);
    n.c = mapped(old.c);
    return map[static_cast<std::size_t>(i)] = b.emit(n);
  }
  const id copy = b.emit(n);
  map[static_cast<std::size_t>(i)] = copy;
  const std::int32_t blocks[2] = {old.block0 >= 0 ? b.new_block(copy) : -1, old.block1 >= 0 ? b.new_block(copy) : -1};
  b.fn().at(copy).block0 = blocks[0];
  b.fn().at(copy).block1 = blocks[1];
  for (int k = 0; k < 2; ++k) {
    if (blocks[k] < 0) continue;
    b.push_block(blocks[k]);
    for (id j : from.block(k == 0 ? old.block0 : old.block1)) statement(j);
    b.pop_block();
  }
  node& made = b.fn().at(copy);  // after the blocks: a while_'s condition is computed in block0
  made.a = mapped(old.a);
  made.b = mapped(old.b);
  made.c = mapped(old.c);
  return copy;
}

}  // namespace qd::inline v0::ir
