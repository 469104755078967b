// Graph kernels and concurrent regions: qd::graph::on (the tag of
// qd::kernel(name, qd::graph::on, lambda)), qd::graph::do_while, qd::graph::parallel
// and qd::concurrent. Each records graph marks (ir/graph_mark.hpp) between the
// top-level statements its bodies trace; the constructs inside stay top-level ones.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "quadrants/base/api.hpp"
#include "quadrants/ir/graph_mark.hpp"
#include "quadrants/lang/ndarray_param.hpp"

namespace qd::inline v0 {
namespace graph {

// The tag that makes a kernel a graph kernel: qd::kernel("solve", qd::graph::on, lambda).
struct on_t {
  explicit constexpr on_t(int) {}
};
inline constexpr on_t on{0};

}  // namespace graph

namespace detail {

// Trace-time steps; each checks where it is used and throws a qd::user_error naming
// the kernel when that is not allowed.
QD_FUNC void begin_do_while(std::int32_t flag_param);
QD_FUNC void end_do_while();
QD_FUNC void begin_fork(ir::fork_kind kind);
QD_FUNC void next_fork_branch();
QD_FUNC void end_fork();

template <class A>
struct is_graph_flag : std::false_type {};
template <auto... Options>
struct is_graph_flag<types::ndarray<std::int32_t, 0, Options...>> : std::true_type {};

template <class... F>
void trace_fork(ir::fork_kind kind, F&&... branches) {
  static_assert(sizeof...(F) >= 1, "give at least one branch (a lambda without parameters)");
  static_assert((std::is_invocable_v<F&> && ...), "each branch is a lambda without parameters: [&] { ... }");
  begin_fork(kind);
  bool first = true;
  auto run = [&](auto& branch) {
    if (!first) next_fork_branch();
    first = false;
    branch();
  };
  (run(branches), ...);
  end_fork();
}

}  // namespace detail

namespace graph {

// Runs body's constructs, then again while flag() != 0 (read after each pass). At the
// top level of a graph kernel or inside another do_while body.
template <class Flag, class F>
void do_while(const Flag& flag, F&& body) {
  static_assert(detail::is_graph_flag<Flag>::value,
                "qd::graph::do_while's flag must be a 0-d int32 array parameter: qd::types::ndarray<std::int32_t, 0>");
  static_assert(std::is_invocable_v<F&>, "qd::graph::do_while's body is a lambda without parameters: [&] { ... }");
  detail::begin_do_while(flag.param_index());
  body();
  detail::end_do_while();
}

// Fork/join in a graph kernel: the branches run at once and join at the end.
template <class... F>
void parallel(F&&... branches) {
  detail::trace_fork(ir::fork_kind::graph_parallel, branches...);
}

}  // namespace graph

// Regions that run at once and join at the end, at the top level of any kernel.
template <class... F>
void concurrent(F&&... regions) {
  detail::trace_fork(ir::fork_kind::concurrent, regions...);
}

}  // namespace qd::inline v0

#ifdef QD_HEADER_ONLY
#include "quadrants/lang/graph-inl.hpp"
#endif
