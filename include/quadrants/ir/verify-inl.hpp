// Implementation of ir/verify.hpp.
#pragma once

#include <string>
#include <string_view>

#include "quadrants/base/error.hpp"
#include "quadrants/base/limits.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/ir/graph_mark.hpp"
#include "quadrants/ir/verify.hpp"
#include "quadrants/ir/view.hpp"
#include "quadrants/ir/walk.hpp"

namespace qd::inline v0::ir {
namespace detail {

[[noreturn]] QD_FUNC void invalid(const function& fn, id i, std::string_view what) {
  std::string op = i >= 0 && static_cast<std::size_t>(i) < fn.nodes.size() ? std::string(name(fn.at(i).code)) : "?";
  throw internal_error(
      fmt::format("IR verifier: node {} ({}) {}; the IR is malformed (a bug in Quadrants; please "
                  "report it with the kernel)",
                  i, op, what));
}

// Checks what every pass and backend relies on, so malformed IR fails loudly
// instead of computing something: operand kinds and types, parameters, blocks.
class verifier {
 public:
  verifier(const function& fn, stage s) : fn_(fn), stage_(s) {}

  void run() {
    if (fn_.blocks.empty()) invalid(fn_, none, "has no blocks");
    if (fn_.node_block.size() != fn_.nodes.size() || fn_.block_owner.size() != fn_.blocks.size())
      invalid(fn_, none, "has block tables of the wrong size");
    walk(fn_, 0, [&](id i, int) { check(i); });
    if (!graph_stack_.empty()) invalid(fn_, none, "leaves a do_while body or a fork open");
  }

