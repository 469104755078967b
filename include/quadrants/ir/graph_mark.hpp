// Graph marks: the top-level statements that delimit qd::graph::do_while
// bodies and the branches of qd::concurrent / qd::graph::parallel. A mark is in no task:
// it only orders the tasks of a variant into a schedule (analysis/graph.hpp) that the
// launch walks (runtime/graph/graph.hpp). Layout of an ir::op::graph_mark node:
//   sub   the graph_mark kind below
//   param loop_begin: the 0-d i32 flag array parameter (read after each pass)
//   imm   fork_begin: fork_kind (qd::concurrent or qd::graph::parallel)
#pragma once

#include <cstdint>
#include <string_view>

#include "quadrants/ir/builder.hpp"

namespace qd::inline v0::ir {

enum class graph_mark : std::uint8_t {
  loop_begin,  // a do_while body starts; param: its flag
  loop_end,    // the innermost open body ends: run it again while the flag is non-zero
  fork_begin,  // the first branch of a fork starts
  fork_next,   // the next branch starts
  fork_end,    // the fork joins
};

enum class fork_kind : std::uint8_t { concurrent, graph_parallel };

// How deeply do_while bodies and forks may nest (the launch keeps one counter per level).
inline constexpr int max_graph_nesting = 32;

constexpr std::string_view name(graph_mark m) {
  switch (m) {
    case graph_mark::loop_begin: return "loop_begin";
    case graph_mark::loop_end: return "loop_end";
    case graph_mark::fork_begin: return "fork_begin";
    case graph_mark::fork_next: return "fork_next";
    case graph_mark::fork_end: return "fork_end";
  }
  return "?";
}

constexpr std::string_view name(fork_kind k) {
  return k == fork_kind::concurrent ? "qd::concurrent" : "qd::graph::parallel";
}

constexpr graph_mark mark_of(const node& n) { return static_cast<graph_mark>(n.sub); }

// Appends a mark at the builder's insertion block (the caller keeps it at the top level).
constexpr id emit_graph_mark(builder& b, graph_mark m, std::int32_t param = -1, std::int64_t imm = 0) {
  return b.emit(
      {.code = op::graph_mark, .type = dtype::i32, .sub = static_cast<std::uint8_t>(m), .param = param, .imm = imm});
}

constexpr bool has_graph_marks(const function& fn) {
  for (id i : fn.block(0))
    if (fn.at(i).code == op::graph_mark) return true;
  return false;
}

}  // namespace qd::inline v0::ir
