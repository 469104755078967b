// Typed operand views (ir/view.hpp), per-op dispatch (ir/visit.hpp) and node copies
// (ir/copy.hpp) on hand-built IR holding every op: checked while this file compiles.
#include <doctest/doctest.h>

#include <array>
#include <type_traits>

#include "quadrants/ir/copy.hpp"
#include "quadrants/ir/serialize.hpp"
#include "quadrants/ir/visit.hpp"
#include "support/constexpr_check.hpp"

using namespace qd;
using ir::op;

namespace {

// One node of every op, nested as a kernel nests them, with the ids the checks name.
struct every_op {
  ir::function fn;
  ir::id mark, constant, arg, shape, loop, index0, index1, load, unary, binary, less, cast, bound, select, fma, store,
      atomic, decl, local_load, local_store, local_atomic, branch, brk, random, print, loop2, condition, cont,
      temp_load, temp_store, temp_atomic, array, array_load, array_store;
};

constexpr every_op build_every_op() {
  every_op e;
  ir::builder b(e.fn);
  b.add_param({false, dtype::f32, 0, false});  // #0: a scalar
  b.add_param({true, dtype::f32, 2, true});    // #1: a 2-D array with a gradient
  b.add_param({true, dtype::i32, 0, false});   // #2: a do_while flag
  e.mark = ir::emit_graph_mark(b, ir::graph_mark::loop_begin, 2);
  e.constant = b.constant_int(dtype::i32, 7);
  e.arg = b.arg(0);
  e.shape = b.shape(1, 1);
  const std::array<ir::id, 2> extents{e.constant, e.shape};
  e.loop = b.range_for_nd(extents);
  e.fn.at(e.loop).param = 128;  // block_dim
  b.push_block(e.fn.at(e.loop).block0);
  e.index0 = b.loop_index_of(e.loop, 0);
  e.index1 = b.loop_index_of(e.loop, 1);
  const std::array<ir::id, 2> at{e.index0, e.index1};
  e.load = b.global_load(1, ir::access::grad | ir::access::clamp, at);
  e.unary = b.unary(ir::unary_op::neg, dtype::f32, e.load);
  e.binary = b.binary(ir::binary_op::sub, dtype::f32, e.unary, e.arg);
  e.less = b.binary(ir::binary_op::lt, dtype::boolean, e.index0, e.shape);
  e.cast = b.cast(dtype::i64, e.index1);
  e.bound = b.bound(e.cast, 5);
  e.select = b.select(dtype::f32, e.less, e.binary, e.arg);
  e.fma = b.fma(dtype::f32, e.binary, e.arg, e.select);
  e.store = b.global_store(1, 0, at, e.fma);
  e.atomic = b.global_atomic(ir::atomic_op::max, 1, ir::access::compound, at, e.fma);
  e.decl = b.local_decl(dtype::f32, e.arg);
  e.local_load = b.local_load(e.decl);
  e.local_store = b.local_store(e.decl, e.local_load);
  e.local_atomic = b.local_atomic(ir::atomic_op::add, e.decl, e.arg);
  e.array = b.local_array(dtype::f32, 8);
  e.array_store = b.array_store(e.array, e.index1, e.local_load);
  e.array_load = b.array_load(e.array, e.index1);
  e.branch = b.if_(e.less);
  b.push_block(e.fn.at(e.branch).block0);
  e.brk = b.jump(op::break_, e.loop);
  b.pop_block();
  b.push_block(e.fn.at(e.branch).block1);
  e.random = b.random(dtype::f32);
  e.print = b.print({e.random});  // text pieces: below (GCC 12 moves no std::string at compile time)
  b.pop_block();
  e.loop2 = b.while_();
  b.push_block(e.fn.at(e.loop2).block0);
  e.condition = b.binary(ir::binary_op::lt, dtype::boolean, e.index1, e.constant);
  b.pop_block();
  e.fn.at(e.loop2).a = e.condition;
  b.push_block(e.fn.at(e.loop2).block1);
  e.cont = b.jump(op::continue_, e.loop2);
  b.pop_block();
  b.pop_block();
  e.temp_load = b.temp_load(dtype::f32, 3);
  e.temp_store = b.temp_store(dtype::f32, 4, e.temp_load);
  e.temp_atomic = b.temp_atomic(ir::atomic_op::min, dtype::f32, 5, e.temp_load);
  return e;
}

template <class Check>
constexpr bool on_every_op(Check check) {
  const every_op e = build_every_op();
  return check(e);
}

}  // namespace

// --- the layouts: complete, and consistent with the op table --------------------------

