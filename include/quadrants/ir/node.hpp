// The flat IR: nodes in one vector, operands as integer ids, statements in blocks.
// Every node kind is listed once in QD_IR_OPS, which generates the op enum and names.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "quadrants/base/dtype.hpp"
#include "quadrants/ir/source_location.hpp"

namespace qd::inline v0::ir {

using id = std::int32_t;
inline constexpr id none = -1;

// Every node kind, once, with its properties (the one place they are decided):
//   X(name, value, effect, invariant)
//   value:     yields a value usable as an operand (has_value)
//   effect:    what executing it touches (ir::effect below)
//   invariant: pure arithmetic that is recomputable anywhere from its operands
//              (top-level values built only from invariant nodes are recomputed
//              wherever they are used, never carried)
// What a, b, c, the list, param, imm, sub, flags and the blocks hold is defined in code by
// each op's view and layout (ir/view.hpp); the notes on the rows recall it.
#define QD_IR_OPS(X)                                                                                                 \
  X(constant, 1, compute, 1)            /* imm: the value's bits (int64 or double bits)                     */       \
  X(arg, 1, compute, 1)                 /* param: scalar parameter                                          */       \
  X(shape, 1, compute, 1)               /* param, imm: dimension; type i32                                  */       \
  X(loop_index, 1, compute, 0)          /* a: the range_for node, imm: its dimension; type i32              */       \
  X(unary, 1, compute, 1)               /* sub: unary_op, a                                                 */       \
  X(binary, 1, compute, 1)              /* sub: binary_op, a, b                                             */       \
  X(select, 1, compute, 1)              /* a ? b : c                                                        */       \
  X(fma, 1, compute, 1)                 /* a * b + c, one rounding                                          */       \
  X(cast, 1, compute, 1)                /* a converted to type                                              */       \
  X(bound, 1, compute, 1)               /* a: a loop bound wider than i32, narrowed to i32; imm: the value  */       \
                                        /* used when it does not fit (the launch then fails)                */       \
  X(global_load, 1, global_read, 0)     /* param, flags, list: indices                                  */           \
  X(global_store, 0, global_write, 0)   /* param, flags, list: indices, a: value                        */           \
  X(global_atomic, 1, global_update, 0) /* param, flags, list: indices, sub: atomic_op, a: value,      */            \
                                        /* c: cas's expected value; result: the old value              */            \
  X(local_decl, 1, local_write, 0)      /* a: initial value; the node id is the variable                  */         \
  X(local_load, 1, local_read, 0)       /* a: local_decl                                                  */         \
  X(local_store, 0, local_write, 0)     /* a: local_decl, b: value                                        */         \
  X(local_atomic, 1, local_update, 0)   /* a: local_decl, b: value, sub: atomic_op, c: cas's expected;  */           \
                                        /* result: the old value                                         */          \
  X(temp_load, 1, temp_read, 0)         /* imm: global-temporary slot (whole-kernel lowering only)        */         \
  X(temp_store, 0, temp_write, 0)       /* imm: slot, a: value                                            */         \
  X(temp_atomic, 1, temp_update, 0)     /* imm: slot, a: value, sub: atomic_op, c: cas's expected; old    */         \
  X(range_for, 0, control, 0)           /* imm: rank; rank 1: a..b; else list: extents from 0; block0: body,  */     \
                                        /* starting with one loop_index per dimension; flags: loop:: bits;     */    \
                                        /* param: block_dim, a GPU launch's threads per block (-1: default)    */    \
  X(if_, 0, control, 0)                 /* a: condition, block0: then, block1: else                            */    \
  X(while_, 0, control, 0)              /* block0: condition block, a: its value, block1: body                 */    \
  X(random, 1, random_draw, 0)          /* type: uniform [0,1) for floats, uniform bits for integers           */    \
  X(print, 0, output, 0)                /* list: node ids, or -2 - string index for text pieces                */    \
  X(break_, 0, control, 0)              /* a: the innermost enclosing loop (range_for or while_), which it leaves */ \
  X(continue_, 0, control, 0)           /* a: the innermost enclosing loop, whose next iteration it starts     */    \
  X(graph_mark, 0, control, 0)          /* sub: graph_mark; top level only, in no task (ir/graph_mark.hpp)  */       \
  X(local_array, 1, local_write, 0)     /* imm: length; a per-thread array of type, uninitialised; in a task */      \
  X(array_load, 1, local_read, 0)       /* a: local_array, b: index (i32, in bounds by construction)       */        \
  X(array_store, 0, local_write, 0)     /* a: local_array, b: index, c: value                              */

enum class op : std::uint8_t {
#define QD_IR_ENUM(name, value, effect, invariant) name,
  QD_IR_OPS(QD_IR_ENUM)
#undef QD_IR_ENUM
};

// What executing a node touches. Reads and writes of global memory go through
// parameters (arrays); local and temp ones through variables and slots.
enum class effect : std::uint8_t {
  compute,        // nothing: a function of its operands (and of the enclosing loop)
  local_read,     // reads a local variable
  local_write,    // writes a local variable (a declaration initialises it)
  local_update,   // atomic read-modify-write of a local variable
  temp_read,      // reads a global-temporary slot
  temp_write,     // writes a slot
  temp_update,    // atomic read-modify-write of a slot
  global_read,    // reads array memory (an effect when volatile)
  global_write,   // writes array memory
  global_update,  // atomic read-modify-write of array memory
  random_draw,    // advances the random stream: removable, but never recomputed
  output,         // prints
  control,        // owns blocks (loops and branches), or jumps out of a loop (break_, continue_)
};

struct op_properties {
  std::string_view name;
  bool has_value;
  ir::effect effect;
  bool invariant;
};

inline constexpr op_properties op_table[] = {
#define QD_IR_ROW(name, value, eff, invariant) {#name, (value) != 0, effect::eff, (invariant) != 0},
    QD_IR_OPS(QD_IR_ROW)
#undef QD_IR_ROW
};
inline constexpr std::size_t op_count = sizeof(op_table) / sizeof(op_table[0]);

// The most elements a local_array may hold (it lives in a thread's stack or registers).
inline constexpr std::int64_t max_local_array_length = 4096;

constexpr const op_properties& properties(op o) { return op_table[static_cast<std::size_t>(o)]; }
constexpr std::string_view name(op o) { return properties(o).name; }

// Sub-ops of unary, binary and the atomics (appended as they arrived: the values are
// part of serialized IR). unary_kind and binary_kind below say what each takes.
// clang-format off
#define QD_IR_UNARY_OPS(X)                                                                                   \
  X(neg) X(logical_not) X(bit_not) X(sqrt) X(exp) X(log) X(sin) X(cos) X(tanh) X(abs) X(floor) X(ceil)      \
  X(tan) X(asin) X(acos) X(rsqrt) X(log2) X(exp2) X(round) X(trunc) X(isnan) X(isinf) X(isfinite)          \
  X(popcnt) X(clz) X(ffs) X(bit_cast)
#define QD_IR_BINARY_OPS(X)                                                                                  \
  X(add) X(sub) X(mul) X(div) X(mod) X(min) X(max) X(pow) X(bit_and) X(bit_or) X(bit_xor) X(shl) X(shr)      \
  X(logical_and) X(logical_or) X(eq) X(ne) X(lt) X(le) X(gt) X(ge) X(atan2) X(fmod) X(floordiv) X(floormod)
// clang-format on
// cas: the node's operand c is the expected value (global_atomic, local_atomic and
// temp_atomic alike); the node's value is the old one, as for every atomic.
#define QD_IR_ATOMIC_OPS(X) X(add) X(sub) X(min) X(max) X(mul) X(bit_and) X(bit_or) X(bit_xor) X(exchange) X(cas)

#define QD_IR_ENUM(name) name,
enum class unary_op : std::uint8_t { QD_IR_UNARY_OPS(QD_IR_ENUM) };
enum class binary_op : std::uint8_t { QD_IR_BINARY_OPS(QD_IR_ENUM) };
enum class atomic_op : std::uint8_t { QD_IR_ATOMIC_OPS(QD_IR_ENUM) };
#undef QD_IR_ENUM

#define QD_IR_COUNT(name) +1
inline constexpr int unary_op_count = 0 QD_IR_UNARY_OPS(QD_IR_COUNT);
inline constexpr int binary_op_count = 0 QD_IR_BINARY_OPS(QD_IR_COUNT);
inline constexpr int atomic_op_count = 0 QD_IR_ATOMIC_OPS(QD_IR_COUNT);
#undef QD_IR_COUNT

#define QD_IR_NAME(name) \
  case E::name: return #name;
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
  return o == binary_op::eq || o == binary_op::ne || o == binary_op::lt || o == binary_op::le || o == binary_op::gt ||
         o == binary_op::ge;
}

