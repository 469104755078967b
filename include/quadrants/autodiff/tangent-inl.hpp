// Implementation of autodiff/tangent.hpp.
//
// One pass in program order: every statement is copied, and after each value that
// carries a tangent (autodiff/activity.hpp) its tangent is emitted from its operands'
// tangents and primal values. Memory follows the primal: a read of a needs_grad array
// also reads the element's tangent, a store also stores one, an atomic add also adds
// one; a variable with a tangent gets a tangent variable. Control flow is the forward's
// own, so loops, branches, while loops and jumps need nothing more. What cannot be made
// exact (an atomic min on a float, a racing read of what other iterations update) is a
// qd::user_error naming the statement; an op this file does not know with a tangent
// is one too.
#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "quadrants/analysis/atomic_demotion.hpp"
#include "quadrants/analysis/split.hpp"
#include "quadrants/autodiff/activity.hpp"
#include "quadrants/autodiff/derivative.hpp"
#include "quadrants/autodiff/tangent.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/ir/builder.hpp"
#include "quadrants/ir/copy.hpp"
#include "quadrants/ir/walk.hpp"

namespace qd::inline v0::autodiff {
namespace detail {

class tangent_builder {
 public:
  tangent_builder(const ir::function& forward, const naming& names)
      : f_(forward),
        names_(names),
        b_(out_),
        map_(forward.nodes.size(), ir::none),
        tan_(forward.nodes.size(), ir::none),
        uses_(forward.nodes.size(), 0),
        position_(ir::canonical_numbering(forward)) {
    out_.params = f_.params;
    out_.has_mesh = f_.has_mesh;
    ir::walk(f_, 0, [&](ir::id i, int) { ir::for_each_operand(f_, f_.at(i), [&](ir::id o) { ++uses_[idx(o)]; }); });
  }

  ir::function build() {
    bool any = false;
    for (const ir::param_desc& p : f_.params) any = any || p.needs_grad;
    if (!any)
      throw user_error(
          fmt::format("kernel '{}' has no qd::needs_grad parameter, so it has no tangent kernel; declare "
                      "the arrays to differentiate as qd::types::ndarray<T, N, qd::needs_grad>",
                      names_.kernel));
    active_ = active_values(f_);
    ir::walk(f_, 0, [&](ir::id i, int) { validate(i); });
    for (ir::id s : f_.block(0))
      if (at(s).code == ir::op::range_for && (at(s).flags & ir::loop::serialize) == 0 &&
          !analysis::detail::single_iteration(f_, s))
        check_races(s);  // a parallel loop
    for (ir::id s : f_.block(0)) statement(s);
    return std::move(out_);
  }

 private:
  const ir::function& f_;
  const naming& names_;
  ir::function out_;
  ir::builder b_;
  std::vector<ir::id> map_;  // forward node -> its copy
  std::vector<ir::id> tan_;  // forward node (or variable) -> its tangent (or tangent variable); none: zero
  std::vector<int> uses_;
  std::vector<bool> active_;
  std::vector<ir::id> position_;

  static std::size_t idx(ir::id i) { return static_cast<std::size_t>(i); }
  const ir::node& at(ir::id i) const { return f_.at(i); }
  bool act(ir::id i) const { return i != ir::none && active_[idx(i)]; }
  // A float array with a tangent: its accesses get tangent accesses.
  bool dual_param(std::int32_t p) const {
    if (p < 0) return false;
    const ir::param_desc& d = f_.params[static_cast<std::size_t>(p)];
    return d.is_array && d.needs_grad && is_float(d.type);
  }
  static bool global_access(ir::op o) {
    return o == ir::op::global_load || o == ir::op::global_store || o == ir::op::global_atomic;
  }

  [[noreturn]] void reject(ir::id i, std::string_view what, std::string_view todo) const {
    std::string where = fmt::format("IR node %{}", position_[idx(i)]);
    const ir::source_loc loc = f_.location(i);
    if (loc.known()) where = ir::to_text(loc) + ", " + where;
    throw user_error(
        fmt::format("kernel '{}': no tangent kernel (kernel.fwd): {} ({}); {}", names_.kernel, what, where, todo));
  }
  std::string array_text(const ir::node& n) const {
    const auto k = static_cast<std::size_t>(n.param);
    return k < names_.params.size() && !names_.params[k].empty() ? fmt::format("'{}'", names_.params[k])
                                                                 : fmt::format("#{}", n.param);
  }

