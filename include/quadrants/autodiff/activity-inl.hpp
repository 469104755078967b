// Implementation of autodiff/activity.hpp: two fixpoints over the live nodes, one
// forward along operands (activity), one backward (what the adjoint reads).
#pragma once

#include "quadrants/autodiff/activity.hpp"
#include "quadrants/ir/walk.hpp"

namespace qd::inline v0::autodiff {
namespace detail {

constexpr bool is_arithmetic(ir::op o) {
  return o == ir::op::unary || o == ir::op::binary || o == ir::op::select || o == ir::op::fma || o == ir::op::cast;
}
constexpr bool is_var_write(ir::op o) { return o == ir::op::local_store || o == ir::op::local_atomic; }

inline std::vector<ir::id> live_nodes(const ir::function& fn) {
  std::vector<ir::id> order;
  ir::walk(fn, 0, [&](ir::id i, int) { order.push_back(i); });
  return order;
}

}  // namespace detail

QD_FUNC std::vector<bool> active_values(const ir::function& fn) {
  std::vector<bool> active(fn.nodes.size(), false);
  auto at = [&](ir::id i) { return active[static_cast<std::size_t>(i)]; };
  const std::vector<ir::id> order = detail::live_nodes(fn);
  for (bool changed = true; changed;) {
    changed = false;
    for (ir::id i : order) {
      const ir::node& n = fn.at(i);
      bool a = false;
      if (n.code == ir::op::global_load) {
        a = fn.params[static_cast<std::size_t>(n.param)].needs_grad;
      } else if (n.code == ir::op::local_load) {
        a = at(n.a);
      } else if (n.code == ir::op::local_decl) {
        a = at(n.a) || at(i);
      } else if (detail::is_var_write(n.code)) {
        if (is_float(fn.at(n.a).type) && at(n.b) && !at(n.a)) {
          active[static_cast<std::size_t>(n.a)] = true;
          changed = true;
        }
      } else if (n.code == ir::op::select) {
        a = at(n.b) || at(n.c);
      } else if (detail::is_arithmetic(n.code)) {
        ir::for_each_operand(fn, n, [&](ir::id o) { a = a || at(o); });
      }
      a = a && is_float(n.type) && ir::has_value(n.code) && !detail::is_var_write(n.code);
      if (a && !at(i)) {
        active[static_cast<std::size_t>(i)] = true;
        changed = true;
      }
    }
  }
  return active;
}

QD_FUNC std::vector<bool> needed_values(const ir::function& fn, const std::vector<bool>& active) {
  std::vector<bool> needed(fn.nodes.size(), false);
  auto act = [&](ir::id i) { return i != ir::none && active[static_cast<std::size_t>(i)]; };
  auto need = [&](ir::id i) {
    if (i == ir::none || needed[static_cast<std::size_t>(i)]) return false;
    needed[static_cast<std::size_t>(i)] = true;
    return true;
  };
  const std::vector<ir::id> order = detail::live_nodes(fn);
  // What the reverse sweep and the replay's control read directly (adjoint-inl.hpp's rules).
  for (ir::id i : order) {
    const ir::node& n = fn.at(i);
    if (n.code == ir::op::if_ || n.code == ir::op::range_for) {  // conditions and bounds: the replay follows them
      ir::for_each_operand(fn, n, need);
      continue;
    }
    if (n.code == ir::op::global_load || n.code == ir::op::global_store || n.code == ir::op::global_atomic) {
      for (std::int32_t k = 0; k < n.list_size; ++k) need(fn.list(n, k));  // indices
      continue;
    }
    if (!act(i) || !detail::is_arithmetic(n.code)) continue;
    if (n.code == ir::op::select) {
      need(n.a);
    } else if (n.code == ir::op::fma) {
      if (act(n.a)) need(n.b);
      if (act(n.b)) need(n.a);
    } else if (n.code == ir::op::unary) {
      using u = ir::unary_op;
      const auto o = static_cast<u>(n.sub);
      if (o != u::neg && o != u::floor && o != u::ceil && o != u::round && o != u::trunc) need(i);
    } else if (n.code == ir::op::binary) {
      using b = ir::binary_op;
      const auto o = static_cast<b>(n.sub);
      if (o == b::mul) {
        if (act(n.a)) need(n.b);
        if (act(n.b)) need(n.a);
      } else if (o == b::div) {
        need(n.b);
        if (act(n.b)) need(i);
      } else if (o != b::add && o != b::sub && o != b::floordiv) {
        need(i);
      }
    }
  }
  // Backward: a needed value needs its operands; a needed variable, every value stored into it.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto k = order.size(); k-- > 0;) {
      const ir::id i = order[k];
      const ir::node& n = fn.at(i);
      if (detail::is_var_write(n.code)) {
        if (needed[static_cast<std::size_t>(n.a)]) changed = need(n.b) || changed;
        continue;
      }
      if (!needed[static_cast<std::size_t>(i)] || n.code == ir::op::range_for || n.code == ir::op::if_) continue;
      ir::for_each_operand(fn, n, [&](ir::id o) { changed = need(o) || changed; });
    }
  }
  return needed;
}

}  // namespace qd::inline v0::autodiff
