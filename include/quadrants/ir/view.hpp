// Typed operand views: what each field of a node means, per op, written once. A view
// names an op's operands (store.value(), load.indices()); layout_of(op) lists its fields.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

#include "quadrants/base/api.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/ir/graph_mark.hpp"
#include "quadrants/ir/node.hpp"

namespace qd::inline v0::ir {

// What each field of ir::node holds for one op. A field an op does not use keeps the
// node's default (none, 0, -1): the verifier checks it, and canonical bytes rely on it.
enum class operand_use : std::uint8_t {  // a, b, c
  unused,
  value,     // a node with a value, read as an operand
  variable,  // a local_decl (a local_array for array_load/array_store): the variable read or written
  loop,      // the range_for a loop_index counts, or the loop a jump leaves or restarts
};
enum class list_use : std::uint8_t { unused, indices, extents, print_args };
enum class param_use : std::uint8_t {
  unused,
  scalar,      // a scalar parameter's index
  array,       // an array parameter's index
  flag_array,  // an array parameter's index, when the op's sub says it has one
  block_dim,   // not a parameter: a GPU launch's threads per block (-1: the default)
};
enum class imm_use : std::uint8_t {
  unused,
  bits,
  dimension,
  slot,
  rank,
  on_overflow,
  fork_kind,
  assertion_number,
  length
};
enum class sub_use : std::uint8_t { unused, unary_op, binary_op, atomic_op, graph_mark };
enum class flags_use : std::uint8_t { unused, access, loop, print };

struct operand_layout {
  operand_use a = operand_use::unused, b = operand_use::unused, c = operand_use::unused;
  list_use list = list_use::unused;
  param_use param = param_use::unused;
  imm_use imm = imm_use::unused;
  sub_use sub = sub_use::unused;
  flags_use flags = flags_use::unused;
  std::int32_t blocks = 0;  // owned blocks: block0, then block1
};

// Whether the param field holds a parameter index (copies into another function renumber it).
constexpr bool names_parameter(param_use p) {
  return p == param_use::scalar || p == param_use::array || p == param_use::flag_array;
}

// Any node: what every op has. The base of every view<op::X>, so a handler taking a
// node_view accepts the ops no other handler names (ir/visit.hpp).
class node_view {
 public:
  constexpr node_view(const function& fn, id i) : fn_(&fn), id_(i) {}
  constexpr id self() const { return id_; }
  constexpr const ir::node& node() const { return fn_->at(id_); }
  constexpr op code() const { return node().code; }
  constexpr dtype type() const { return node().type; }
  constexpr const function& fn() const { return *fn_; }

 protected:
  const function* fn_;
  id id_;
};

// A node of op O, as its operands' meaning; specialized for every op below.
template <op O>
struct view;

namespace detail {

// The raw fields of a node of op O. Each is readable only where view<O>::layout uses it,
// so an accessor cannot read a field its op leaves unused.
template <op O>
class op_view : public node_view {
 public:
  static constexpr op code_of = O;
  constexpr op_view(const function& fn, id i) : node_view(fn, i) {
    if ((std::is_constant_evaluated() || qd::detail::checked_build) && fn.at(i).code != O)
      throw internal_error("ir::view<op::" + std::string(name(O)) + "> of node " + std::to_string(i) + ", a " +
                           std::string(name(fn.at(i).code)) + " (a bug in Quadrants; please report it)");
  }

