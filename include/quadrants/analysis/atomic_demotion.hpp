// Atomic demotion: `x[i] += v` in a parallel construct is a plain
// read-modify-write where each iteration provably owns the element it updates.
//
// The tracer emits every compound update of an array element inside a parallel
// construct as a global_atomic flagged access::compound. For each top-level
// range_for, the accesses (loads, stores, atomics) to one buffer (a parameter, or
// its gradient) are grouped; the group's compound updates are flagged access::owned
// when, for every dimension d of the loop, one index position p_d holds in *every*
// access of the group the same expression (structurally), and that expression is
//   a * i_d + b,  a a nonzero integer constant, b loop-invariant
// (i_d the loop index of dimension d; casts to a 32- or 64-bit integer allowed),
// independent of the other loop indices. Then two iterations differ at p_d for
// some d, so no element is touched by two iterations. Anything else -- a computed
// (scatter) index, a clamped access, another index of the same buffer anywhere in
// the construct -- keeps the atomic. Explicit qd::atomic_* calls are never demoted.
//
// Assumptions, as the compiled code's: index arithmetic does not overflow (an
// overflowing index is out of range anyway), and two different array parameters
// do not share memory.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "quadrants/ir/visit.hpp"

namespace qd::inline v0::analysis {

namespace detail {

// The loop-index coefficients of an index expression inside one top-level loop.
struct affine_form {
  std::array<std::int64_t, 4> coeff{};
};

// Index expressions deeper than this are not analysed (the access stays atomic): the
// structural walks below revisit shared operands, so their cost grows with 2^depth.
inline constexpr int max_index_depth = 12;

class demotion_context {
 public:
  constexpr demotion_context(const ir::function& fn, ir::id loop) : fn_(fn), loop_(loop), invariant_(fn.nodes.size()) {
    // Whether a node has one value for every iteration: computed before the loop (at
    // the top level), or pure arithmetic on such values. Operands precede their users.
    for (std::size_t i = 0; i < fn.nodes.size(); ++i) {
      const ir::node& n = fn.nodes[i];
      bool inv = fn.is_top_level(static_cast<ir::id>(i));
      if (!inv && ir::is_invariant(n.code) && n.list_size == 0) {
        inv = true;
        for (ir::id o : {n.a, n.b, n.c})
          if (o != ir::none && (o >= static_cast<ir::id>(i) || !invariant_[static_cast<std::size_t>(o)])) inv = false;
      }
      invariant_[i] = inv;
    }
  }

  constexpr bool loop_invariant(ir::id i) const { return invariant_[static_cast<std::size_t>(i)]; }

  // x = sum_d coeff[d] * i_d + (loop-invariant), or nothing when x is not of that form.
  constexpr std::optional<affine_form> affine(ir::id x, int depth = 0) const {
    if (depth > max_index_depth) return std::nullopt;
    const ir::node& n = fn_.at(x);
    if (n.code == ir::op::loop_index && n.a == loop_) {
      affine_form f;
      f.coeff[static_cast<std::size_t>(n.imm)] = 1;
      return f;
    }
    if (loop_invariant(x)) return affine_form{};
    if (!is_integral(n.type) || (n.type != dtype::i32 && n.type != dtype::i64)) return std::nullopt;
    if (n.code == ir::op::cast) return affine(n.a, depth + 1);
    if (n.code == ir::op::unary && static_cast<ir::unary_op>(n.sub) == ir::unary_op::neg)
      return scaled(affine(n.a, depth + 1), -1);
    if (n.code != ir::op::binary) return std::nullopt;
    const auto o = static_cast<ir::binary_op>(n.sub);
    if (o == ir::binary_op::add || o == ir::binary_op::sub) {
      auto a = affine(n.a, depth + 1), b = affine(n.b, depth + 1);
      if (!a || !b) return std::nullopt;
      for (std::size_t d = 0; d < 4; ++d) a->coeff[d] += o == ir::binary_op::add ? b->coeff[d] : -b->coeff[d];
      return a;
    }
    if (o == ir::binary_op::mul) {
      if (auto k = int_constant(n.b)) return scaled(affine(n.a, depth + 1), *k);
      if (auto k = int_constant(n.a)) return scaled(affine(n.b, depth + 1), *k);
    }
    return std::nullopt;
  }