// What a unary sub-op applies to and gives.
enum class unary_kind : std::uint8_t {
  same,        // neg, abs: any number, the same type
  logical,     // logical_not: a boolean
  bits,        // bit_not: an integer, the same type
  math,        // a float function: f32 or f64, the same type
  predicate,   // isnan, isinf, isfinite: f32 or f64, a boolean
  count,       // popcnt, clz, ffs: an integer, an i32
  reinterpret  // bit_cast: the bits as another type of the same size
};
constexpr unary_kind kind(unary_op o) {
  switch (o) {
    case unary_op::neg:
    case unary_op::abs: return unary_kind::same;
    case unary_op::logical_not: return unary_kind::logical;
    case unary_op::bit_not: return unary_kind::bits;
    case unary_op::isnan:
    case unary_op::isinf:
    case unary_op::isfinite: return unary_kind::predicate;
    case unary_op::popcnt:
    case unary_op::clz:
    case unary_op::ffs: return unary_kind::count;
    case unary_op::bit_cast: return unary_kind::reinterpret;
    case unary_op::sqrt:
    case unary_op::exp:
    case unary_op::log:
    case unary_op::sin:
    case unary_op::cos:
    case unary_op::tanh:
    case unary_op::floor:
    case unary_op::ceil:
    case unary_op::tan:
    case unary_op::asin:
    case unary_op::acos:
    case unary_op::rsqrt:
    case unary_op::log2:
    case unary_op::exp2:
    case unary_op::round:
    case unary_op::trunc: return unary_kind::math;
  }
  return unary_kind::math;
}