 protected:
  static constexpr const operand_layout& fields() { return view<O>::layout; }
  constexpr id a() const {
    static_assert(fields().a != operand_use::unused, "this op does not use operand a");
    return node().a;
  }
  constexpr id b() const {
    static_assert(fields().b != operand_use::unused, "this op does not use operand b");
    return node().b;
  }
  constexpr id c() const {
    static_assert(fields().c != operand_use::unused, "this op does not use operand c");
    return node().c;
  }
  constexpr std::span<const std::int32_t> list() const {
    static_assert(fields().list != list_use::unused, "this op has no operand list");
    const ir::node& n = node();
    if (n.list_size == 0) return {};
    return {fn_->lists.data() + n.list_begin, static_cast<std::size_t>(n.list_size)};
  }
  constexpr std::int32_t param() const {
    static_assert(fields().param != param_use::unused, "this op does not use param");
    return node().param;
  }
  constexpr std::int64_t imm() const {
    static_assert(fields().imm != imm_use::unused, "this op does not use imm");
    return node().imm;
  }
  constexpr std::uint8_t sub() const {
    static_assert(fields().sub != sub_use::unused, "this op has no sub-op");
    return node().sub;
  }
  constexpr std::uint8_t flags() const {
    static_assert(fields().flags != flags_use::unused, "this op has no flags");
    return node().flags;
  }
  constexpr std::int32_t block0() const {
    static_assert(fields().blocks >= 1, "this op owns no block");
    return node().block0;
  }
  constexpr std::int32_t block1() const {
    static_assert(fields().blocks >= 2, "this op owns one block at most");
    return node().block1;
  }
};

}  // namespace detail

// What global_load, global_store and global_atomic share: an element of an array
// parameter. A handler taking access_view<O> (O deduced) takes all three.
template <op O>
class access_view : public detail::op_view<O> {
 public:
  using detail::op_view<O>::op_view;
  constexpr std::int32_t array() const { return this->param(); }
  constexpr std::span<const id> indices() const { return this->list(); }  // one per dimension
  constexpr std::uint8_t access_flags() const { return this->flags(); }
  constexpr bool grad() const { return (this->flags() & access::grad) != 0; }  // the gradient buffer
  constexpr bool clamped() const { return (this->flags() & access::clamp) != 0; }
  constexpr bool is_volatile() const { return (this->flags() & access::is_volatile) != 0; }
};

// What break_ and continue_ share.
template <op O>
class jump_view : public detail::op_view<O> {
 public:
  using detail::op_view<O>::op_view;
  constexpr id loop() const { return this->a(); }  // the innermost enclosing range_for or while_
};

// --- values ------------------------------------------------------------------------
template <>
struct view<op::constant> : detail::op_view<op::constant> {
  using op_view::op_view;
  static constexpr operand_layout layout{.imm = imm_use::bits};
  constexpr std::int64_t bits() const { return imm(); }  // an integer's value, a float's IEEE bits
};

template <>
struct view<op::arg> : detail::op_view<op::arg> {
  using op_view::op_view;
  static constexpr operand_layout layout{.param = param_use::scalar};
  constexpr std::int32_t parameter() const { return param(); }
};

// An array's extent, type i32.
template <>
struct view<op::shape> : detail::op_view<op::shape> {
  using op_view::op_view;
  static constexpr operand_layout layout{.param = param_use::array, .imm = imm_use::dimension};
  constexpr std::int32_t array() const { return param(); }
  constexpr std::int64_t dimension() const { return imm(); }
};

// A loop's index in one dimension, type i32; the first statements of the loop's body.
template <>
struct view<op::loop_index> : detail::op_view<op::loop_index> {
  using op_view::op_view;
  static constexpr operand_layout layout{.a = operand_use::loop, .imm = imm_use::dimension};
  constexpr id loop() const { return a(); }
  constexpr std::int32_t dimension() const { return static_cast<std::int32_t>(imm()); }
};

template <>
struct view<op::unary> : detail::op_view<op::unary> {
  using op_view::op_view;
  static constexpr operand_layout layout{.a = operand_use::value, .sub = sub_use::unary_op};
  constexpr unary_op op() const { return static_cast<unary_op>(sub()); }
  constexpr id operand() const { return a(); }
};

template <>
struct view<op::binary> : detail::op_view<op::binary> {
  using op_view::op_view;
  static constexpr operand_layout layout{.a = operand_use::value, .b = operand_use::value, .sub = sub_use::binary_op};
  constexpr binary_op op() const { return static_cast<binary_op>(sub()); }
  constexpr id lhs() const { return a(); }
  constexpr id rhs() const { return b(); }
};

template <>
struct view<op::select> : detail::op_view<op::select> {
  using op_view::op_view;
  static constexpr operand_layout layout{.a = operand_use::value, .b = operand_use::value, .c = operand_use::value};
  constexpr id condition() const { return a(); }
  constexpr id if_true() const { return b(); }
  constexpr id if_false() const { return c(); }
};

// multiplicand * multiplier + addend, rounded once.
template <>
struct view<op::fma> : detail::op_view<op::fma> {
  using op_view::op_view;
  static constexpr operand_layout layout{.a = operand_use::value, .b = operand_use::value, .c = operand_use::value};
  constexpr id multiplicand() const { return a(); }
  constexpr id multiplier() const { return b(); }
  constexpr id addend() const { return c(); }
};

// The operand converted to the node's type.
template <>
struct view<op::cast> : detail::op_view<op::cast> {
  using op_view::op_view;
  static constexpr operand_layout layout{.a = operand_use::value};
  constexpr id operand() const { return a(); }
};

// A loop bound wider than i32 narrowed to i32; on_overflow is used when it does not fit
// (the launch then fails).
template <>
struct view<op::bound> : detail::op_view<op::bound> {
  using op_view::op_view;
  static constexpr operand_layout layout{.a = operand_use::value, .imm = imm_use::on_overflow};
  constexpr id operand() const { return a(); }
  constexpr std::int64_t on_overflow() const { return imm(); }
};

// A uniform draw: [0, 1) for floats, uniform bits for integers.
template <>
struct view<op::random> : detail::op_view<op::random> {
  using op_view::op_view;
  static constexpr operand_layout layout{};
};

// --- array memory ------------------------------------------------------------------
template <>
struct view<op::global_load> : access_view<op::global_load> {
  using access_view::access_view;
  static constexpr operand_layout layout{
      .list = list_use::indices, .param = param_use::array, .flags = flags_use::access};
};

template <>
struct view<op::global_store> : access_view<op::global_store> {
  using access_view::access_view;
  static constexpr operand_layout layout{
      .a = operand_use::value, .list = list_use::indices, .param = param_use::array, .flags = flags_use::access};
  constexpr id value() const { return a(); }
};

// Yields the element's old value.
template <>
struct view<op::global_atomic> : access_view<op::global_atomic> {
  using access_view::access_view;
  static constexpr operand_layout layout{.a = operand_use::value,
                                         .c = operand_use::value,
                                         .list = list_use::indices,
                                         .param = param_use::array,
                                         .sub = sub_use::atomic_op,
                                         .flags = flags_use::access};
  constexpr atomic_op op() const { return static_cast<atomic_op>(sub()); }
  constexpr id value() const { return a(); }
  constexpr id expected() const { return c(); }                                  // atomic_op::cas only; else none
  constexpr bool compound() const { return (flags() & access::compound) != 0; }  // traced from `x[i] += v`
  constexpr bool owned() const { return (flags() & access::owned) != 0; }        // demoted: a plain update
};

// --- local variables: the local_decl node is the variable ----------------------------
template <>
struct view<op::local_decl> : detail::op_view<op::local_decl> {
  using op_view::op_view;
  static constexpr operand_layout layout{.a = operand_use::value};
  constexpr id initial_value() const { return a(); }
};

template <>
struct view<op::local_load> : detail::op_view<op::local_load> {
  using op_view::op_view;
  static constexpr operand_layout layout{.a = operand_use::variable};
  constexpr id variable() const { return a(); }
};

template <>
struct view<op::local_store> : detail::op_view<op::local_store> {
  using op_view::op_view;
  static constexpr operand_layout layout{.a = operand_use::variable, .b = operand_use::value};
  constexpr id variable() const { return a(); }
  constexpr id value() const { return b(); }
};

// Yields the variable's old value.
template <>
struct view<op::local_atomic> : detail::op_view<op::local_atomic> {
  using op_view::op_view;
  static constexpr operand_layout layout{
      .a = operand_use::variable, .b = operand_use::value, .c = operand_use::value, .sub = sub_use::atomic_op};
  constexpr atomic_op op() const { return static_cast<atomic_op>(sub()); }
  constexpr id variable() const { return a(); }
  constexpr id value() const { return b(); }
  constexpr id expected() const { return c(); }  // atomic_op::cas only; else none
};

// --- per-thread arrays: the local_array node is the array ----------------------------
// Made by transformations only (the adjoint's value stacks, autodiff/adjoint-inl.hpp), never
// by tracing: declared inside a task (the verifier refuses one at the top level), so no
// temporary slot or frame carries one; every index is in bounds by construction.
template <>
struct view<op::local_array> : detail::op_view<op::local_array> {
  using op_view::op_view;
  static constexpr operand_layout layout{.imm = imm_use::length};
  constexpr std::int64_t length() const { return imm(); }
};

template <>
struct view<op::array_load> : detail::op_view<op::array_load> {
  using op_view::op_view;
  static constexpr operand_layout layout{.a = operand_use::variable, .b = operand_use::value};
  constexpr id array() const { return a(); }
  constexpr id index() const { return b(); }
};

template <>
struct view<op::array_store> : detail::op_view<op::array_store> {
  using op_view::op_view;
  static constexpr operand_layout layout{.a = operand_use::variable, .b = operand_use::value, .c = operand_use::value};
  constexpr id array() const { return a(); }
  constexpr id index() const { return b(); }
  constexpr id value() const { return c(); }
};

// --- global temporaries: 8-byte slots, after whole-kernel lowering only -------------
template <>
struct view<op::temp_load> : detail::op_view<op::temp_load> {
  using op_view::op_view;
  static constexpr operand_layout layout{.imm = imm_use::slot};
  constexpr std::int64_t slot() const { return imm(); }
};

template <>
struct view<op::temp_store> : detail::op_view<op::temp_store> {
  using op_view::op_view;
  static constexpr operand_layout layout{.a = operand_use::value, .imm = imm_use::slot};
  constexpr std::int64_t slot() const { return imm(); }
  constexpr id value() const { return a(); }
};

// Yields the slot's old value.
template <>
struct view<op::temp_atomic> : detail::op_view<op::temp_atomic> {
  using op_view::op_view;
  static constexpr operand_layout layout{
      .a = operand_use::value, .c = operand_use::value, .imm = imm_use::slot, .sub = sub_use::atomic_op};
  constexpr atomic_op op() const { return static_cast<atomic_op>(sub()); }
  constexpr std::int64_t slot() const { return imm(); }
  constexpr id value() const { return a(); }
  constexpr id expected() const { return c(); }  // atomic_op::cas only; else none
};

// --- control flow ------------------------------------------------------------------
// A loop over [begin, end) (rank 1: a..b) or [0, e0) x ... x [0, eN-1) (list: extents),
// row-major. Its body starts with one loop_index per dimension.
template <>
struct view<op::range_for> : detail::op_view<op::range_for> {
  using op_view::op_view;
  static constexpr operand_layout layout{.a = operand_use::value,
                                         .b = operand_use::value,
                                         .list = list_use::extents,
                                         .param = param_use::block_dim,
                                         .imm = imm_use::rank,
                                         .flags = flags_use::loop,
                                         .blocks = 1};
  constexpr std::int32_t rank() const { return static_cast<std::int32_t>(imm()); }
  constexpr id begin(std::int32_t dim = 0) const { return rank() == 1 && dim == 0 ? a() : none; }  // none: 0
  constexpr id end(std::int32_t dim = 0) const { return rank() == 1 ? b() : list()[static_cast<std::size_t>(dim)]; }
  constexpr std::int32_t body() const { return block0(); }
  constexpr id index(std::int32_t dim = 0) const { return fn_->block(body())[static_cast<std::size_t>(dim)]; }
  constexpr std::uint8_t loop_flags() const { return flags(); }
  constexpr bool serialized() const { return (flags() & loop::serialize) != 0; }  // runs in order, no construct
  constexpr std::int32_t block_dim() const { return param(); }                    // -1: the backend's default
};

template <>
struct view<op::if_> : detail::op_view<op::if_> {
  using op_view::op_view;
  static constexpr operand_layout layout{.a = operand_use::value, .blocks = 2};
  constexpr id condition() const { return a(); }
  constexpr std::int32_t then_block() const { return block0(); }
  constexpr std::int32_t else_block() const { return block1(); }
};

// Runs its condition block, then, while the condition holds, its body and again.
template <>
struct view<op::while_> : detail::op_view<op::while_> {
  using op_view::op_view;
  static constexpr operand_layout layout{.a = operand_use::value, .blocks = 2};
  constexpr std::int32_t condition_block() const { return block0(); }
  constexpr id condition() const { return a(); }  // computed by the condition block
  constexpr std::int32_t body() const { return block1(); }
};

template <>
struct view<op::break_> : jump_view<op::break_> {
  using jump_view::jump_view;
  static constexpr operand_layout layout{.a = operand_use::loop};
};

template <>
struct view<op::continue_> : jump_view<op::continue_> {
  using jump_view::jump_view;
  static constexpr operand_layout layout{.a = operand_use::loop};
};

// --- output and graph structure ----------------------------------------------------
template <>
struct view<op::print> : detail::op_view<op::print> {
  using op_view::op_view;
  static constexpr operand_layout layout{
      .list = list_use::print_args, .imm = imm_use::assertion_number, .flags = flags_use::print};
  // Node ids, or text pieces (is_text; the string is fn().strings[text_index(arg)]).
  constexpr std::span<const std::int32_t> args() const { return list(); }
  // A failed qd::assert_ (reported through the launch's error record, not printed), and its number.
  constexpr bool assertion() const { return (flags() & print_flags::assertion) != 0; }
  constexpr std::int64_t assertion_number() const { return imm(); }
};

// A top-level statement in no task (ir/graph_mark.hpp).
template <>
struct view<op::graph_mark> : detail::op_view<op::graph_mark> {
  using op_view::op_view;
  static constexpr operand_layout layout{
      .param = param_use::flag_array, .imm = imm_use::fork_kind, .sub = sub_use::graph_mark};
  constexpr ir::graph_mark mark() const { return static_cast<ir::graph_mark>(sub()); }
  constexpr std::int32_t flag() const { return param(); }  // loop_begin: the 0-d i32 flag array
  constexpr ir::fork_kind fork() const { return static_cast<ir::fork_kind>(imm()); }  // fork_begin
};

// Every op of QD_IR_OPS has its view: a new op fails here until it gets one.
namespace detail {
template <op O>
concept has_view = requires {
  view<O>::layout;
};
}  // namespace detail
#define QD_IR_HAS_VIEW(name, ...) \
  static_assert(detail::has_view<op::name>, "op '" #name "' has no ir::view<op::" #name "> in ir/view.hpp");
QD_IR_OPS(QD_IR_HAS_VIEW)
#undef QD_IR_HAS_VIEW

inline constexpr operand_layout op_layouts[] = {
#define QD_IR_LAYOUT(name, ...) view<op::name>::layout,
    QD_IR_OPS(QD_IR_LAYOUT)
#undef QD_IR_LAYOUT
};

constexpr const operand_layout& layout_of(op o) { return op_layouts[static_cast<std::size_t>(o)]; }

// The first field `n` sets that its op does not use ("" when none): such a field would
// be hashed into cache keys and ignored by every pass.
constexpr std::string_view stray_field(const node& n) {
  const operand_layout& l = layout_of(n.code);
  if (l.a == operand_use::unused && n.a != none) return "a";
  if (l.b == operand_use::unused && n.b != none) return "b";
  if (l.c == operand_use::unused && n.c != none) return "c";
  if (l.list == list_use::unused && n.list_size != 0) return "list";
  if (l.param == param_use::unused && n.param != -1) return "param";
  if (l.imm == imm_use::unused && n.imm != 0) return "imm";
  if (l.sub == sub_use::unused && n.sub != 0) return "sub";
  if (l.flags == flags_use::unused && n.flags != 0) return "flags";
  if ((l.blocks >= 1) != (n.block0 >= 0)) return "block0";
  if ((l.blocks >= 2) != (n.block1 >= 0)) return "block1";
  return {};
}

}  // namespace qd::inline v0::ir