// The fixture holds every op, and each node sets only the fields its op uses.
QD_CONSTEXPR_CHECK(on_every_op([](const every_op& e) {
  std::array<bool, ir::op_count> seen{};
  for (const ir::node& n : e.fn.nodes) {
    if (!ir::stray_field(n).empty()) return false;
    seen[static_cast<std::size_t>(n.code)] = true;
  }
  for (bool s : seen)
    if (!s) return false;
  return true;
}));

// What passes derive from a layout agrees with the op's properties.
constexpr bool layouts_agree_with_op_table() {
  using ir::operand_use;
  for (std::size_t k = 0; k < ir::op_count; ++k) {
    const auto o = static_cast<op>(k);
    const ir::op_properties& p = ir::op_table[k];
    const ir::operand_layout& l = ir::layout_of(o);
    // Values own no blocks; invariant arithmetic reads values only.
    if (p.has_value && l.blocks != 0) return false;
    if (p.invariant && (l.a == operand_use::variable || l.a == operand_use::loop || l.list != ir::list_use::unused))
      return false;
    switch (p.effect) {
      case ir::effect::global_read:
      case ir::effect::global_write:
      case ir::effect::global_update:  // an array element: parameter, indices, access flags
        if (l.param != ir::param_use::array || l.list != ir::list_use::indices || l.flags != ir::flags_use::access)
          return false;
        break;
      case ir::effect::local_read:
      case ir::effect::local_update:  // a variable, named by a
        if (l.a != operand_use::variable) return false;
        break;
      case ir::effect::local_write:  // a declaration is its own variable; a store names it in a
        if ((o == op::local_decl || o == op::local_array) == (l.a == operand_use::variable)) return false;
        break;
      case ir::effect::temp_read:
      case ir::effect::temp_write:
      case ir::effect::temp_update:
        if (l.imm != ir::imm_use::slot) return false;
        break;
      case ir::effect::control:  // owns blocks, or is a jump naming its loop, or a graph mark
        if (l.blocks == 0 && l.a != operand_use::loop && l.sub != ir::sub_use::graph_mark) return false;
        if ((l.a == operand_use::loop) != ir::is_jump(o)) return false;
        break;
      case ir::effect::compute:
      case ir::effect::random_draw:
      case ir::effect::output: break;
    }
  }
  return true;
}
QD_CONSTEXPR_CHECK(layouts_agree_with_op_table());

// A field an op leaves unused is caught, with its name.
QD_CONSTEXPR_CHECK(ir::stray_field(ir::node{.code = op::random, .a = 3}) == "a");
QD_CONSTEXPR_CHECK(ir::stray_field(ir::node{.code = op::constant, .param = 0}) == "param");
QD_CONSTEXPR_CHECK(ir::stray_field(ir::node{.code = op::local_load, .a = 1, .imm = 2}) == "imm");
QD_CONSTEXPR_CHECK(ir::stray_field(ir::node{.code = op::cast, .flags = ir::access::clamp, .a = 1}) == "flags");
QD_CONSTEXPR_CHECK(ir::stray_field(ir::node{.code = op::if_, .a = 1, .block0 = 1}) == "block1");
QD_CONSTEXPR_CHECK(ir::stray_field(ir::node{.code = op::if_, .a = 1, .block0 = 1, .block1 = 2}).empty());

// --- the views name each op's operands ---------------------------------------------

QD_CONSTEXPR_CHECK(on_every_op([](const every_op& e) {
  const ir::function& fn = e.fn;
  const ir::view<op::range_for> loop(fn, e.loop);
  const ir::view<op::global_load> load(fn, e.load);
  const ir::view<op::global_store> store(fn, e.store);
  const ir::view<op::global_atomic> atomic(fn, e.atomic);
  return loop.rank() == 2 && loop.begin(0) == ir::none && loop.begin(1) == ir::none && loop.end(0) == e.constant &&
         loop.end(1) == e.shape && loop.index(1) == e.index1 && loop.block_dim() == 128 && !loop.serialized() &&
         ir::view<op::loop_index>(fn, e.index1).loop() == e.loop &&
         ir::view<op::loop_index>(fn, e.index1).dimension() == 1 && load.array() == 1 && load.grad() &&
         load.clamped() && !load.is_volatile() && load.indices().size() == 2 && load.indices()[1] == e.index1 &&
         store.value() == e.fma && !store.grad() && store.indices()[0] == e.index0 &&
         atomic.op() == ir::atomic_op::max && atomic.value() == e.fma && atomic.compound() && !atomic.owned();
}));

