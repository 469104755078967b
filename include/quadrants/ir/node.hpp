// The flat IR: nodes in one vector, operands as integer ids, statements in blocks.
// Every node kind is listed once in QD_IR_OPS, which generates the op enum and names.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "quadrants/base/dtype.hpp"

namespace qd::ir {

using id = std::int32_t;
inline constexpr id none = -1;

// X(name, operands used) -- the operand notes document each kind's layout.
#define QD_IR_OPS(X)                                                                 \
  X(constant)      /* imm: the value's bits (int64 or double bits)                */ \
  X(arg)           /* param: scalar parameter                                     */ \
  X(shape)         /* param, imm: dimension; type i32                             */ \
  X(loop_index)    /* a: the range_for node, imm: its dimension; type i32         */ \
  X(unary)         /* sub: unary_op, a                                            */ \
  X(binary)        /* sub: binary_op, a, b                                        */ \
  X(select)        /* a ? b : c                                                   */ \
  X(fma)           /* a * b + c, one rounding                                     */ \
  X(cast)          /* a converted to type                                         */ \
  X(bound)         /* a: a loop bound wider than i32, narrowed to i32; imm: the   */ \
                   /* value used when it does not fit (the launch then fails)     */ \
  X(global_load)   /* param, flags, list: indices                                 */ \
  X(global_store)  /* param, flags, list: indices, a: value                       */ \
  X(global_atomic) /* param, flags, list: indices, sub: atomic_op, a: value; old  */ \
  X(local_decl)    /* a: initial value; the node id is the variable               */ \
  X(local_load)    /* a: local_decl                                               */ \
  X(local_store)   /* a: local_decl, b: value                                     */ \
  X(local_atomic)  /* a: local_decl, b: value, sub: atomic_op; result: old value  */ \
  X(temp_load)     /* imm: global-temporary slot (whole-kernel lowering only)     */ \
  X(temp_store)    /* imm: slot, a: value                                         */ \
  X(temp_atomic)   /* imm: slot, a: value, sub: atomic_op; result: old value      */ \
  X(range_for)     /* imm: rank; rank 1: a..b; else list: extents from 0; block0: */ \
                   /* body, starting with one loop_index per dimension            */ \
  X(if_)           /* a: condition, block0: then, block1: else                    */ \
  X(while_)        /* block0: condition block, a: its value, block1: body         */ \
  X(random)        /* type: uniform [0,1) for floats, uniform bits for integers   */ \
  X(print)         /* list: node ids, or -2 - string index for text pieces        */

enum class op : std::uint8_t {
#define QD_IR_ENUM(name) name,
  QD_IR_OPS(QD_IR_ENUM)
#undef QD_IR_ENUM
};

constexpr std::string_view name(op o) {
  switch (o) {
#define QD_IR_NAME(name) \
  case op::name:         \
    return #name;
    QD_IR_OPS(QD_IR_NAME)
#undef QD_IR_NAME
  }
  return "?";
}

#define QD_IR_UNARY_OPS(X) X(neg) X(logical_not) X(bit_not) X(sqrt) X(exp) X(log) X(sin) X(cos) X(tanh) X(abs) X(floor) X(ceil)
#define QD_IR_BINARY_OPS(X)                                                                                  \
  X(add) X(sub) X(mul) X(div) X(mod) X(min) X(max) X(pow) X(bit_and) X(bit_or) X(bit_xor) X(shl) X(shr)      \
  X(logical_and) X(logical_or) X(eq) X(ne) X(lt) X(le) X(gt) X(ge)
#define QD_IR_ATOMIC_OPS(X) X(add) X(sub) X(min) X(max)

#define QD_IR_ENUM(name) name,
enum class unary_op : std::uint8_t { QD_IR_UNARY_OPS(QD_IR_ENUM) };
enum class binary_op : std::uint8_t { QD_IR_BINARY_OPS(QD_IR_ENUM) };
enum class atomic_op : std::uint8_t { QD_IR_ATOMIC_OPS(QD_IR_ENUM) };
#undef QD_IR_ENUM

#define QD_IR_NAME(name) \
  case E::name:          \
    return #name;
constexpr std::string_view name(unary_op o) {
  using E = unary_op;
  switch (o) { QD_IR_UNARY_OPS(QD_IR_NAME) }
  return "?";
}
constexpr std::string_view name(binary_op o) {
  using E = binary_op;
  switch (o) { QD_IR_BINARY_OPS(QD_IR_NAME) }
  return "?";
}
constexpr std::string_view name(atomic_op o) {
  using E = atomic_op;
  switch (o) { QD_IR_ATOMIC_OPS(QD_IR_NAME) }
  return "?";
}
#undef QD_IR_NAME

constexpr bool is_comparison(binary_op o) {
  return o == binary_op::eq || o == binary_op::ne || o == binary_op::lt || o == binary_op::le ||
         o == binary_op::gt || o == binary_op::ge;
}

// Access flags of global_load / global_store / global_atomic.
namespace access {
inline constexpr std::uint8_t grad = 1;        // the parameter's gradient buffer
inline constexpr std::uint8_t clamp = 2;       // indices clamped into the shape
inline constexpr std::uint8_t is_volatile = 4; // qd::volatile_load: never removed or merged
}  // namespace access

struct node {
  op code = op::constant;
  dtype type = dtype::i32;
  std::uint8_t sub = 0;    // unary_op / binary_op / atomic_op
  std::uint8_t flags = 0;  // access flags
  id a = none, b = none, c = none;
  std::int32_t param = -1;
  std::int32_t list_begin = 0, list_size = 0;
  std::int32_t block0 = -1, block1 = -1;
  std::int64_t imm = 0;
};

struct param_desc {
  bool is_array = false;
  dtype type = dtype::f32;
  std::int32_t ndim = 0;
  bool needs_grad = false;
  friend constexpr bool operator==(const param_desc&, const param_desc&) = default;
};

// A kernel (or one lowered task) as flat IR. blocks[0] is the top level.
struct function {
  std::vector<param_desc> params;
  std::vector<node> nodes;
  std::vector<std::vector<id>> blocks;
  std::vector<id> block_owner;       // node owning each block; none for the top level
  std::vector<std::int32_t> node_block;  // block holding each node
  std::vector<std::int32_t> lists;   // operand lists (indices, print arguments)
  std::vector<std::string> strings;  // print text pieces
  bool is_gradient = false;          // an adjoint (autodiff) kernel