// Atomics that only integers have (a C++ compile error on floats in the DSL).
constexpr bool is_bitwise(atomic_op o) {
  return o == atomic_op::bit_and || o == atomic_op::bit_or || o == atomic_op::bit_xor;
}

// Access flags of global_load / global_store / global_atomic.
namespace access {
inline constexpr std::uint8_t grad = 1;         // the parameter's gradient buffer
inline constexpr std::uint8_t clamp = 2;        // indices clamped into the shape
inline constexpr std::uint8_t is_volatile = 4;  // qd::volatile_load: never removed or merged
inline constexpr std::uint8_t compound = 8;     // global_atomic of `x[i] += v` in a parallel construct
inline constexpr std::uint8_t owned = 16;       // ... that each iteration owns: a plain read-modify-write
                                                // (analysis/atomic_demotion.hpp)
}  // namespace access

// Flags of print.
namespace print_flags {
inline constexpr std::uint8_t assertion = 1;  // a failed qd::assert_ (imm: its number): the launch's error
                                              // record reports it (parameter -1); nothing is printed
}  // namespace print_flags

// Flags of range_for (qd::loop_config).
namespace loop {
inline constexpr std::uint8_t serialize = 1;  // runs in order on one thread: a top-level loop is no construct
}  // namespace loop

