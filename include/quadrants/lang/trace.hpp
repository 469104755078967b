// The tracer: records IR while a kernel lambda runs with symbolic arguments.
// Non-template emission helpers live here so the DSL templates stay thin.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/base/dtype.hpp"
#include "quadrants/ir/builder.hpp"

namespace qd::inline v0::detail {

// An array element: its parameter, access flags and indices.
struct place {
  std::int32_t param = -1;
  std::uint8_t flags = 0;
  std::uint8_t rank = 0;
  std::array<ir::id, 4> indices{};
  std::span<const ir::id> index_span() const { return {indices.data(), rank}; }
};

// A qd::assert_ traced in debug mode: its message and its print node (ir::print_flags).
struct assertion_site {
  std::string message;
  ir::id node = ir::none;
};

// A random draw of the current straight-line stretch, with where it was written.
struct draw_site {
  const char* file = "";
  std::uint32_t line = 0;
  std::uint32_t column = 0;
  ir::id node = ir::none;
};

// State of one kernel trace; active on the tracing thread only.
class tracer {
 public:
  QD_FUNC tracer(std::string kernel_name, std::vector<std::string> param_names);
  tracer(const tracer&) = delete;
  tracer& operator=(const tracer&) = delete;

  ir::function fn;
  ir::builder b;
  std::string kernel;
  std::vector<std::string> param_names;
  int parallel_depth = 0;     // > 0 inside the body of a top-level range_for
  int nesting = 0;            // levels of control flow around the current block (ir/nesting.hpp)
  ir::id last_if = ir::none;  // the if_ an else_ may still attach to
  // A qd::loop_config for the next range_for (lang/loop_control.hpp).
  bool has_loop_config = false;
  std::int32_t loop_block_dim = 0;
  bool loop_serialize = false;
  bool graph_kernel = false;               // qd::kernel(name, qd::graph::on, ...): do_while and graph::parallel allowed
  std::vector<std::uint8_t> graph_open;    // open do_while bodies and forks (ir::graph_mark), innermost last
  bool debug = false;                      // config.debug: qd::assert_ is traced, else compiled out
  std::vector<assertion_site> assertions;  // numbered by the print node's imm
  std::vector<place> bound_places;         // the elements members of element proxies stand for
  // The draws of the full-expression being traced (draw_group), reordered at its end.
  std::vector<draw_site> pending_draws;
  int open_draw_groups = 0;

  bool at_top_level() const { return b.current_block() == 0; }
  // "kernel 'k', parameter 'x' (#0)" for error messages.
  QD_FUNC std::string param_label(std::int32_t param) const;
};

// Makes `t` the active tracer for the current thread while alive.
class trace_scope {
 public:
  QD_FUNC explicit trace_scope(tracer& t);
  QD_FUNC ~trace_scope();
  trace_scope(const trace_scope&) = delete;
  trace_scope& operator=(const trace_scope&) = delete;

