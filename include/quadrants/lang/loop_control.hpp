// Loop control: qd::loop_config for a top-level range_for, and
// qd::break_ / qd::continue_ inside loop bodies.
#pragma once

#include <cstdint>

#include "quadrants/base/api.hpp"
#include "quadrants/ir/node.hpp"

namespace qd::inline v0 {

// Given just before the body of a top-level qd::range_for (a qd::user_error on a
// nested loop). block_dim: GPU threads per block for the construct (0: the backend's
// default; at most 1024); serialize: run the loop in order on one thread, like a
// qd::while_ (then qd::break_ may leave it and += is a plain update).
struct loop_config {
  std::int32_t block_dim = 0;
  bool serialize = false;
};

namespace detail {
class tracer;
// Records `config` for the range_for about to be traced.
QD_FUNC void set_loop_config(const loop_config& config);
// Applies the pending loop_config (if any) to `loop`, just emitted in the current
// block; returns whether the loop runs serially. Throws for a config on a nested loop.
QD_FUNC bool configure_loop(tracer& t, ir::id loop);
// Emits break_ or continue_ for the innermost enclosing loop; a qd::user_error
// outside a loop body and for a break_ that would leave a parallel loop.
QD_FUNC void emit_jump(ir::op jump);
}  // namespace detail

// Leaves the innermost enclosing loop: a qd::while_, a loop nested in a construct, or
// a top-level qd::range_for run with .serialize = true (a parallel loop cannot be left).
inline void break_() { detail::emit_jump(ir::op::break_); }
// Starts the next iteration of the innermost enclosing loop (any loop).
inline void continue_() { detail::emit_jump(ir::op::continue_); }

}  // namespace qd::inline v0

#ifdef QD_HEADER_ONLY
#include "quadrants/lang/loop_control-inl.hpp"
#endif