  // Whether two index expressions compute the same value in one iteration: the same
  // node, or the same pure arithmetic on operands that are.
  constexpr bool same_expression(ir::id x, ir::id y, int depth = 0) const {
    if (x == y) return true;
    if (depth > max_index_depth) return false;
    const ir::node& a = fn_.at(x);
    const ir::node& b = fn_.at(y);
    if (!ir::is_invariant(a.code) || a.list_size != 0 || b.list_size != 0) return false;
    if (a.code != b.code || a.type != b.type || a.sub != b.sub || a.flags != b.flags || a.param != b.param ||
        a.imm != b.imm)
      return false;
    auto same = [&](ir::id p, ir::id q) {
      return (p == ir::none && q == ir::none) || (p != ir::none && q != ir::none && same_expression(p, q, depth + 1));
    };
    return same(a.a, b.a) && same(a.b, b.b) && same(a.c, b.c);
  }

 private:
  constexpr std::optional<std::int64_t> int_constant(ir::id i) const {
    const ir::node& n = fn_.at(i);
    if (n.code == ir::op::constant && is_integral(n.type)) return n.imm;
    return std::nullopt;
  }
  static constexpr std::optional<affine_form> scaled(std::optional<affine_form> f, std::int64_t k) {
    if (!f) return f;
    for (auto& c : f->coeff) c *= k;
    return f;
  }

  const ir::function& fn_;
  ir::id loop_;
  std::vector<bool> invariant_;
};

// Whether loop's constant bounds give it at most one iteration (qd::range_for(1, ...)):
// its "iterations" cannot race.
constexpr bool single_iteration(const ir::function& fn, ir::id loop) {
  const ir::node& n = fn.at(loop);
  auto constant = [&](ir::id i, std::int64_t& v) {
    if (i == ir::none) return (v = 0), true;
    const ir::node& c = fn.at(i);
    if (c.code != ir::op::constant || !is_integral(c.type)) return false;
    v = c.imm;
    return true;
  };
  std::int64_t begin = 0, end = 0, total = 1;
  if (n.imm == 1) return constant(n.a, begin) && constant(n.b, end) && end - begin <= 1;
  for (std::int32_t d = 0; d < n.list_size; ++d) {
    if (!constant(fn.list(n, d), end)) return false;
    total *= end;
  }
  return total <= 1;
}

// Whether every access of `group` keeps the iterations of `loop` on disjoint elements.
constexpr bool iterations_own_elements(const ir::function& fn, ir::id loop, const std::vector<ir::id>& group) {
  const demotion_context ctx(fn, loop);
  const ir::node& first = fn.at(group.front());
  const auto rank = static_cast<std::size_t>(fn.at(loop).imm);
  for (ir::id a : group)
    if (fn.at(a).flags & ir::access::clamp) return false;
  for (std::size_t d = 0; d < rank; ++d) {
    bool found = false;
    for (std::int32_t p = 0; p < first.list_size && !found; ++p) {
      auto f = ctx.affine(fn.list(first, p));
      if (!f || f->coeff[d] == 0) continue;
      bool only_d = true;
      for (std::size_t e = 0; e < 4; ++e)
        if (e != d && f->coeff[e] != 0) only_d = false;
      if (!only_d) continue;
      bool everywhere = true;
      for (ir::id a : group)
        if (!ctx.same_expression(fn.list(first, p), fn.list(fn.at(a), p))) everywhere = false;
      found = everywhere;
    }
    if (!found) return false;
  }
  return true;
}

}  // namespace detail

// Flags access::owned on the compound updates that each iteration owns; returns how
// many it demoted. Runs on traced IR, before lowering.
constexpr int demote_owned_updates(ir::function& fn) {
  int demoted = 0;
  for (ir::id loop : fn.block(0)) {
    if (fn.at(loop).code != ir::op::range_for) continue;
    // Accesses per buffer: (parameter, gradient or not).
    std::vector<std::vector<ir::id>> groups(fn.params.size() * 2);
    ir::visit(fn, fn.at(loop).block0, [&]<ir::op O>(ir::access_view<O> a) {
      groups[static_cast<std::size_t>(a.array()) * 2 + (a.grad() ? 1 : 0)].push_back(a.self());
    });
    for (const auto& group : groups) {
      bool has_compound = false;
      for (ir::id a : group)
        if (fn.at(a).code == ir::op::global_atomic && (fn.at(a).flags & ir::access::compound)) has_compound = true;
      if (!has_compound || !detail::iterations_own_elements(fn, loop, group)) continue;
      for (ir::id a : group) {
        ir::node& n = fn.at(a);
        if (n.code == ir::op::global_atomic && (n.flags & ir::access::compound)) {
          n.flags = static_cast<std::uint8_t>(n.flags | ir::access::owned);
          ++demoted;
        }
      }
    }
  }
  return demoted;
}

}  // namespace qd::inline v0::analysis