  constexpr const node& at(id i) const { return nodes[static_cast<std::size_t>(i)]; }
  constexpr node& at(id i) { return nodes[static_cast<std::size_t>(i)]; }
  constexpr const std::vector<id>& block(std::int32_t b) const { return blocks[static_cast<std::size_t>(b)]; }
  constexpr std::int32_t list(const node& n, std::int32_t k) const {
    return lists[static_cast<std::size_t>(n.list_begin + k)];
  }
  // The block of `i`'s outermost enclosing top-level statement: walks owners up.
  constexpr id top_level_statement(id i) const {
    while (node_block[static_cast<std::size_t>(i)] != 0) i = block_owner[static_cast<std::size_t>(node_block[static_cast<std::size_t>(i)])];
    return i;
  }
  constexpr bool is_top_level(id i) const { return node_block[static_cast<std::size_t>(i)] == 0; }
};

// Print-argument encoding: text pieces are stored as -2 - index into strings.
constexpr std::int32_t encode_text(std::int32_t string_index) { return -2 - string_index; }
constexpr bool is_text(std::int32_t arg) { return arg <= -2; }
constexpr std::int32_t text_index(std::int32_t arg) { return -2 - arg; }

// Nodes that produce a value usable as an operand.
constexpr bool has_value(op o) {
  switch (o) {
    case op::global_store:
    case op::local_store:
    case op::temp_store:
    case op::range_for:
    case op::if_:
    case op::while_:
    case op::print:
      return false;
    default:
      return true;
  }
}

// Pure nodes: removable when unused, and free of any observable effect.
constexpr bool is_pure(const node& n) {
  switch (n.code) {
    case op::constant:
    case op::arg:
    case op::shape:
    case op::loop_index:
    case op::unary:
    case op::binary:
    case op::select:
    case op::fma:
    case op::cast:
    case op::bound:
    case op::local_load:
    case op::temp_load:
      return true;
    case op::global_load:
      return (n.flags & access::is_volatile) == 0;
    default:
      return false;
  }
}

}  // namespace qd::ir