QD_CONSTEXPR_CHECK(on_every_op([](const every_op& e) {
  const ir::function& fn = e.fn;
  const ir::view<op::fma> fma(fn, e.fma);
  const ir::view<op::select> select(fn, e.select);
  const ir::view<op::binary> binary(fn, e.binary);
  return ir::view<op::constant>(fn, e.constant).bits() == 7 && ir::view<op::arg>(fn, e.arg).parameter() == 0 &&
         ir::view<op::shape>(fn, e.shape).array() == 1 && ir::view<op::shape>(fn, e.shape).dimension() == 1 &&
         ir::view<op::unary>(fn, e.unary).op() == ir::unary_op::neg &&
         ir::view<op::unary>(fn, e.unary).operand() == e.load && binary.op() == ir::binary_op::sub &&
         binary.lhs() == e.unary && binary.rhs() == e.arg && ir::view<op::cast>(fn, e.cast).operand() == e.index1 &&
         ir::view<op::bound>(fn, e.bound).operand() == e.cast && ir::view<op::bound>(fn, e.bound).on_overflow() == 5 &&
         select.condition() == e.less && select.if_true() == e.binary && select.if_false() == e.arg &&
         fma.multiplicand() == e.binary && fma.multiplier() == e.arg && fma.addend() == e.select &&
         fma.type() == dtype::f32 && fma.self() == e.fma && fma.code() == op::fma;
}));

QD_CONSTEXPR_CHECK(on_every_op([](const every_op& e) {
  const ir::function& fn = e.fn;
  const ir::view<op::local_atomic> update(fn, e.local_atomic);
  const ir::view<op::temp_atomic> temp(fn, e.temp_atomic);
  const ir::view<op::if_> branch(fn, e.branch);
  const ir::view<op::while_> loop2(fn, e.loop2);
  const ir::view<op::print> print(fn, e.print);
  const ir::view<op::graph_mark> mark(fn, e.mark);
  return ir::view<op::local_decl>(fn, e.decl).initial_value() == e.arg &&
         ir::view<op::local_load>(fn, e.local_load).variable() == e.decl &&
         ir::view<op::local_store>(fn, e.local_store).variable() == e.decl &&
         ir::view<op::local_store>(fn, e.local_store).value() == e.local_load && update.variable() == e.decl &&
         update.value() == e.arg && update.op() == ir::atomic_op::add &&
         ir::view<op::local_array>(fn, e.array).length() == 8 &&
         ir::view<op::array_store>(fn, e.array_store).array() == e.array &&
         ir::view<op::array_store>(fn, e.array_store).index() == e.index1 &&
         ir::view<op::array_store>(fn, e.array_store).value() == e.local_load &&
         ir::view<op::array_load>(fn, e.array_load).array() == e.array &&
         ir::view<op::array_load>(fn, e.array_load).index() == e.index1 &&
         ir::view<op::temp_load>(fn, e.temp_load).slot() == 3 &&
         ir::view<op::temp_store>(fn, e.temp_store).slot() == 4 &&
         ir::view<op::temp_store>(fn, e.temp_store).value() == e.temp_load && temp.slot() == 5 &&
         temp.op() == ir::atomic_op::min && temp.value() == e.temp_load && branch.condition() == e.less &&
         fn.block(branch.then_block()).front() == e.brk && fn.block(branch.else_block()).front() == e.random &&
         loop2.condition() == e.condition && fn.block(loop2.condition_block()).front() == e.condition &&
         fn.block(loop2.body()).front() == e.cont && ir::view<op::break_>(fn, e.brk).loop() == e.loop &&
         ir::view<op::continue_>(fn, e.cont).loop() == e.loop2 && print.args().size() == 1 &&
         print.args()[0] == e.random && mark.mark() == ir::graph_mark::loop_begin && mark.flag() == 2;
}));

// A view of a node of another op is no constant expression (and throws in checked builds).
template <bool Right>
constexpr bool store_view() {
  const every_op e = build_every_op();
  return ir::view<op::global_store>(e.fn, Right ? e.store : e.load).self() >= 0;
}
template <bool Right>
concept store_view_constant = requires {
  typename std::bool_constant<store_view<Right>()>;
};
QD_CONSTEXPR_CHECK(store_view_constant<true> && !store_view_constant<false>);

// --- match: the handler for the node's op, else R{} -----------------------------------

QD_CONSTEXPR_CHECK(on_every_op([](const every_op& e) {
  auto rank = [&](ir::id i) { return ir::match<int>(e.fn, i, [](ir::view<op::range_for> l) { return l.rank(); }); };
  return rank(e.loop) == 2 && rank(e.store) == 0 && rank(e.loop2) == 0;
}));

