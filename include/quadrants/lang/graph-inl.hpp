// Implementation of lang/graph.hpp.
#pragma once

#include "quadrants/base/format.hpp"
#include "quadrants/lang/graph.hpp"
#include "quadrants/lang/trace.hpp"

namespace qd::inline v0::detail {

inline constexpr std::uint8_t open_loop = static_cast<std::uint8_t>(ir::graph_mark::loop_begin);
inline constexpr std::uint8_t open_fork = static_cast<std::uint8_t>(ir::graph_mark::fork_begin);

// Where a graph statement may go: the top level of the kernel, not inside a
// qd::range_for, qd::if_ or qd::while_; do_while and graph::parallel also inside a
// do_while body; a qd::concurrent nowhere inside another graph statement.
QD_FUNC void check_graph_place(tracer& t, std::string_view what, bool needs_graph_kernel) {
  if (needs_graph_kernel && !t.graph_kernel)
    throw_trace_error(
        fmt::format("{} is only allowed in a graph kernel; create the kernel with qd::kernel(\"{}\", "
                    "qd::graph::on, lambda)",
                    what, t.kernel));
  if (!t.at_top_level())
    throw_trace_error(
        fmt::format("{} must be at the top level of the kernel{}, not inside a qd::range_for, qd::if_ or "
                    "qd::while_",
                    what, needs_graph_kernel ? " or directly in a qd::graph::do_while body" : ""));
  if (!t.graph_open.empty() && (!needs_graph_kernel || t.graph_open.back() != open_loop))
    throw_trace_error(fmt::format("{} is not allowed inside a {}; {}", what,
                                  t.graph_open.back() == open_loop ? "qd::graph::do_while body" : "concurrent branch",
                                  needs_graph_kernel
                                      ? "only directly inside a qd::graph::do_while body or at the top level"
                                      : "use qd::graph::parallel inside a graph kernel's do_while, or "
                                        "qd::concurrent at the top level"));
  if (t.graph_open.size() >= static_cast<std::size_t>(ir::max_graph_nesting))
    throw_trace_error(fmt::format("{} nested more than {} deep; flatten the nesting", what, ir::max_graph_nesting));
}

QD_FUNC void begin_do_while(std::int32_t flag_param) {
  tracer& t = current_tracer();
  check_graph_place(t, "qd::graph::do_while", true);
  ir::emit_graph_mark(t.b, ir::graph_mark::loop_begin, flag_param);
  t.graph_open.push_back(open_loop);
}

QD_FUNC void end_do_while() {
  tracer& t = current_tracer();
  ir::emit_graph_mark(t.b, ir::graph_mark::loop_end);
  t.graph_open.pop_back();
}

QD_FUNC void begin_fork(ir::fork_kind kind) {
  tracer& t = current_tracer();
  check_graph_place(t, ir::name(kind), kind == ir::fork_kind::graph_parallel);
  ir::emit_graph_mark(t.b, ir::graph_mark::fork_begin, -1, static_cast<std::int64_t>(kind));
  t.graph_open.push_back(open_fork);
}

QD_FUNC void next_fork_branch() { ir::emit_graph_mark(current_tracer().b, ir::graph_mark::fork_next); }

QD_FUNC void end_fork() {
  tracer& t = current_tracer();
  ir::emit_graph_mark(t.b, ir::graph_mark::fork_end);
  t.graph_open.pop_back();
}

}  // namespace qd::inline v0::detail