  // --- what has no exact tangent -------------------------------------------
  void validate(ir::id i) const {
    const ir::node& n = at(i);
    if (global_access(n.code) && (n.flags & ir::access::grad))
      reject(i, fmt::format("the kernel accesses {}.grad()", array_text(n)),
             "kernel.fwd passes the tangents in that buffer; read .grad() in a kernel that is not differentiated");
    // A top-level variable with a tangent, shared by a parallel loop's iterations: a plain
    // assignment, or a read next to a reduction into it, races, and the value and its
    // tangent could come from different iterations.
    if ((n.code == ir::op::local_store || n.code == ir::op::local_load) && act(n.a) && f_.is_top_level(n.a) &&
        in_parallel_loop(i)) {
      if (n.code == ir::op::local_store)
        reject(i, "a plain assignment to a top-level qd::var inside a parallel qd::range_for (a race)",
               "use += (a reduction) or a qd::var declared inside the loop body");
      if (writes_in(f_.top_level_statement(i), n.a))
        reject(i, "a parallel qd::range_for reads a top-level qd::var it also reduces into (a race)",
               "read the reduced value after the loop, in a later statement");
    }
    if (global_access(n.code) && dual_param(n.param) && (n.flags & ir::access::is_volatile))
      reject(i, fmt::format("qd::volatile_load of {}", array_text(n)), "use a plain read in a differentiated kernel");
    const bool float_atomic = (n.code == ir::op::global_atomic && dual_param(n.param)) ||
                              (n.code == ir::op::local_atomic && act(n.a) && is_float(at(n.a).type));
    if (float_atomic) {
      const auto o = static_cast<ir::atomic_op>(n.sub);
      if (o != ir::atomic_op::add && o != ir::atomic_op::sub)
        reject(i, fmt::format("qd::atomic_{} on a float that carries a tangent", ir::name(o)),
               "only atomic add and sub have a tangent that stays paired with the value; compute this in a kernel "
               "that is not differentiated");
      if (uses_[idx(i)] > 0)
        reject(i, "the value an atomic on a float that carries a tangent returns is used",
               "its tangent cannot be read atomically with it; use the atomic only to accumulate");
    }
    if (!act(i) && !(n.code == ir::op::unary && act(n.a))) return;
    if (n.type == dtype::f16 && ir::has_value(n.code))
      reject(i, "a value that carries a tangent is kept as qd::f16", "differentiate in f32 or f64");
    if (n.code == ir::op::unary && !known(static_cast<ir::unary_op>(n.sub)))
      reject(i, fmt::format("'{}' of a value that carries a tangent", ir::name(static_cast<ir::unary_op>(n.sub))),
             "compute it in a kernel that is not differentiated");
    if (n.code == ir::op::binary && !known(static_cast<ir::binary_op>(n.sub)))
      reject(i, fmt::format("'{}' of a value that carries a tangent", ir::name(static_cast<ir::binary_op>(n.sub))),
             "compute it in a kernel that is not differentiated");
    if (ir::has_value(n.code) && !handled(n.code))
      reject(i, fmt::format("the IR op '{}' has no tangent", ir::name(n.code)),
             "move it to a kernel that is not differentiated");
  }
  bool in_parallel_loop(ir::id i) const {
    const ir::id top = f_.top_level_statement(i);
    return top != i && at(top).code == ir::op::range_for && (at(top).flags & ir::loop::serialize) == 0 &&
           !analysis::detail::single_iteration(f_, top);
  }
  // Whether statement s writes variable v (a store or an atomic) somewhere inside it.
  bool writes_in(ir::id s, ir::id v) const {
    bool found = false;
    ir::walk(f_, at(s).block0, [&](ir::id j, int) {
      const ir::node& w = at(j);
      found = found || ((w.code == ir::op::local_store || w.code == ir::op::local_atomic) && w.a == v);
    });
    return found;
  }
  static bool handled(ir::op o) {
    for (ir::op k : {ir::op::unary, ir::op::binary, ir::op::select, ir::op::fma, ir::op::cast, ir::op::global_load,
                     ir::op::local_decl, ir::op::local_load})
      if (o == k) return true;
    return false;
  }
  static bool known(ir::unary_op o) {
    using u = ir::unary_op;
    for (u d : {u::neg, u::sqrt, u::exp, u::log, u::sin, u::cos, u::tanh, u::abs, u::floor, u::ceil, u::tan, u::asin,
                u::acos, u::rsqrt, u::log2, u::exp2, u::round, u::trunc})
      if (o == d) return true;
    return false;
  }
  static bool known(ir::binary_op o) {
    using b = ir::binary_op;
    for (b d : {b::add, b::sub, b::mul, b::div, b::min, b::max, b::pow, b::atan2, b::fmod, b::floordiv, b::floormod})
      if (o == d) return true;
    return ir::is_comparison(o);
  }

