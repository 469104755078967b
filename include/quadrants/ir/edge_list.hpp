// A flat multimap from node to node for the passes that gather edges once and then look
// them up (dead-code elimination's writers and jumps, slot assignment's updates): one array
// of (from, order, to), sorted once, instead of a vector per node (a kernel of thousands of
// nodes then allocates one short array). A key's targets come in the order they were added.
#pragma once

#include <algorithm>
#include <array>
#include <vector>

#include "quadrants/ir/node.hpp"

namespace qd::inline v0::ir {

class edge_list {
 public:
  constexpr void add(id from, id to) { edges_.push_back({from, static_cast<id>(edges_.size()), to}); }
  // After the last add, before the first for_each.
  constexpr void seal() { std::sort(edges_.begin(), edges_.end()); }
  // f(to) for each edge from `from`, in the order added.
  template <class F>
  constexpr void for_each(id from, F&& f) const {
    for (auto e = std::lower_bound(edges_.begin(), edges_.end(), std::array<id, 3>{from, none, none});
         e != edges_.end() && (*e)[0] == from; ++e)
      f((*e)[2]);
  }

 private:
  std::vector<std::array<id, 3>> edges_;
};

}  // namespace qd::inline v0::ir
