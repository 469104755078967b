// Per-op dispatch over typed views (ir/view.hpp): a pass names the ops it cares about and
// every other op takes the default -- R{} for match, a walk into its blocks for visit.
#pragma once

#include <type_traits>
#include <utility>

#include "quadrants/ir/view.hpp"
#include "quadrants/ir/walk.hpp"

namespace qd::inline v0::ir {

namespace detail {

template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

// Calls f(view<X>(fn, i)) for node i's op X: the one switch over every op, generated.
// Always inlined: as a call (GCC's choice) it cost the lowering 3 %.
template <class R, class F>
[[gnu::always_inline]] constexpr R dispatch(const function& fn, id i, F& f) {
  switch (fn.at(i).code) {
#define QD_IR_DISPATCH(name, ...) \
  case op::name: return f(view<op::name>(fn, i));
    QD_IR_OPS(QD_IR_DISPATCH)
#undef QD_IR_DISPATCH
  }
  return R();
}

}  // namespace detail

// Calls the handler that takes node i's view (overload resolution among `handlers`, so
// a handler taking node_view catches the ops no other handler names); an op that no
// handler takes gives R{}.
template <class R = void, class... Handlers>
constexpr R match(const function& fn, id i, Handlers&&... handlers) {
  detail::overloaded h{std::forward<Handlers>(handlers)...};
  auto call = [&]<op O>(view<O> v) -> R {
    if constexpr (std::is_invocable_v<decltype(h)&, view<O>>)
      return static_cast<R>(h(v));
    else
      return R();
  };
  return detail::dispatch<R>(fn, i, call);
}

namespace detail {

// A walk callback calling the handler that takes each node's view, if any.
template <class H>
constexpr auto visit_handler(const function& fn, H& h) {
  return [&fn, &h](id i, int) {
    auto call = [&]<op O>(view<O> v) -> next {
      if constexpr (!std::is_invocable_v<H&, view<O>>) {
        return next::into_blocks;
      } else if constexpr (std::is_same_v<std::invoke_result_t<H&, view<O>>, next>) {
        return h(v);
      } else {
        h(v);
        return next::into_blocks;
      }
    };
    return dispatch<next>(fn, i, call);
  };
}

}  // namespace detail

// Calls, in program order for every statement reachable from `block`, the handler that
// takes its view (as match does). Every control op's blocks are walked after it whether
// or not a handler names it, unless that handler returns next::skip_blocks.
template <class... Handlers>
constexpr void visit(const function& fn, std::int32_t block, Handlers&&... handlers) {
  detail::overloaded h{std::forward<Handlers>(handlers)...};
  walk(fn, block, detail::visit_handler(fn, h));
}

// visit over one statement: node i, then its blocks.
template <class... Handlers>
constexpr void visit_statement(const function& fn, id i, Handlers&&... handlers) {
  detail::overloaded h{std::forward<Handlers>(handlers)...};
  walk_statement(fn, i, detail::visit_handler(fn, h));
}

}  // namespace qd::inline v0::ir