  // In a parallel loop, a read and an update of one element by different iterations (or two
  // plain stores) race: the value and its tangent are separate accesses, so one iteration
  // could pair another's value with a third's tangent. Atomic adds alone commute and pair.
  void check_races(ir::id loop) const {
    std::vector<std::vector<ir::id>> by_param(f_.params.size());
    ir::walk(f_, at(loop).block0, [&](ir::id i, int) {
      const ir::node& n = at(i);
      if (global_access(n.code) && dual_param(n.param)) by_param[static_cast<std::size_t>(n.param)].push_back(i);
    });
    for (const std::vector<ir::id>& group : by_param) {
      if (group.empty() || analysis::detail::iterations_own_elements(f_, loop, group)) continue;
      for (ir::id w : group) {
        if (at(w).code == ir::op::global_load) continue;
        for (ir::id o : group) {
          if (o == w || (at(o).code == ir::op::global_atomic && at(w).code == ir::op::global_atomic)) continue;
          if (analysis::detail::provably_disjoint(f_, w, o)) continue;
          reject(w,
                 fmt::format("other iterations of this parallel qd::range_for may {} the elements of {} it writes here",
                             at(o).code == ir::op::global_load ? "read" : "write", array_text(at(w))),
                 "let each iteration touch only its own elements (x[i]), or split the reads and the updates into two "
                 "loops");
        }
      }
    }
  }

  // --- emission --------------------------------------------------------------
  void statement(ir::id i) {
    const ir::node& n = at(i);
    b_.set_location(f_.location(i));
    ir::copy_node(
        b_, f_, i, map_, [](std::int32_t p) { return p; }, [&](ir::id j) { statement(j); });
    b_.set_location(f_.location(i));
    if (n.code == ir::op::global_load) {
      if (dual_param(n.param)) tan_[idx(i)] = b_.global_load(n.param, dual_flags(n), indices(n));
    } else if (n.code == ir::op::global_store) {
      if (dual_param(n.param))
        b_.global_store(n.param, dual_flags(n), indices(n),
                        value_or_zero(n.a, f_.params[static_cast<std::size_t>(n.param)].type));
    } else if (n.code == ir::op::global_atomic) {
      if (dual_param(n.param) && tan_of(n.a) != ir::none)
        b_.global_atomic(static_cast<ir::atomic_op>(n.sub), n.param, dual_flags(n), indices(n), tan_of(n.a));
    } else if (n.code == ir::op::local_decl) {
      if (act(i)) tan_[idx(i)] = b_.local_decl(n.type, value_or_zero(n.a, n.type));
    } else if (n.code == ir::op::local_load) {
      if (act(i)) tan_[idx(i)] = b_.local_load(tan_[idx(n.a)]);
    } else if (n.code == ir::op::local_store) {
      if (act(n.a)) b_.local_store(tan_[idx(n.a)], value_or_zero(n.b, at(n.a).type));
    } else if (n.code == ir::op::local_atomic) {
      if (act(n.a) && tan_of(n.b) != ir::none)
        b_.local_atomic(static_cast<ir::atomic_op>(n.sub), tan_[idx(n.a)], tan_of(n.b));
    } else if (act(i)) {
      tan_[idx(i)] = arithmetic(i);
    }
  }