 private:
  dtype type(id operand, id user) const {
    if (operand < 0 || static_cast<std::size_t>(operand) >= fn_.nodes.size())
      invalid(fn_, user, "has an operand out of range");
    const node& o = fn_.at(operand);
    if (!has_value(o.code) || o.code == op::local_decl || o.code == op::local_array)
      invalid(fn_, user, fmt::format("uses node {} ({}) as a value", operand, name(o.code)));
    return o.type;
  }
  void expect(id operand, dtype t, id user, std::string_view role) const {
    if (type(operand, user) != t)
      invalid(fn_, user, fmt::format("has {} of type {}, expected {}", role, name(fn_.at(operand).type), name(t)));
  }
  void expect_decl(id decl, id user) const {
    if (decl < 0 || static_cast<std::size_t>(decl) >= fn_.nodes.size() || fn_.at(decl).code != op::local_decl)
      invalid(fn_, user, "does not name a local_decl");
    if (fn_.at(decl).type != fn_.at(user).type) invalid(fn_, user, "has a type other than its variable's");
  }
  void expect_array(id array, id index, id user) const {
    if (array < 0 || static_cast<std::size_t>(array) >= fn_.nodes.size() || fn_.at(array).code != op::local_array)
      invalid(fn_, user, "does not name a local_array");
    if (fn_.at(array).type != fn_.at(user).type) invalid(fn_, user, "has a type other than its array's");
    expect(index, dtype::i32, user, "an index");
  }
  const param_desc& param(const node& n, id user, bool array) const {
    if (n.param < 0 || static_cast<std::size_t>(n.param) >= fn_.params.size()) invalid(fn_, user, "names no parameter");
    const param_desc& p = fn_.params[static_cast<std::size_t>(n.param)];
    if (p.is_array != array) invalid(fn_, user, array ? "accesses a scalar parameter" : "reads an array parameter");
    return p;
  }
  void access(const node& n, id i) const {
    const param_desc& p = param(n, i, true);
    if (n.type != p.type) invalid(fn_, i, "has a type other than its array's element type");
    if (n.list_size != p.ndim) invalid(fn_, i, fmt::format("has {} indices for a {}-D array", n.list_size, p.ndim));
    if ((n.flags & access::grad) && !p.needs_grad) invalid(fn_, i, "reads the gradient of an array without one");
    for (std::int32_t d = 0; d < n.list_size; ++d) {
      dtype t = type(fn_.list(n, d), i);
      if (t != dtype::i32 && t != dtype::i64) invalid(fn_, i, fmt::format("has an index of type {}", name(t)));
    }
  }
  // A jump names its innermost enclosing loop, from inside that loop's body; a break_
  // never leaves a parallel loop (a top-level range_for not serialized).
  void jump(const node& n, id i) const {
    if (n.a < 0 || static_cast<std::size_t>(n.a) >= fn_.nodes.size()) invalid(fn_, i, "names no loop");
    for (std::int32_t b = fn_.node_block[static_cast<std::size_t>(i)]; b != 0;) {
      const id owner = fn_.block_owner[static_cast<std::size_t>(b)];
      const node& o = fn_.at(owner);
      if (o.code == op::range_for || o.code == op::while_) {
        if (owner != n.a || (o.code == op::while_ && b != o.block1))
          invalid(fn_, i, "is not in the body of the loop it names, or another loop is nearer");
        if (n.code == op::break_ && o.code == op::range_for && fn_.is_top_level(owner) &&
            (o.flags & loop::serialize) == 0)
          invalid(fn_, i, "leaves a parallel loop");
        return;
      }
      b = fn_.node_block[static_cast<std::size_t>(owner)];
    }
    invalid(fn_, i, "is outside any loop");
  }
  // cas has its expected value in c, the others nothing; bitwise ones take integers.
  void atomic(const node& n, id i) const {
    const auto o = static_cast<atomic_op>(n.sub);
    if (static_cast<int>(n.sub) >= atomic_op_count) invalid(fn_, i, "has an unknown atomic operation");
    if (o == atomic_op::cas)
      expect(n.c, n.type, i, "an expected value");
    else if (n.c != none)
      invalid(fn_, i, "has an expected value but is no compare-and-swap");
    if (is_bitwise(o) && !is_integral(n.type)) invalid(fn_, i, fmt::format("applies {} to {}", name(o), name(n.type)));
  }
  static bool helper_defined(binary_op o, dtype t) {
    switch (o) {
      case binary_op::div: return t != dtype::boolean;
      case binary_op::mod:
      case binary_op::shl:
      case binary_op::shr:
      case binary_op::bit_and:
      case binary_op::bit_or:
      case binary_op::bit_xor:
        return is_integral(t) ||
               (t == dtype::boolean && o != binary_op::mod && o != binary_op::shl && o != binary_op::shr);
      case binary_op::min:
      case binary_op::max: return t != dtype::boolean;
      case binary_op::pow:
      case binary_op::atan2:
      case binary_op::fmod: return t == dtype::f32 || t == dtype::f64;
      case binary_op::floordiv:
      case binary_op::floormod: return t != dtype::boolean;
      case binary_op::add:
      case binary_op::eq:
      case binary_op::ge:
      case binary_op::gt:
      case binary_op::le:
      case binary_op::logical_and:
      case binary_op::logical_or:
      case binary_op::lt:
      case binary_op::mul:
      case binary_op::ne:
      case binary_op::sub: return true;
    }
    return true;
  }

