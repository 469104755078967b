// Concurrent branches that provably write the same elements: a trace-time
// error. Writes that may overlap without proof are allowed and documented as a race
// (docs/graphs.md); disjoint parts of one array are fine.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "quadrants/analysis/graph.hpp"
#include "quadrants/analysis/split.hpp"

namespace qd::inline v0::analysis {

struct fork_conflict {
  std::int32_t region = -1;                   // index into graph_regions
  std::int32_t branch_a = -1, branch_b = -1;  // 0-based branch numbers
  ir::id write_a = ir::none, write_b = ir::none;
};

namespace detail {

// The elements one index of a store covers: a point `sym + off` (sym none: a constant),
// or every `i + off` for a loop index i over [begin, end).
struct index_cover {
  bool interval = false;
  affine point;
  ir::id begin = ir::none, end = ir::none;  // interval: the loop's bounds (none: begin 0)
  std::int64_t off = 0;
  ir::id index = ir::none;  // interval: the loop index
};

constexpr bool exact_constant(const ir::function& fn, ir::id i, std::int64_t& value) {
  const index_range r = range_of_index(fn, i);
  if (!r.has_lo || !r.has_hi || r.lo != r.hi) return false;
  value = r.lo;
  return true;
}

constexpr index_cover cover_of(const ir::function& fn, ir::id index) {
  index_cover c;
  const affine a = affine_of(fn, index);
  if (a.sym == ir::none || fn.at(a.sym).code != ir::op::loop_index) {
    c.point = a;
    return c;
  }
  const ir::view<ir::op::loop_index> li(fn, a.sym);
  const ir::view<ir::op::range_for> loop(fn, li.loop());
  c.interval = true;
  c.index = a.sym;
  c.off = a.off;
  c.begin = loop.begin(li.dimension());
  c.end = loop.end(li.dimension());
  return c;
}

// [lo, hi) of an interval cover when its bounds are constants.
constexpr bool constant_interval(const ir::function& fn, const index_cover& c, std::int64_t& lo, std::int64_t& hi) {
  std::int64_t b = 0;
  if (c.begin != ir::none && !exact_constant(fn, c.begin, b)) return false;
  if (!exact_constant(fn, c.end, hi)) return false;
  lo = b + c.off;
  hi += c.off;
  return lo < hi;
}

// Whether two covers provably share an element (identical run-time ranges are taken
// as non-empty: a kernel that races whenever it does anything is refused).
constexpr bool covers_meet(const ir::function& fn, const index_cover& x, const index_cover& y) {
  if (!x.interval && !y.interval) {
    if (x.point.sym == ir::none || y.point.sym == ir::none)
      return x.point.sym == y.point.sym && x.point.off == y.point.off;
    return same_value(fn, x.point.sym, y.point.sym) && x.point.off == y.point.off;
  }
  if (x.interval != y.interval) {
    const index_cover& p = x.interval ? y : x;
    const index_cover& r = x.interval ? x : y;
    std::int64_t lo = 0, hi = 0;
    return p.point.sym == ir::none && constant_interval(fn, r, lo, hi) && lo <= p.point.off && p.point.off < hi;
  }
  std::int64_t lo1 = 0, hi1 = 0, lo2 = 0, hi2 = 0;
  if (constant_interval(fn, x, lo1, hi1) && constant_interval(fn, y, lo2, hi2)) return lo1 < hi2 && lo2 < hi1;
  const bool same_begin = x.begin == ir::none ? y.begin == ir::none : same_value(fn, x.begin, y.begin);
  return same_begin && same_value(fn, x.end, y.end) && x.off == y.off;
}

// Whether a store runs whenever its construct does: only loops enclose it.
constexpr bool unconditional(const ir::function& fn, ir::id i) {
  for (std::int32_t b = fn.node_block[static_cast<std::size_t>(i)]; b != 0;) {
    const ir::id owner = fn.block_owner[static_cast<std::size_t>(b)];
    if (fn.at(owner).code != ir::op::range_for) return false;
    b = fn.node_block[static_cast<std::size_t>(owner)];
  }
  return true;
}

// Whether two plain stores through one parameter provably write a common element.
constexpr bool provably_same_elements(const ir::function& fn, ir::id first, ir::id second) {
  const ir::node& a = fn.at(first);
  const ir::node& b = fn.at(second);
  if (a.param != b.param || (a.flags & ir::access::grad) != (b.flags & ir::access::grad) ||
      ((a.flags | b.flags) & ir::access::clamp) != 0 || a.list_size != b.list_size)
    return false;
  if (!unconditional(fn, first) || !unconditional(fn, second)) return false;
  // A loop index in two dimensions covers a diagonal, not a product of ranges.
  std::vector<ir::id> used_a, used_b;
  auto distinct = [](const index_cover& c, std::vector<ir::id>& used) {
    if (!c.interval) return true;
    if (std::find(used.begin(), used.end(), c.index) != used.end()) return false;
    used.push_back(c.index);
    return true;
  };
  for (std::int32_t d = 0; d < a.list_size; ++d) {
    const index_cover x = cover_of(fn, fn.list(a, d)), y = cover_of(fn, fn.list(b, d));
    if (!distinct(x, used_a) || !distinct(y, used_b) || !covers_meet(fn, x, y)) return false;
  }
  return true;
}

}  // namespace detail

// The first pair of branches of a fork that provably write the same elements.
constexpr std::optional<fork_conflict> find_fork_conflict(const ir::function& fn, const kernel_structure& s,
                                                          const std::vector<graph_region>& regions) {
  for (std::size_t r = 0; r < regions.size(); ++r) {
    const graph_region& g = regions[r];
    if (g.loop) continue;
    std::vector<std::vector<ir::id>> stores(g.branches.size());
    for (std::size_t b = 0; b < g.branches.size(); ++b) {
      const std::int32_t end = b + 1 < g.branches.size() ? g.branches[b + 1] : g.end;
      for (std::int32_t k = g.branches[b] + 1; k < end; ++k)
        for (const array_access& w : s.statements[static_cast<std::size_t>(k)].writes)
          if (fn.at(w.node).code == ir::op::global_store) stores[b].push_back(w.node);
    }
    for (std::size_t x = 0; x < stores.size(); ++x)
      for (std::size_t y = x + 1; y < stores.size(); ++y)
        for (ir::id a : stores[x])
          for (ir::id b : stores[y])
            if (detail::provably_same_elements(fn, a, b))
              return fork_conflict{static_cast<std::int32_t>(r), static_cast<std::int32_t>(x),
                                   static_cast<std::int32_t>(y), a, b};
  }
  return std::nullopt;
}

}  // namespace qd::inline v0::analysis
