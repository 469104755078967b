// Implementation of autodiff/footprint.hpp: interval arithmetic over the integer nodes
// that form indices, with the launch's scalar arguments and shapes known.
#pragma once

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include "quadrants/autodiff/footprint.hpp"
#include "quadrants/ir/visit.hpp"

namespace qd::inline v0::autodiff {
namespace detail {

struct interval {
  std::int64_t lo, hi;
};

class footprint_builder {
 public:
  footprint_builder(const ir::function& fn, const launch_values& values) : fn_(fn), values_(values) {}

  std::optional<interval> eval(ir::id i, int depth = 0) const {
    if (depth > 32 || !is_integral(fn_.at(i).type)) return std::nullopt;
    using ir::op;
    using range = std::optional<interval>;
    return ir::match<range>(
        fn_, i,  // every other op: data-dependent, or an operation not followed
        [](ir::view<op::constant> c) -> range {
          return interval{c.bits(), c.bits()};
        },
        [&](ir::view<op::arg> a) { return scalar(a.node()); },
        [&](ir::view<op::shape> s) -> range {
          auto p = static_cast<std::size_t>(s.array());
          if (p >= values_.shapes.size()) return std::nullopt;
          std::int64_t e = values_.shapes[p][static_cast<std::size_t>(s.dimension())];
          return interval{e, e};
        },
        [&](ir::view<op::cast> c) { return eval(c.operand(), depth + 1); },
        [&](ir::view<op::bound> b) { return eval(b.operand(), depth + 1); },
        [&](ir::view<op::loop_index> index) -> range {
          const ir::view<op::range_for> loop(fn_, index.loop());
          const ir::id first = loop.begin(index.dimension());
          range begin = first == ir::none ? interval{0, 0} : eval(first, depth + 1);
          range end = eval(loop.end(index.dimension()), depth + 1);
          if (!begin || !end) return std::nullopt;
          return interval{begin->lo, std::max(begin->lo, end->hi - 1)};
        },
        [&](ir::view<op::binary> x) -> range {
          auto a = eval(x.lhs(), depth + 1), b = eval(x.rhs(), depth + 1);
          if (!a || !b) return std::nullopt;
          if (x.op() == ir::binary_op::add) return interval{a->lo + b->lo, a->hi + b->hi};
          if (x.op() == ir::binary_op::sub) return interval{a->lo - b->hi, a->hi - b->lo};
          if (x.op() == ir::binary_op::mul) {
            std::int64_t c[4] = {a->lo * b->lo, a->lo * b->hi, a->hi * b->lo, a->hi * b->hi};
            return interval{*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
          }
          return std::nullopt;
        });
  }

  access_box box(ir::id i, access_kind kind) const {
    const ir::node& n = fn_.at(i);
    access_box b;
    b.param = n.param;
    b.kind = kind;
    const auto& shape = values_.shapes[static_cast<std::size_t>(n.param)];
    for (std::int32_t d = 0; d < n.list_size; ++d) {
      const auto k = static_cast<std::size_t>(d);
      const std::int64_t last = shape[k] - 1;
      std::optional<interval> r = eval(fn_.list(n, d));
      if (!r || (n.flags & ir::access::clamp))
        r = interval{r ? std::clamp(r->lo, std::int64_t{0}, last) : 0,
                     r ? std::clamp(r->hi, std::int64_t{0}, last) : last};
      b.lo[k] = r->lo;
      b.hi[k] = r->hi;
    }
    return b;
  }

  // x[i] = x[i] + v (or - v): an accumulation of the element it read.
  bool accumulates(const ir::node& store) const {
    const ir::node& v = fn_.at(store.a);
    if (v.code != ir::op::binary || (v.sub != static_cast<std::uint8_t>(ir::binary_op::add) &&
                                     v.sub != static_cast<std::uint8_t>(ir::binary_op::sub)))
      return false;
    auto same = [&](ir::id o) {
      const ir::node& l = fn_.at(o);
      if (l.code != ir::op::global_load || l.param != store.param || l.flags != store.flags) return false;
      for (std::int32_t d = 0; d < l.list_size; ++d)
        if (fn_.list(l, d) != fn_.list(store, d)) return false;
      return true;
    };
    return same(v.a) || (v.sub == static_cast<std::uint8_t>(ir::binary_op::add) && same(v.b));
  }

 private:
  const ir::function& fn_;
  const launch_values& values_;

  std::optional<interval> scalar(const ir::node& n) const {
    auto p = static_cast<std::size_t>(n.param);
    if (p >= values_.scalars.size()) return std::nullopt;
    const std::uint64_t bits = values_.scalars[p];
    std::int64_t v = 0;
    switch (n.type) {
      case dtype::i32: v = static_cast<std::int32_t>(static_cast<std::uint32_t>(bits)); break;
      case dtype::u32: v = static_cast<std::uint32_t>(bits); break;
      case dtype::u8: v = static_cast<std::uint8_t>(bits); break;
      case dtype::i8: v = static_cast<std::int8_t>(static_cast<std::uint8_t>(bits)); break;
      case dtype::i16: v = static_cast<std::int16_t>(static_cast<std::uint16_t>(bits)); break;
      case dtype::u16: v = static_cast<std::uint16_t>(bits); break;
      case dtype::boolean: v = (bits & 0xff) != 0; break;
      case dtype::i64: std::memcpy(&v, &bits, sizeof v); break;
      case dtype::u64:
        if (bits > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
        v = static_cast<std::int64_t>(bits);
        break;
      case dtype::f16:
      case dtype::f32:
      case dtype::f64: return std::nullopt;
    }
    return interval{v, v};
  }
};

}  // namespace detail

QD_FUNC std::vector<footprint_access> footprint_accesses(const ir::function& fn, const std::vector<bool>& needed) {
  const launch_values none;
  detail::footprint_builder b(fn, none);  // accumulates() reads no launch values
  std::vector<footprint_access> out;
  ir::walk(fn, 0, [&](ir::id i, int) {
    const ir::node& n = fn.at(i);
    if (n.flags & ir::access::grad) return;
    if (n.code == ir::op::global_load) {
      out.push_back(
          {i, access_kind::read, static_cast<std::size_t>(i) < needed.size() && needed[static_cast<std::size_t>(i)]});
    } else if (n.code == ir::op::global_store) {
      out.push_back({i, b.accumulates(n) ? access_kind::accumulate : access_kind::overwrite, false});
    } else if (n.code == ir::op::global_atomic) {
      const auto o = static_cast<ir::atomic_op>(n.sub);
      const bool adds = o == ir::atomic_op::add || o == ir::atomic_op::sub;
      out.push_back({i, adds ? access_kind::accumulate : access_kind::overwrite, false});
    }
  });
  return out;
}

QD_FUNC void footprint(const ir::function& fn, const std::vector<footprint_access>& accesses,
                       const launch_values& values, std::vector<access_box>& out) {
  detail::footprint_builder b(fn, values);
  for (const footprint_access& a : accesses) {
    out.push_back(b.box(a.node, a.kind));
    out.back().needed = a.needed;
  }
}

QD_FUNC bool intersect(const access_box& a, const access_box& b, int ndim) {
  for (std::size_t d = 0; d < static_cast<std::size_t>(ndim); ++d)
    if (a.hi[d] < b.lo[d] || b.hi[d] < a.lo[d]) return false;
  return true;
}

}  // namespace qd::inline v0::autodiff