// The handler for an op wins over one for any node (node_view); a handler template over
// access_view<O> takes the three array accesses.
QD_CONSTEXPR_CHECK(on_every_op([](const every_op& e) {
  auto kind = [&](ir::id i) {
    return ir::match<int>(
        e.fn, i, [](ir::view<op::global_store>) { return 1; }, []<op O>(ir::access_view<O>) { return 2; },
        [](ir::node_view) { return 3; });
  };
  return kind(e.store) == 1 && kind(e.load) == 2 && kind(e.atomic) == 2 && kind(e.constant) == 3 && kind(e.loop) == 3;
}));

// --- visit: program order, into every block unless a handler skips it ------------------

QD_CONSTEXPR_CHECK(on_every_op([](const every_op& e) {
  std::vector<ir::id> walked, visited;
  ir::walk(e.fn, 0, [&](ir::id i, int) { walked.push_back(i); });
  ir::visit(e.fn, 0, [&](ir::node_view n) { visited.push_back(n.self()); });
  return walked == visited && visited.size() == e.fn.nodes.size();
}));

// A pass naming three ops sees them in nested blocks, and only them.
QD_CONSTEXPR_CHECK(on_every_op([](const every_op& e) {
  std::vector<ir::id> seen;
  ir::visit(
      e.fn, 0, [&](ir::view<op::random> r) { seen.push_back(r.self()); },
      [&](ir::view<op::break_> j) { seen.push_back(j.loop()); },
      [&](ir::view<op::continue_> j) { seen.push_back(j.loop()); });
  return seen == std::vector<ir::id>{e.loop, e.random, e.loop2};
}));

QD_CONSTEXPR_CHECK(on_every_op([](const every_op& e) {
  int count = 0;
  ir::visit(
      e.fn, 0, [&](ir::view<op::range_for>) { return ir::next::skip_blocks; }, [&](ir::node_view) { ++count; });
  int statement = 0;
  ir::visit_statement(e.fn, e.branch, [&](ir::node_view) { ++statement; });
  return count == 7 && statement == 4;  // the 8 top-level statements but the loop; the if_ and its 3 nodes
}));

// --- copy_node: a copy, statement by statement, is the same IR ------------------------

constexpr ir::function copy_of(const ir::function& from, std::int32_t shift) {
  ir::function to;
  ir::builder b(to);
  for (std::int32_t p = 0; p < shift; ++p) b.add_param({false, dtype::i32, 0, false});
  for (const ir::param_desc& p : from.params) b.add_param(p);
  std::vector<ir::id> map(from.nodes.size(), ir::none);
  auto param = [&](std::int32_t p) { return p + shift; };
  auto statement = [&](auto& self, ir::id i) -> void {
    ir::copy_node(b, from, i, map, param, [&](ir::id j) { self(self, j); });
  };
  for (ir::id i : from.block(0)) statement(statement, i);
  return to;
}

QD_CONSTEXPR_CHECK(on_every_op([](const every_op& e) {
  return ir::canonical_bytes(copy_of(e.fn, 0)) == ir::canonical_bytes(e.fn);
}));

// Parameter indices move with the parameters; a loop's block_dim, in the same field, does not.
QD_CONSTEXPR_CHECK(on_every_op([](const every_op& e) {
  const ir::function c = copy_of(e.fn, 1);
  const ir::id arg = c.block(0)[2], loop = c.block(0)[4];
  return c.at(c.block(0)[0]).param == 3 && c.at(arg).code == op::arg && c.at(arg).param == 1 &&
         c.at(loop).code == op::range_for && c.at(loop).param == 128 &&
         ir::canonical_bytes(c) != ir::canonical_bytes(e.fn);
}));

TEST_CASE("a copied print keeps its text pieces, added to the copy's strings") {
  ir::function from;
  ir::builder b(from);
  const ir::id one = b.constant_int(dtype::i32, 1);
  const ir::id print = b.print({b.add_string("one is"), one, b.add_string("!")});
  const ir::function to = copy_of(from, 0);
  CHECK(ir::canonical_bytes(to) == ir::canonical_bytes(from));
  const ir::view<op::print> copy(to, to.block(0)[1]);
  REQUIRE(copy.args().size() == 3);
  CHECK(ir::is_text(copy.args()[0]));
  CHECK(to.strings[static_cast<std::size_t>(ir::text_index(copy.args()[2]))] == "!");
  CHECK(copy.args()[1] == to.block(0)[0]);
  CHECK(ir::view<op::print>(from, print).args()[1] == one);
}

TEST_CASE("a copy of a node whose operand has none is an internal error") {
  const every_op e = build_every_op();
  ir::function to;
  ir::builder b(to);
  std::vector<ir::id> map(e.fn.nodes.size(), ir::none);
  CHECK_THROWS_WITH_AS(ir::copy_node(
                           b, e.fn, e.unary, map, [](std::int32_t p) { return p; }, [](ir::id) {}),
                       doctest::Contains("operand"), internal_error);
}