 private:
  tracer* previous_;
};

inline thread_local tracer* active_tracer = nullptr;

// The active tracer; a qd::user_error when DSL code runs outside a kernel body. Inline: every
// traced operation asks for it, several times (a call each was a tenth of tracing's time).
[[noreturn]] QD_FUNC void throw_outside_kernel();
inline tracer& current_tracer() {
  tracer* t = active_tracer;
  if (t == nullptr) [[unlikely]]
    throw_outside_kernel();
  return *t;
}
[[noreturn]] QD_FUNC void throw_trace_error(const std::string& what);
[[noreturn]] QD_FUNC void throw_bound_literal(const std::string& value);  // a C++ loop bound beyond qd::i32

// Records where the nodes traced from now on were written (lang/source_location.hpp); a
// no-op outside a trace.
QD_FUNC void set_location(const char* file, std::uint32_t line) noexcept;
// "file:line: " for the node being traced, or "".
QD_FUNC std::string location_prefix();

QD_FUNC dtype type_of(ir::id v);
QD_FUNC std::int32_t current_block();
// Throws unless the current block is `handle_block` (see expr::operator=).
QD_FUNC void check_rebind(std::int32_t handle_block);
QD_FUNC ir::id emit_int_constant(dtype t, std::int64_t value);
QD_FUNC ir::id emit_float_constant(dtype t, double value);
QD_FUNC ir::id convert(ir::id v, dtype to);  // emits a cast only when types differ
QD_FUNC ir::id emit_unary(ir::unary_op o, dtype t, ir::id a);
QD_FUNC ir::id emit_binary(ir::binary_op o, dtype result, ir::id a, ir::id b);
QD_FUNC ir::id emit_select(dtype t, ir::id c, ir::id a, ir::id b);
QD_FUNC ir::id emit_fma(dtype t, ir::id a, ir::id b, ir::id c);
QD_FUNC ir::id emit_arg(std::int32_t param);
QD_FUNC ir::id emit_shape(std::int32_t param, int dim);
// A uniform draw written at file:line:column.
QD_FUNC ir::id emit_random(dtype t, const char* file, std::uint32_t line, std::uint32_t column);

// Alive from a qd::random call to the end of the full-expression holding it (it is a
// default argument's temporary). When the last one ends, the draws of that expression
// take their stream positions in source order (file, line, column), whatever order C++
// evaluated them in: `qd::vec2f(qd::random<float>(), qd::random<float>())` draws alike
// with g++ (arguments right to left) and clang++ (left to right).
class draw_group {
 public:
  QD_FUNC draw_group() noexcept;
  QD_FUNC ~draw_group();
  draw_group(const draw_group&) = delete;
  draw_group& operator=(const draw_group&) = delete;
};

QD_FUNC ir::id emit_global_load(const place& p);
// Members of element proxies: remember the element a member stands for, and store into it.
QD_FUNC std::int32_t bind_place(const place& p);
QD_FUNC const place& bound_place(std::int32_t index);
QD_FUNC void store_bound(std::int32_t index, ir::id value);
QD_FUNC void emit_global_store(const place& p, ir::id value);
// `expected`: atomic_cas's expected value (ir::none for the other atomics).
QD_FUNC ir::id emit_global_atomic(ir::atomic_op o, const place& p, ir::id value, ir::id expected = ir::none);
// `x[i] op= v`: atomic inside a parallel construct (add/sub), else load-op-store.
QD_FUNC void emit_global_update(ir::binary_op o, const place& p, ir::id loaded, ir::id value);

QD_FUNC ir::id emit_local_decl(dtype t, ir::id init);
QD_FUNC ir::id emit_local_load(ir::id decl);
QD_FUNC void emit_local_store(ir::id decl, ir::id value);
QD_FUNC ir::id emit_local_atomic(ir::atomic_op o, ir::id decl, ir::id value, ir::id expected = ir::none);
// `v op= x` on a qd::var: atomic reduction for a top-level var inside a parallel construct.
QD_FUNC void emit_local_update(ir::binary_op o, ir::id decl, ir::id value);

// Control flow. Each begin_* enters the new block; the matching end_* leaves it.
QD_FUNC ir::id begin_range_for(ir::id begin, ir::id end);  // returns the loop index node
// A rank-N loop over [0, extents...); returns one index node per dimension.
QD_FUNC std::vector<ir::id> begin_range_for_nd(const std::vector<ir::id>& extents);
QD_FUNC void end_range_for();
QD_FUNC ir::id begin_if(ir::id cond);
QD_FUNC void end_if(ir::id if_node);
QD_FUNC void begin_else(ir::id if_node);
QD_FUNC void end_else();
QD_FUNC ir::id begin_while_condition();
QD_FUNC void begin_while_body(ir::id while_node, ir::id cond);
QD_FUNC void end_while();

// `a && b` and `a || b` with a traced left operand: begin_short_circuit runs before the
// right operand is traced and opens the branch it is recorded in; end_short_circuit
// closes it and yields the result. A right operand of pure arithmetic needs no branch:
// it is moved back out and combined with a plain logical operation.
struct short_circuit {
  ir::id left = ir::none;
  ir::id result = ir::none;  // the local variable holding the result
  ir::id branch = ir::none;  // the if_ the right operand is recorded in
  bool is_or = false;
};
QD_FUNC short_circuit begin_short_circuit(bool is_or, ir::id left);
QD_FUNC ir::id end_short_circuit(const short_circuit& s, ir::id right);

// qd::assert_: in debug mode, `if (!cond)` reports the failure (the launch then throws).
QD_FUNC void emit_assert(ir::id cond, std::string_view message);

QD_FUNC std::int32_t intern_text(std::string_view text);
QD_FUNC void emit_print(const std::vector<std::int32_t>& args);

}  // namespace qd::inline v0::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/lang/trace-inl.hpp"
#endif