// break_ and continue_: their loop is operand a.
constexpr bool is_jump(op o) { return o == op::break_ || o == op::continue_; }

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
  std::vector<id> block_owner;           // node owning each block; none for the top level
  std::vector<std::int32_t> node_block;  // block holding each node
  std::vector<std::int32_t> lists;       // operand lists (indices, print arguments)
  std::vector<std::string> strings;      // print text pieces
  bool is_gradient = false;              // an adjoint (autodiff) kernel
  // Where the user wrote the nodes, as runs of consecutive node ids sorted by `first`
  // (recorded only when the location changes, so tracing pays per statement, not per
  // node). Not part of the canonical bytes: cache keys do not change when code moves.
  std::vector<source_run> locs;
  bool has_mesh = false;  // has a qd::mesh_for (lang/mesh_param.hpp): stays whole (`mesh`)

  constexpr const node& at(id i) const { return nodes[static_cast<std::size_t>(i)]; }
  constexpr node& at(id i) { return nodes[static_cast<std::size_t>(i)]; }
  constexpr const std::vector<id>& block(std::int32_t b) const { return blocks[static_cast<std::size_t>(b)]; }
  constexpr std::int32_t list(const node& n, std::int32_t k) const {
    return lists[static_cast<std::size_t>(n.list_begin + k)];
  }
  // The block of `i`'s outermost enclosing top-level statement: walks owners up.
  constexpr id top_level_statement(id i) const {
    while (node_block[static_cast<std::size_t>(i)] != 0)
      i = block_owner[static_cast<std::size_t>(node_block[static_cast<std::size_t>(i)])];
    return i;
  }
  constexpr bool is_top_level(id i) const { return node_block[static_cast<std::size_t>(i)] == 0; }
  constexpr source_loc location(id i) const {
    if (i < 0 || static_cast<std::size_t>(i) >= nodes.size()) return {};
    auto after = std::upper_bound(locs.begin(), locs.end(), i, [](id v, const source_run& r) { return v < r.first; });
    return after == locs.begin() ? source_loc{} : std::prev(after)->loc;
  }
};

// Print-argument encoding: text pieces are stored as -2 - index into strings.
constexpr std::int32_t encode_text(std::int32_t string_index) { return -2 - string_index; }
constexpr bool is_text(std::int32_t arg) { return arg <= -2; }
constexpr std::int32_t text_index(std::int32_t arg) { return -2 - arg; }

// Nodes that produce a value usable as an operand.
constexpr bool has_value(op o) { return properties(o).has_value; }

// Pure nodes: removable when unused, and free of any observable effect.
constexpr bool is_pure(const node& n) {
  switch (properties(n.code).effect) {
    case effect::compute:
    case effect::local_read:
    case effect::temp_read: return true;
    case effect::global_read: return (n.flags & access::is_volatile) == 0;
    case effect::local_write:
    case effect::local_update:
    case effect::temp_write:
    case effect::temp_update:
    case effect::global_write:
    case effect::global_update:
    case effect::random_draw:
    case effect::output:
    case effect::control: return false;
  }
  return false;
}

// Effects are roots of liveness: dead-code elimination keeps them and what they
// use. Random draws and local updates are removable: an unused draw changes
// nothing but the draw counter, identically in every variant.
constexpr bool is_liveness_root(const node& n) {
  switch (properties(n.code).effect) {
    case effect::global_write:
    case effect::global_update:
    case effect::temp_write:
    case effect::temp_update:
    case effect::output: return true;
    case effect::global_read: return (n.flags & access::is_volatile) != 0;
    case effect::compute:
    case effect::local_read:
    case effect::local_write:
    case effect::local_update:
    case effect::temp_read:
    case effect::random_draw:
    case effect::control: return false;
  }
  return false;
}

// Pure arithmetic whose value depends only on its operands (the top-level values a construct may recompute).
constexpr bool is_invariant(op o) { return properties(o).invariant; }

}  // namespace qd::inline v0::ir