  void check(id i) {
    const node& n = fn_.at(i);
    if (const std::string_view field = stray_field(n); !field.empty())
      invalid(fn_, i, fmt::format("sets its field {}, which its op leaves unused (ir/view.hpp)", field));
    switch (n.code) {
      case op::constant: break;
      case op::arg:
        if (param(n, i, false).type != n.type) invalid(fn_, i, "has a type other than its parameter's");
        break;
      case op::shape:
        if (n.imm < 0 || n.imm >= param(n, i, true).ndim || n.type != dtype::i32)
          invalid(fn_, i, "reads a dimension the array lacks");
        break;
      case op::loop_index:
        if (n.a < 0 || fn_.at(n.a).code != op::range_for || n.type != dtype::i32 || n.imm < 0 ||
            n.imm >= fn_.at(n.a).imm)
          invalid(fn_, i, "is not an index of its loop");
        break;
      case op::unary: {
        auto o = static_cast<unary_op>(n.sub);
        dtype t = type(n.a, i);
        bool ok = true;
        switch (kind(o)) {
          case unary_kind::logical: break;
          case unary_kind::same:
            ok = t == n.type && t != dtype::f16 && !(o == unary_op::abs && t == dtype::boolean);
            break;
          case unary_kind::bits: ok = t == n.type && !is_float(t); break;
          case unary_kind::math: ok = t == n.type && (t == dtype::f32 || t == dtype::f64); break;
          case unary_kind::predicate: ok = n.type == dtype::boolean && (t == dtype::f32 || t == dtype::f64); break;
          case unary_kind::count: ok = n.type == dtype::i32 && is_integral(t); break;
          case unary_kind::reinterpret:
            ok = size_of(t) == size_of(n.type) && t != dtype::boolean && n.type != dtype::boolean;
            break;
        }
        if (!ok) invalid(fn_, i, fmt::format("applies {} to {} giving {}", name(o), name(t), name(n.type)));
        break;
      }
      case op::binary: {
        auto o = static_cast<binary_op>(n.sub);
        dtype t = type(n.a, i);
        if (type(n.b, i) != t) invalid(fn_, i, "has operands of two types");
        if (t == dtype::f16) invalid(fn_, i, "computes in f16 (f16 is storage: arithmetic promotes it to f32)");
        const bool boolean_result = is_comparison(o) || o == binary_op::logical_and || o == binary_op::logical_or;
        if (n.type != (boolean_result ? dtype::boolean : t))
          invalid(fn_, i, "has a result type that does not match its operands");
        if (!helper_defined(o, t)) invalid(fn_, i, fmt::format("applies {} to {}", name(o), name(t)));
        break;
      }
      case op::select:
        expect(n.a, dtype::boolean, i, "a condition");
        expect(n.b, n.type, i, "a first choice");
        expect(n.c, n.type, i, "a second choice");
        break;
      case op::fma:
        if (!is_float(n.type)) invalid(fn_, i, "is not floating point");
        for (id o : {n.a, n.b, n.c}) expect(o, n.type, i, "an operand");
        break;
      case op::cast: type(n.a, i); break;
      case op::bound:
        if (!is_integral(type(n.a, i)) || n.type != dtype::i32) invalid(fn_, i, "narrows a non-integer or not to i32");
        break;
      case op::global_load: access(n, i); break;
      case op::global_store:
        access(n, i);
        expect(n.a, n.type, i, "a stored value");
        break;
      case op::global_atomic:
        access(n, i);
        expect(n.a, n.type, i, "an operand");
        atomic(n, i);
        break;
      case op::local_decl: expect(n.a, n.type, i, "an initial value"); break;
      case op::local_load: expect_decl(n.a, i); break;
      case op::local_store:
        expect_decl(n.a, i);
        expect(n.b, n.type, i, "a stored value");
        break;
      case op::local_atomic:
        expect_decl(n.a, i);
        expect(n.b, n.type, i, "an operand");
        if (n.type == dtype::boolean) invalid(fn_, i, "updates a boolean atomically");
        atomic(n, i);
        break;
      case op::local_array:
        if (n.imm < 1 || n.imm > max_local_array_length) invalid(fn_, i, "has a length outside 1..4096");
        if (fn_.is_top_level(i)) invalid(fn_, i, "declares a per-thread array outside a task");
        break;
      case op::array_load: expect_array(n.a, n.b, i); break;
      case op::array_store:
        expect_array(n.a, n.b, i);
        expect(n.c, n.type, i, "a stored value");
        break;
      case op::temp_load:
      case op::temp_store:
      case op::temp_atomic:
        if (stage_ == stage::traced) invalid(fn_, i, "uses a global temporary before lowering");
        if (n.imm < 0) invalid(fn_, i, "names a negative slot");
        if (n.code != op::temp_load) expect(n.a, n.type, i, "a value");
        if (n.code == op::temp_atomic) atomic(n, i);
        break;
      case op::range_for: {
        if (n.imm < 1 || n.imm > 4) invalid(fn_, i, "has a rank outside 1..4");
        if ((n.flags & ~loop::serialize) != 0 || n.param < -1 || n.param == 0 || n.param > 1024)
          invalid(fn_, i, "has a loop configuration out of range");
        if (n.imm == 1) {
          expect(n.a, dtype::i32, i, "a begin");
          expect(n.b, dtype::i32, i, "an end");
        } else {
          if (n.list_size != n.imm) invalid(fn_, i, "has a rank other than its extent count");
          for (std::int32_t d = 0; d < n.list_size; ++d) expect(fn_.list(n, d), dtype::i32, i, "an extent");
        }
        const auto& body = fn_.block(n.block0);
        for (std::int64_t d = 0; d < n.imm; ++d) {
          if (static_cast<std::size_t>(d) >= body.size()) invalid(fn_, i, "lacks its loop indices");
          const node& index = fn_.at(body[static_cast<std::size_t>(d)]);
          if (index.code != op::loop_index || index.a != i || index.imm != d)
            invalid(fn_, i, "does not start its body with its loop indices");
        }
        break;
      }
      case op::if_: expect(n.a, dtype::boolean, i, "a condition"); break;
      case op::while_: expect(n.a, dtype::boolean, i, "a condition"); break;
      case op::random:
        if (n.type == dtype::boolean) invalid(fn_, i, "draws a boolean");
        break;
      case op::break_:
      case op::continue_: jump(n, i); break;
      case op::print:
        for (std::int32_t k = 0; k < n.list_size; ++k) {
          std::int32_t item = fn_.list(n, k);
          if (is_text(item)) {
            if (static_cast<std::size_t>(text_index(item)) >= fn_.strings.size())
              invalid(fn_, i, "prints a missing text");
          } else {
            type(item, i);
          }
        }
        break;
      case op::graph_mark: check_graph_mark(n, i); break;
    }
  }