  static std::uint8_t dual_flags(const ir::node& n) { return static_cast<std::uint8_t>(n.flags | ir::access::grad); }
  std::vector<ir::id> indices(const ir::node& n) const {
    std::vector<ir::id> out;
    for (std::int32_t k = 0; k < n.list_size; ++k) out.push_back(map_[idx(f_.list(n, k))]);
    return out;
  }
  ir::id tan_of(ir::id i) const { return act(i) ? tan_[idx(i)] : ir::none; }
  ir::id value_or_zero(ir::id i, dtype t) {
    const ir::id d = tan_of(i);
    return d != ir::none ? d : zero(t);
  }
  ir::id m(ir::id i) const { return map_[idx(i)]; }
  bool is_one(ir::id i) const {
    const ir::node& c = at(i);
    if (c.code != ir::op::constant) return false;
    if (c.type == dtype::f32) return c.imm == std::bit_cast<std::uint32_t>(1.0f);
    return c.type == dtype::f64 && c.imm == std::bit_cast<std::int64_t>(1.0);
  }
  ir::id zero(dtype t) { return b_.constant_float(t, 0.0); }
  ir::id bin(ir::binary_op o, dtype t, ir::id x, ir::id y) { return b_.binary(o, t, x, y); }
  // Sums and products where none stands for a zero tangent.
  ir::id add(dtype t, ir::id x, ir::id y) {
    return x == ir::none ? y : y == ir::none ? x : bin(ir::binary_op::add, t, x, y);
  }
  ir::id mul(dtype t, ir::id x, ir::id y) {
    return x == ir::none || y == ir::none ? ir::none : bin(ir::binary_op::mul, t, x, y);
  }
  ir::id neg(dtype t, ir::id x) { return x == ir::none ? ir::none : b_.unary(ir::unary_op::neg, t, x); }
  ir::id div(dtype t, ir::id x, ir::id y) { return x == ir::none ? ir::none : bin(ir::binary_op::div, t, x, y); }

  ir::id arithmetic(ir::id s) {
    const ir::node& n = at(s);
    const dtype t = n.type;
    if (n.code == ir::op::cast)
      return is_float(at(n.a).type) && tan_of(n.a) != ir::none ? b_.cast(t, tan_of(n.a)) : ir::none;
    if (n.code == ir::op::select) {
      const ir::id x = tan_of(n.b), y = tan_of(n.c);
      if (x == ir::none && y == ir::none) return ir::none;
      return b_.select(t, m(n.a), x == ir::none ? zero(t) : x, y == ir::none ? zero(t) : y);
    }
    if (n.code == ir::op::fma)
      return add(t, add(t, mul(t, tan_of(n.a), m(n.b)), mul(t, m(n.a), tan_of(n.b))), tan_of(n.c));
    if (n.code == ir::op::unary) return unary(s);
    if (n.code == ir::op::binary) return binary(s);
    return ir::none;
  }

  ir::id unary(ir::id s) {
    const ir::node& n = at(s);
    const ir::id d = tan_of(n.a);
    return d == ir::none ? ir::none : unary_derivative(b_, static_cast<ir::unary_op>(n.sub), n.type, m(n.a), m(s), d);
  }

  ir::id binary(ir::id s) {
    using o = ir::binary_op;
    const ir::node& n = at(s);
    const dtype t = n.type;
    const ir::id da = tan_of(n.a), db = tan_of(n.b), x = m(n.a), y = m(n.b), r = m(s);
    const auto op = static_cast<o>(n.sub);
    // Division and atan2 take one division for both sides, where summing the two partials would take two.
    if (op == o::div) {
      if (da == ir::none && is_one(n.a)) return neg(t, mul(t, mul(t, r, r), db));  // 1 / y: -r^2 db, no division
      return div(t, add(t, da, neg(t, mul(t, r, db))), y);                         // (da - r db) / y
    }
    if (op == o::atan2) {  // atan2(a, b): (b da - a db) / (a^2 + b^2)
      const ir::id r2 = bin(o::add, t, mul(t, x, x), mul(t, y, y));
      return div(t, add(t, mul(t, da, y), neg(t, mul(t, x, db))), r2);
    }
    if (op == o::mul && n.a == n.b && da != ir::none) return mul(t, bin(o::add, t, x, x), da);  // x^2: 2 x dx
    auto part = [&](int side, ir::id d) {
      return d == ir::none ? ir::none : binary_derivative(b_, op, t, x, y, r, side, d);
    };
    return add(t, part(0, da), part(1, db));
  }
};

}  // namespace detail

QD_FUNC ir::function make_tangent(const ir::function& forward, const naming& names) {
  return detail::tangent_builder(forward, names).build();
}

}  // namespace qd::inline v0::autodiff
