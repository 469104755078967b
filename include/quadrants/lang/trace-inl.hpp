// Implementation of lang/trace.hpp.
#pragma once

#include <algorithm>
#include <bit>
#include <cstring>
#include <exception>
#include <limits>

#include "quadrants/base/error.hpp"
#include "quadrants/base/float_to_int.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/ir/nesting.hpp"
#include "quadrants/ir/printer.hpp"
#include "quadrants/lang/loop_control.hpp"
#include "quadrants/lang/trace.hpp"

namespace qd::inline v0::detail {

QD_FUNC tracer::tracer(std::string kernel_name, std::vector<std::string> names)
    : b(fn), kernel(std::move(kernel_name)), param_names(std::move(names)) {}

QD_FUNC std::string tracer::param_label(std::int32_t param) const {
  std::string type = ir::describe(fn.params[static_cast<std::size_t>(param)]);
  if (static_cast<std::size_t>(param) < param_names.size() && !param_names[static_cast<std::size_t>(param)].empty())
    return fmt::format("parameter '{}' (#{}, {})", param_names[static_cast<std::size_t>(param)], param, type);
  return fmt::format("parameter #{} ({})", param, type);
}

QD_FUNC trace_scope::trace_scope(tracer& t) : previous_(active_tracer) { active_tracer = &t; }
QD_FUNC trace_scope::~trace_scope() { active_tracer = previous_; }

QD_FUNC void throw_outside_kernel() {
  throw user_error(
      "Quadrants DSL operation used outside a kernel body: qd::var, array indexing, qd::range_for and "
      "friends only work inside the lambda given to qd::kernel, while it is traced");
}

QD_FUNC void set_location(const char* file, std::uint32_t line) noexcept {
  if (active_tracer != nullptr) active_tracer->b.set_location({file, line});
}

QD_FUNC std::string location_prefix() {
  if (active_tracer == nullptr || !active_tracer->b.location().known()) return {};
  return ir::to_text(active_tracer->b.location()) + ": ";
}

QD_FUNC void throw_trace_error(const std::string& what) {
  throw user_error(fmt::format("{}kernel '{}': {}", location_prefix(), current_tracer().kernel, what));
}

QD_FUNC void throw_bound_literal(const std::string& value) {
  throw_trace_error(
      fmt::format("a qd::range_for bound of {} does not fit in qd::i32: loop indices are 32-bit, so split "
                  "the iteration space into loops of at most 2147483647 iterations",
                  value));
}

QD_FUNC dtype type_of(ir::id v) { return current_tracer().fn.at(v).type; }

QD_FUNC std::int32_t current_block() { return current_tracer().b.current_block(); }

QD_FUNC void check_rebind(std::int32_t handle_block) {
  if (current_tracer().b.current_block() != handle_block)
    throw_trace_error(
        "a qd::f32/qd::i32/... handle declared outside a qd::if_, qd::range_for or qd::while_ body is assigned "
        "inside it; traced values are immutable, so this would not change the value at run time. Declare a "
        "qd::var<T> for a variable the kernel mutates");
}

QD_FUNC ir::id emit_int_constant(dtype t, std::int64_t value) {
  auto& b = current_tracer().b;
  if (is_float(t)) return b.constant_float(t, static_cast<double>(value));
  switch (t) {
    case dtype::boolean: value = value != 0; break;
    case dtype::u8: value = static_cast<std::uint8_t>(value); break;
    case dtype::i8: value = static_cast<std::int8_t>(value); break;
    case dtype::i16: value = static_cast<std::int16_t>(value); break;
    case dtype::u16: value = static_cast<std::uint16_t>(value); break;
    case dtype::i32: value = static_cast<std::int32_t>(value); break;
    case dtype::u32: value = static_cast<std::uint32_t>(value); break;
    case dtype::f16:
    case dtype::f32:
    case dtype::f64:
    case dtype::i64:
    case dtype::u64: break;
  }
  return b.constant_int(t, value);
}

// A C++ floating literal converted to t as a run-time cast would (qd::cast<qd::i32>(1e30)).
QD_FUNC ir::id emit_float_constant(dtype t, double value) {
  switch (t) {
    case dtype::f16:
    case dtype::f32:
    case dtype::f64: return current_tracer().b.constant_float(t, value);
    case dtype::boolean: return emit_int_constant(t, value != 0.0);
    case dtype::u8: return emit_int_constant(t, float_to_int<std::uint8_t>(value));
    case dtype::i8: return emit_int_constant(t, float_to_int<std::int8_t>(value));
    case dtype::i16: return emit_int_constant(t, float_to_int<std::int16_t>(value));
    case dtype::u16: return emit_int_constant(t, float_to_int<std::uint16_t>(value));
    case dtype::i32: return emit_int_constant(t, float_to_int<std::int32_t>(value));
    case dtype::u32: return emit_int_constant(t, float_to_int<std::uint32_t>(value));
    case dtype::i64: return emit_int_constant(t, float_to_int<std::int64_t>(value));
    case dtype::u64: return emit_int_constant(t, static_cast<std::int64_t>(float_to_int<std::uint64_t>(value)));
  }
  return emit_int_constant(t, 0);
}

// convert with the tracer at hand.
QD_FUNC ir::id convert_in(tracer& t, ir::id v, dtype to) {
  if (t.fn.at(v).type == to) return v;
  return t.b.cast(to, v);
}

QD_FUNC ir::id convert(ir::id v, dtype to) { return convert_in(current_tracer(), v, to); }

QD_FUNC ir::id emit_unary(ir::unary_op o, dtype t, ir::id a) {
  switch (ir::kind(o)) {
    case ir::unary_kind::predicate:
    case ir::unary_kind::count:
    case ir::unary_kind::reinterpret: return current_tracer().b.unary(o, t, a);  // t is the result's type
    case ir::unary_kind::same:
    case ir::unary_kind::logical:
    case ir::unary_kind::bits:
    case ir::unary_kind::math: break;
  }
  return current_tracer().b.unary(o, t, convert(a, t));
}

QD_FUNC ir::id emit_binary(ir::binary_op o, dtype operand_type, ir::id a, ir::id b) {
  dtype result = ir::is_comparison(o) ? dtype::boolean : operand_type;
  tracer& t = current_tracer();
  const ir::id ca = convert_in(t, a, operand_type);
  const ir::id cb = convert_in(t, b, operand_type);
  return t.b.binary(o, result, ca, cb);
}

QD_FUNC ir::id emit_select(dtype t, ir::id c, ir::id a, ir::id b) {
  return current_tracer().b.select(t, convert(c, dtype::boolean), convert(a, t), convert(b, t));
}

QD_FUNC ir::id emit_fma(dtype t, ir::id a, ir::id b, ir::id c) {
  return current_tracer().b.fma(t, convert(a, t), convert(b, t), convert(c, t));
}

QD_FUNC ir::id emit_arg(std::int32_t param) { return current_tracer().b.arg(param); }

QD_FUNC ir::id emit_shape(std::int32_t param, int dim) {
  auto& t = current_tracer();
  int ndim = t.fn.params[static_cast<std::size_t>(param)].ndim;
  if (dim < 0 || dim >= ndim)
    throw_trace_error(fmt::format("shape({}) of {}: the array has {} dimension{}; use a dimension in 0..{}", dim,
                                  t.param_label(param), ndim, ndim == 1 ? "" : "s", ndim - 1));
  return t.b.shape(param, dim);
}

QD_FUNC ir::id emit_random(dtype t, const char* file, std::uint32_t line, std::uint32_t column) {
  auto& tr = current_tracer();
  const ir::id n = tr.b.random(t);
  if (tr.open_draw_groups > 0) tr.pending_draws.push_back({file, line, column, n});
  return n;
}

QD_FUNC draw_group::draw_group() noexcept {
  if (active_tracer != nullptr) ++active_tracer->open_draw_groups;
}

// Source order: file, line, column.
QD_FUNC bool written_before(const draw_site& a, const draw_site& b) {
  if (a.file != b.file) {
    const int c = std::strcmp(a.file, b.file);
    if (c != 0) return c < 0;
  }
  return a.line != b.line ? a.line < b.line : a.column < b.column;
}

// Gives the draws of one full-expression stream positions in source order. A random
// node has no operands, so moving it earlier never breaks a use: all of them move to
// where the first one was, sorted (a stable sort keeps draws written at one place, a
// helper called twice, in the order they were traced). Left alone when they are not in
// one block or control flow separates them (a lambda called inside the expression).
QD_FUNC void order_draws(tracer& t) {
  std::vector<draw_site>& d = t.pending_draws;
  const std::int32_t block = t.fn.node_block[static_cast<std::size_t>(d.front().node)];
  for (const draw_site& s : d)
    if (t.fn.node_block[static_cast<std::size_t>(s.node)] != block) return;
  if (std::is_sorted(d.begin(), d.end(), written_before)) return;
  std::vector<ir::id>& statements = t.fn.blocks[static_cast<std::size_t>(block)];
  std::size_t first = statements.size();
  std::size_t found = 0;
  for (std::size_t k = statements.size(); k-- > 0 && found < d.size();) {
    const ir::node& n = t.fn.at(statements[k]);
    if (n.code == ir::op::random) {
      if (std::any_of(d.begin(), d.end(), [&](const draw_site& s) { return s.node == statements[k]; })) {
        ++found;
        first = k;
      }
    } else if (ir::properties(n.code).effect == ir::effect::control) {
      return;
    }
  }
  if (found != d.size()) return;
  std::stable_sort(d.begin(), d.end(), written_before);
  std::vector<ir::id> reordered(statements.begin(), statements.begin() + static_cast<std::ptrdiff_t>(first));
  for (const draw_site& s : d) reordered.push_back(s.node);
  for (std::size_t k = first; k < statements.size(); ++k)
    if (t.fn.at(statements[k]).code != ir::op::random ||
        std::none_of(d.begin(), d.end(), [&](const draw_site& s) { return s.node == statements[k]; }))
      reordered.push_back(statements[k]);
  statements = std::move(reordered);
}

QD_FUNC draw_group::~draw_group() {
  tracer* t = active_tracer;
  if (t == nullptr || --t->open_draw_groups > 0) return;
  if (t->pending_draws.size() > 1 && std::uncaught_exceptions() == 0) order_draws(*t);
  t->pending_draws.clear();
}

QD_FUNC std::int32_t bind_place(const place& p) {
  auto& t = current_tracer();
  t.bound_places.push_back(p);
  return static_cast<std::int32_t>(t.bound_places.size() - 1);
}

QD_FUNC const place& bound_place(std::int32_t index) {
  return current_tracer().bound_places[static_cast<std::size_t>(index)];
}

QD_FUNC void store_bound(std::int32_t index, ir::id value) {
  const place p = bound_place(index);
  emit_global_store(p, value);
}

QD_FUNC std::vector<ir::id> widened_indices(const place& p) {
  std::vector<ir::id> out;
  out.reserve(p.rank);
  for (ir::id i : p.index_span()) {
    dtype t = type_of(i);
    out.push_back(t == dtype::i64 || t == dtype::i32 ? i : convert(i, dtype::i32));
  }
  return out;
}

QD_FUNC ir::id emit_global_load(const place& p) {
  return current_tracer().b.global_load(p.param, p.flags, widened_indices(p));
}

QD_FUNC void emit_global_store(const place& p, ir::id value) {
  auto& t = current_tracer();
  auto indices = widened_indices(p);
  t.b.global_store(p.param, p.flags, indices, convert(value, t.fn.params[static_cast<std::size_t>(p.param)].type));
}

QD_FUNC ir::id emit_global_atomic(ir::atomic_op o, const place& p, ir::id value, ir::id expected) {
  auto& t = current_tracer();
  auto indices = widened_indices(p);
  const dtype elem = t.fn.params[static_cast<std::size_t>(p.param)].type;
  return t.b.global_atomic(o, p.param, p.flags, indices, convert(value, elem),
                           expected == ir::none ? ir::none : convert(expected, elem));
}

// The type `x op= v` computes in: its own, but f16 (storage only) computes in f32.
QD_FUNC dtype arithmetic_type_of(dtype t) { return t == dtype::f16 ? dtype::f32 : t; }

QD_FUNC void emit_global_update(ir::binary_op o, const place& p, ir::id loaded, ir::id value) {
  auto& t = current_tracer();
  dtype elem = t.fn.params[static_cast<std::size_t>(p.param)].type;
  if (t.parallel_depth > 0 && (o == ir::binary_op::add || o == ir::binary_op::sub)) {
    place compound = p;  // may be demoted to a plain update (analysis/atomic_demotion.hpp)
    compound.flags = static_cast<std::uint8_t>(compound.flags | ir::access::compound);
    emit_global_atomic(o == ir::binary_op::add ? ir::atomic_op::add : ir::atomic_op::sub, compound, value);
    return;
  }
  emit_global_store(p, emit_binary(o, arithmetic_type_of(elem), loaded, value));
}

QD_FUNC ir::id emit_local_decl(dtype t, ir::id init) { return current_tracer().b.local_decl(t, convert(init, t)); }

QD_FUNC ir::id emit_local_load(ir::id decl) { return current_tracer().b.local_load(decl); }

QD_FUNC void emit_local_store(ir::id decl, ir::id value) {
  auto& t = current_tracer();
  t.b.local_store(decl, convert(value, t.fn.at(decl).type));
}

QD_FUNC ir::id emit_local_atomic(ir::atomic_op o, ir::id decl, ir::id value, ir::id expected) {
  auto& t = current_tracer();
  const dtype type = t.fn.at(decl).type;
  return t.b.local_atomic(o, decl, convert(value, type), expected == ir::none ? ir::none : convert(expected, type));
}

QD_FUNC std::string_view operator_symbol(ir::binary_op o) {
  switch (o) {
    case ir::binary_op::add: return "+";
    case ir::binary_op::sub: return "-";
    case ir::binary_op::mul: return "*";
    case ir::binary_op::div: return "/";
    case ir::binary_op::mod: return "%";
    case ir::binary_op::bit_and: return "&";
    case ir::binary_op::bit_or: return "|";
    case ir::binary_op::bit_xor: return "^";
    case ir::binary_op::shl: return "<<";
    case ir::binary_op::shr: return ">>";
    case ir::binary_op::eq:
    case ir::binary_op::ge:
    case ir::binary_op::gt:
    case ir::binary_op::le:
    case ir::binary_op::logical_and:
    case ir::binary_op::logical_or:
    case ir::binary_op::lt:
    case ir::binary_op::max:
    case ir::binary_op::min:
    case ir::binary_op::ne:
    case ir::binary_op::pow:
    case ir::binary_op::atan2:
    case ir::binary_op::fmod:
    case ir::binary_op::floordiv:
    case ir::binary_op::floormod: return name(o);
  }
  return name(o);
}

QD_FUNC void emit_local_update(ir::binary_op o, ir::id decl, ir::id value) {
  auto& t = current_tracer();
  dtype type = t.fn.at(decl).type;
  bool top_level_var = t.fn.is_top_level(decl);
  if (top_level_var && t.parallel_depth > 0) {
    if (o == ir::binary_op::add || o == ir::binary_op::sub) {
      emit_local_atomic(o == ir::binary_op::add ? ir::atomic_op::add : ir::atomic_op::sub, decl, value);
      return;
    }
    throw_trace_error(fmt::format(
        "'{}=' on a top-level qd::var inside a parallel qd::range_for would race between iterations; only += and "
        "-= (and qd::atomic_*) are reductions. Use a qd::var declared inside the loop body, or an atomic",
        operator_symbol(o)));
  }
  emit_local_store(decl, emit_binary(o, arithmetic_type_of(type), emit_local_load(decl), value));
}

// Enters `levels` more levels of control flow, refusing to pass ir::max_nesting_depth
// before anything deeper is traced (a 20,000-deep nest used to overflow the stack).
QD_FUNC void enter_nesting(tracer& t, int levels) {
  if (t.nesting + levels > ir::max_nesting_depth)
    throw_trace_error(fmt::format(
        "control flow is nested {} levels deep here; at most {} are supported (each qd::if_ or .else_ body, qd::while_ "
        "and each dimension of a nested qd::range_for counts one), so that the generated code compiles with every "
        "backend's compiler (clang and hipRTC refuse more than 256 nested brackets). Flatten the nesting: combine "
        "conditions with && or compute them with qd::select",
        t.nesting + levels, ir::max_nesting_depth));
  t.nesting += levels;
}

// A loop bound as the i32 a loop index has. A wider bound (i64, u32) is narrowed by
// an ir::op::bound, which fails the launch instead of wrapping when the value does
// not fit, and leaves the loop empty by substituting on_overflow.
QD_FUNC ir::id loop_bound(ir::id v, std::int32_t on_overflow) {
  auto& t = current_tracer();
  dtype type = t.fn.at(v).type;
  if (type == dtype::u64) {  // capped first, so that its value as an i64 is never negative
    v = t.b.cast(dtype::i64, t.b.binary(ir::binary_op::min, dtype::u64, v, t.b.constant_int(dtype::u64, 0x80000000ll)));
    type = dtype::i64;
  }
  if (type == dtype::i64 || type == dtype::u32) return t.b.bound(v, on_overflow);
  return convert(v, dtype::i32);
}

QD_FUNC ir::id begin_range_for(ir::id begin, ir::id end) {
  auto& t = current_tracer();
  for (ir::id bound : {begin, end})
    if (!is_integral(type_of(bound)))
      throw_trace_error(fmt::format("qd::range_for bounds must be integers, got {}", name(type_of(bound))));
  enter_nesting(t, 1);
  ir::id loop = t.b.range_for(loop_bound(begin, std::numeric_limits<std::int32_t>::max()),
                              loop_bound(end, std::numeric_limits<std::int32_t>::min()));
  const bool serialized = configure_loop(t, loop);  // before the test: a nested loop's config is an error
  bool parallel = t.at_top_level() && !serialized;
  t.last_if = ir::none;
  t.b.push_block(t.fn.at(loop).block0);
  if (parallel) ++t.parallel_depth;
  return t.b.loop_index_of(loop);
}

QD_FUNC std::vector<ir::id> begin_range_for_nd(const std::vector<ir::id>& extents) {
  // A rank-1 range_for node holds its bounds in a and b (see ir::op::range_for).
  if (extents.size() == 1) return {begin_range_for(emit_int_constant(dtype::i32, 0), extents[0])};
  auto& t = current_tracer();
  std::vector<ir::id> converted;
  for (ir::id e : extents) {
    if (!is_integral(type_of(e)))
      throw_trace_error(fmt::format("qd::ndrange extents must be integers, got {}", name(type_of(e))));
    converted.push_back(loop_bound(e, 0));
  }
  enter_nesting(t, static_cast<int>(converted.size()));
  ir::id loop = t.b.range_for_nd(converted);
  const bool serialized = configure_loop(t, loop);  // before the test: a nested loop's config is an error
  bool parallel = t.at_top_level() && !serialized;
  t.last_if = ir::none;
  t.b.push_block(t.fn.at(loop).block0);
  if (parallel) ++t.parallel_depth;
  std::vector<ir::id> indices;
  for (std::size_t d = 0; d < converted.size(); ++d)
    indices.push_back(t.b.loop_index_of(loop, static_cast<std::int32_t>(d)));
  return indices;
}

QD_FUNC void end_range_for() {
  auto& t = current_tracer();
  t.nesting -= ir::nesting_weight(t.fn, t.b.current_block());
  const ir::id loop = t.fn.block_owner[static_cast<std::size_t>(t.b.current_block())];
  t.b.pop_block();
  t.last_if = ir::none;
  if (t.at_top_level() && (t.fn.at(loop).flags & ir::loop::serialize) == 0) --t.parallel_depth;
}

QD_FUNC ir::id begin_if(ir::id cond) {
  auto& t = current_tracer();
  if (type_of(cond) != dtype::boolean)
    throw_trace_error(
        fmt::format("qd::if_ needs a boolean condition, got {}; compare it, e.g. x != 0", name(type_of(cond))));
  enter_nesting(t, 1);
  ir::id n = t.b.if_(cond);
  t.b.push_block(t.fn.at(n).block0);
  t.last_if = ir::none;
  return n;
}

QD_FUNC void end_if(ir::id if_node) {
  auto& t = current_tracer();
  --t.nesting;
  t.b.pop_block();
  t.last_if = if_node;
}

QD_FUNC void begin_else(ir::id if_node) {
  auto& t = current_tracer();
  const auto& block = t.fn.block(t.b.current_block());
  if (t.last_if != if_node || block.empty() || block.back() != if_node)
    throw_trace_error(
        ".else_ must follow its qd::if_ directly, as qd::if_(c, then).else_(otherwise), and at most once");
  t.last_if = ir::none;
  enter_nesting(t, 1);
  t.b.push_block(t.fn.at(if_node).block1);
}

QD_FUNC void end_else() {
  auto& t = current_tracer();
  --t.nesting;
  t.b.pop_block();
  t.last_if = ir::none;
}

QD_FUNC ir::id begin_while_condition() {
  auto& t = current_tracer();
  enter_nesting(t, 1);
  ir::id n = t.b.while_();
  t.last_if = ir::none;
  t.b.push_block(t.fn.at(n).block0);
  return n;
}

QD_FUNC void begin_while_body(ir::id while_node, ir::id cond) {
  auto& t = current_tracer();
  if (type_of(cond) != dtype::boolean)
    throw_trace_error(fmt::format("qd::while_ condition must return a boolean, got {}", name(type_of(cond))));
  t.fn.at(while_node).a = cond;
  t.b.pop_block();
  t.b.push_block(t.fn.at(while_node).block1);
}

QD_FUNC void end_while() {
  auto& t = current_tracer();
  --t.nesting;
  t.b.pop_block();
  t.last_if = ir::none;
}

QD_FUNC short_circuit begin_short_circuit(bool is_or, ir::id left) {
  auto& t = current_tracer();
  short_circuit s;
  s.is_or = is_or;
  s.left = convert(left, dtype::boolean);
  s.result = t.b.local_decl(dtype::boolean, s.left);
  s.branch = begin_if(is_or ? t.b.unary(ir::unary_op::logical_not, dtype::boolean, s.left) : s.left);
  return s;
}

// Nodes a right operand may evaluate unconditionally: no memory, no effect, no failure.
QD_FUNC bool unconditional(const ir::node& n) {
  using ir::op;
  return n.code == op::constant || n.code == op::arg || n.code == op::shape || n.code == op::loop_index ||
         n.code == op::unary || n.code == op::binary || n.code == op::select || n.code == op::fma ||
         n.code == op::cast || n.code == op::local_load;
}

QD_FUNC ir::id end_short_circuit(const short_circuit& s, ir::id right) {
  auto& t = current_tracer();
  right = convert(right, dtype::boolean);
  const std::int32_t inner = t.b.current_block();
  std::vector<ir::id>& recorded = t.fn.blocks[static_cast<std::size_t>(inner)];
  const auto o = s.is_or ? ir::binary_op::logical_or : ir::binary_op::logical_and;
  if (std::all_of(recorded.begin(), recorded.end(), [&](ir::id i) { return unconditional(t.fn.at(i)); })) {
    // Pure arithmetic (`i >= 0 && i < n`): no branch. The if_, the negation and the
    // result variable, last in the outer block, are dropped; the right operand's nodes
    // move out after the left operand's.
    std::vector<ir::id> moved = std::move(recorded);
    recorded.clear();
    end_if(s.branch);
    std::vector<ir::id>& outer = t.fn.blocks[static_cast<std::size_t>(t.b.current_block())];
    while (!outer.empty() && outer.back() != s.result) outer.pop_back();
    if (!outer.empty()) outer.pop_back();
    for (ir::id i : moved) {
      outer.push_back(i);
      t.fn.node_block[static_cast<std::size_t>(i)] = t.b.current_block();
    }
    t.last_if = ir::none;
    return t.b.binary(o, dtype::boolean, s.left, right);
  }
  t.b.local_store(s.result, right);
  end_if(s.branch);
  t.last_if = ir::none;
  return t.b.local_load(s.result);
}

QD_FUNC void emit_assert(ir::id cond, std::string_view message) {
  auto& t = current_tracer();
  if (!t.debug) return;  // compiled out: the IR, hence every key, differs from a debug trace
  if (type_of(cond) != dtype::boolean)
    throw_trace_error(
        fmt::format("qd::assert_ needs a boolean condition, got {}; compare it, e.g. x != 0", name(type_of(cond))));
  const ir::id branch = begin_if(t.b.unary(ir::unary_op::logical_not, dtype::boolean, cond));
  const ir::id report = t.b.print({t.b.add_string(std::string(message))});
  t.fn.at(report).flags = ir::print_flags::assertion;
  t.fn.at(report).imm = static_cast<std::int64_t>(t.assertions.size());
  t.assertions.push_back({std::string(message), report});
  end_if(branch);
  t.last_if = ir::none;
}

QD_FUNC std::int32_t intern_text(std::string_view text) { return current_tracer().b.add_string(std::string(text)); }

QD_FUNC void emit_print(const std::vector<std::int32_t>& args) {
  auto& t = current_tracer();
  t.b.print(args);
  t.last_if = ir::none;
}

}  // namespace qd::inline v0::detail
