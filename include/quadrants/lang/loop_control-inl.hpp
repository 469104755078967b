// Implementation of lang/loop_control.hpp.
#pragma once

#include "quadrants/base/format.hpp"
#include "quadrants/lang/loop_control.hpp"
#include "quadrants/lang/trace.hpp"

namespace qd::inline v0::detail {

QD_FUNC void set_loop_config(const loop_config& config) {
  tracer& t = current_tracer();
  if (config.block_dim < 0 || config.block_dim > 1024)
    throw_trace_error(
        fmt::format("qd::loop_config{{.block_dim = {}}}: a block has 1 to 1024 threads (0: the "
                    "backend's default)",
                    config.block_dim));
  t.has_loop_config = true;
  t.loop_block_dim = config.block_dim;
  t.loop_serialize = config.serialize;
}

QD_FUNC bool configure_loop(tracer& t, ir::id loop) {
  if (!t.has_loop_config) return false;
  t.has_loop_config = false;
  if (!t.fn.is_top_level(loop))
    throw_trace_error(
        "qd::loop_config is given to a qd::range_for nested in another loop or branch; it only configures a "
        "top-level loop (a construct). A nested loop already runs in order within its iteration: drop the "
        "qd::loop_config");
  ir::node& n = t.fn.at(loop);
  if (t.loop_block_dim > 0) n.param = t.loop_block_dim;  // else -1, as for every loop without one
  if (t.loop_serialize) n.flags = static_cast<std::uint8_t>(n.flags | ir::loop::serialize);
  return t.loop_serialize;
}

QD_FUNC void emit_jump(ir::op jump) {
  tracer& t = current_tracer();
  const char* what = jump == ir::op::break_ ? "qd::break_()" : "qd::continue_()";
  for (std::int32_t b = t.b.current_block(); b != 0;) {
    const ir::id owner = t.fn.block_owner[static_cast<std::size_t>(b)];
    const ir::node& n = t.fn.at(owner);
    if (n.code == ir::op::while_ && b == n.block0)
      throw_trace_error(fmt::format("{} in the condition of a qd::while_; use it in the loop body", what));
    if (n.code == ir::op::range_for || n.code == ir::op::while_) {
      if (jump == ir::op::break_ && n.code == ir::op::range_for && t.fn.is_top_level(owner) &&
          (n.flags & ir::loop::serialize) == 0)
        throw_trace_error(
            "qd::break_() would leave a parallel qd::range_for (a top-level loop, whose iterations run at once). "
            "Give the loop qd::loop_config{.serialize = true} to run it in order, or use qd::continue_() to skip "
            "the rest of an iteration");
      t.b.jump(jump, owner);
      t.last_if = ir::none;
      return;
    }
    b = t.fn.node_block[static_cast<std::size_t>(owner)];
  }
  throw_trace_error(fmt::format("{} outside a loop body: it belongs in a qd::range_for or qd::while_ body", what));
}

}  // namespace qd::inline v0::detail