  // A mark is a top-level statement of a traced kernel, never part of a task; loop
  // bodies and fork branches nest properly (graph_stack_ holds the open ones).
  void check_graph_mark(const node& n, id i) {
    if (stage_ != stage::traced) invalid(fn_, i, "is a graph mark inside a lowered task");
    if (!fn_.is_top_level(i)) invalid(fn_, i, "is a graph mark below the top level");
    switch (mark_of(n)) {
      case graph_mark::loop_begin: {
        const param_desc& p = param(n, i, true);
        if (p.type != dtype::i32 || p.ndim != 0) invalid(fn_, i, "has a flag other than a 0-d i32 array");
        graph_stack_.push_back(graph_mark::loop_begin);
        break;
      }
      case graph_mark::fork_begin: graph_stack_.push_back(graph_mark::fork_begin); break;
      case graph_mark::loop_end:
        if (graph_stack_.empty() || graph_stack_.back() != graph_mark::loop_begin)
          invalid(fn_, i, "ends no do_while body");
        graph_stack_.pop_back();
        break;
      case graph_mark::fork_next:
      case graph_mark::fork_end:
        if (graph_stack_.empty() || graph_stack_.back() != graph_mark::fork_begin) invalid(fn_, i, "is outside a fork");
        if (mark_of(n) == graph_mark::fork_end) graph_stack_.pop_back();
        break;
      default: invalid(fn_, i, "has an unknown graph mark");
    }
  }

  const function& fn_;
  stage stage_;
  std::vector<graph_mark> graph_stack_;
};
}  // namespace detail

QD_FUNC void verify(const function& fn, stage s) { detail::verifier(fn, s).run(); }

}  // namespace qd::inline v0::ir
