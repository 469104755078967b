// Statements of a kernel body: range_for (parallel at the top level), if_/else_,
// while_, atomics, random draws, print and volatile loads.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "quadrants/lang/call_operator.hpp"
#include "quadrants/lang/loop_control.hpp"
#include "quadrants/lang/ndarray_param.hpp"
#include "quadrants/lang/source_location.hpp"
#include "quadrants/lang/var.hpp"

namespace qd::inline v0 {

namespace detail {
template <class A>
ir::id bound_id(const A& a) {
  if constexpr (traced<A>) {
    static_assert(is_integral(traced_dtype<A>), "qd::range_for bounds must be integers");
    return a.id();
  } else {
    using L = literal_t<A>;  // a C++ number or a qd::types::template_arg
    static_assert(std::is_integral_v<L>, "qd::range_for bounds must be integers");
    const L v = static_cast<L>(a);
    bool fits = false;
    if constexpr (std::is_signed_v<L>)
      fits = static_cast<std::int64_t>(v) >= -2147483647 - 1 && static_cast<std::int64_t>(v) <= 2147483647;
    else
      fits = static_cast<std::uint64_t>(v) <= 2147483647u;
    if (!fits) throw_bound_literal(std::to_string(v));
    return emit_int_constant(dtype::i32, static_cast<std::int64_t>(v));
  }
}

// Whether a (non-generic) loop body takes a C++ number, as `[&](int i)` does.
template <class Tuple>
struct has_cpp_number;
template <class... P>
struct has_cpp_number<std::tuple<P...>> {
  static constexpr bool value = (std::is_arithmetic_v<P> || ...);
};
template <class F>
constexpr bool takes_cpp_index() {
  if constexpr (kernel_lambda<F>)
    return has_cpp_number<lambda_params<F>>::value;
  else
    return false;
}
template <class F>
constexpr bool check_loop_body() {
  static_assert(!takes_cpp_index<F>(),
                "a qd::range_for body takes its loop indices as qd::i32 (traced values), not int or another C++ "
                "number: write [&](qd::i32 i) { ... }");
  return !takes_cpp_index<F>();
}
}  // namespace detail

// The iteration space of a multi-dimensional range_for: qd::ndrange(h, w).
template <int N>
struct ndrange_t {
  std::array<ir::id, N> extents;
};

template <operand... E>
ndrange_t<static_cast<int>(sizeof...(E))> ndrange(const E&... extents) {
  static_assert(sizeof...(E) >= 1 && sizeof...(E) <= 4, "qd::ndrange takes 1 to 4 extents");
  return {{detail::bound_id(extents)...}};  // narrowed to i32 by the loop
}

// for i in [begin, end): a parallel construct at the top level of a kernel,
// an ordinary serial loop anywhere else. The body receives a qd::i32 index.
template <operand B, operand E, class F>
void range_for(const B& begin, const E& end, F&& body, qd::source_location loc = qd::source_location::current()) {
  if constexpr (detail::check_loop_body<F>()) {
    detail::at(loc);
    ir::id index = detail::begin_range_for(detail::bound_id(begin), detail::bound_id(end));
    std::forward<F>(body)(i32::from_id(index));
    detail::end_range_for();
  }
}

template <operand E, class F>
void range_for(const E& end, F&& body, qd::source_location loc = qd::source_location::current()) {
  range_for(0, end, std::forward<F>(body), loc);
}

// for (i, j, ...) in ndrange, row-major: one parallel construct over the whole
// space at the top level; the body receives one qd::i32 per dimension.
template <int N, class F>
void range_for(const ndrange_t<N>& range, F&& body, qd::source_location loc = qd::source_location::current()) {
  if constexpr (detail::check_loop_body<F>()) {
    detail::at(loc);
    std::vector<ir::id> index =
        detail::begin_range_for_nd(std::vector<ir::id>(range.extents.begin(), range.extents.end()));
    [&]<std::size_t... I>(std::index_sequence<I...>) { std::forward<F>(body)(i32::from_id(index[I])...); }
    (std::make_index_sequence<static_cast<std::size_t>(N)>{});
    detail::end_range_for();
  }
}

// Every form with a qd::loop_config just before the body (top-level loops only).
template <operand B, operand E, class F>
void range_for(const B& begin, const E& end, const loop_config& config, F&& body,
               qd::source_location loc = qd::source_location::current()) {
  detail::set_loop_config(config);
  range_for(begin, end, std::forward<F>(body), loc);
}

template <operand E, class F>
void range_for(const E& end, const loop_config& config, F&& body,
               qd::source_location loc = qd::source_location::current()) {
  detail::set_loop_config(config);
  range_for(0, end, std::forward<F>(body), loc);
}

template <int N, class F>
void range_for(const ndrange_t<N>& range, const loop_config& config, F&& body,
               qd::source_location loc = qd::source_location::current()) {
  detail::set_loop_config(config);
  range_for(range, std::forward<F>(body), loc);
}

// The result of qd::if_, for attaching .else_(...).
class if_handle {
 public:
  explicit if_handle(ir::id node) : node_(node) {}
  template <class F>
  void else_(F&& otherwise, qd::source_location loc = qd::source_location::current()) const {
    detail::at(loc);
    detail::begin_else(node_);
    std::forward<F>(otherwise)();
    detail::end_else();
  }

 private:
  ir::id node_;
};

// Run-time branch on a traced boolean. For a trace-time decision use a C++ if.
template <class C, class F>
if_handle if_(const C& cond, F&& then, qd::source_location loc = qd::source_location::current()) {
  static_assert(traced<C>,
                "qd::if_ needs a traced boolean (a comparison of traced values); for a condition known while "
                "tracing, use a plain C++ if");
  static_assert(detail::traced_dtype<C> == dtype::boolean,
                "qd::if_ needs a boolean condition; compare it, e.g. x != 0");
  detail::at(loc);
  ir::id node = detail::begin_if(cond.id());
  std::forward<F>(then)();
  detail::end_if(node);
  return if_handle(node);
}

// while (cond()) body(); cond is a callable returning a traced boolean.
template <class C, class F>
void while_(C&& cond, F&& body, qd::source_location loc = qd::source_location::current()) {
  detail::at(loc);
  ir::id node = detail::begin_while_condition();
  auto c = std::forward<C>(cond)();
  static_assert(traced<decltype(c)>, "the condition of qd::while_ must return a traced boolean");
  detail::begin_while_body(node, c.id());
  std::forward<F>(body)();
  detail::end_while();
}

// Atomic read-modify-write of an array element or a qd::var; returns the old value.
// The bitwise ones take integers only; on floats min and max are IEEE minNum/maxNum
// (a NaN operand never replaces a number; a stored NaN is replaced).
namespace detail {
template <class T, ir::atomic_op O>
constexpr void check_atomic_type() {
  static_assert(!ir::is_bitwise(O) || is_integral(dtype_of<T>),
                "qd::atomic_and, atomic_or and atomic_xor take integer elements and variables; for the bits of a "
                "float use qd::bit_cast<qd::u32>(x) on an integer array");
  static_assert(!std::is_same_v<T, bool>, "qd atomics do not take booleans; use an integer");
}
}  // namespace detail

#define QD_ATOMIC_FUNCTION(fname, aop)                                                                         \
  template <element_type T, operand V>                                                                         \
  expr<T> fname(const element_ref<T>& target, const V& value,                                                  \
                qd::source_location loc = qd::source_location::current()) {                                    \
    detail::at(loc);                                                                                           \
    detail::check_atomic_type<T, ir::atomic_op::aop>();                                                        \
    static_assert(detail::assignable_to<V>(dtype_of<T>),                                                       \
                  #fname ": the value must convert to the element type without loss; use qd::cast");           \
    return expr<T>::from_id(                                                                                   \
        detail::emit_global_atomic(ir::atomic_op::aop, target.where(), detail::value_id(value, dtype_of<T>))); \
  }                                                                                                            \
  template <class W, operand V, class T = typename var<W>::value_type>                                         \
  expr<T> fname(var<W>& target, const V& value) {                                                              \
    detail::check_atomic_type<T, ir::atomic_op::aop>();                                                        \
    static_assert(detail::assignable_to<V>(dtype_of<T>),                                                       \
                  #fname ": the value must convert to the variable's type without loss; use qd::cast");        \
    return expr<T>::from_id(                                                                                   \
        detail::emit_local_atomic(ir::atomic_op::aop, target.decl(), detail::value_id(value, dtype_of<T>)));   \
  }
QD_ATOMIC_FUNCTION(atomic_add, add)
QD_ATOMIC_FUNCTION(atomic_sub, sub)
QD_ATOMIC_FUNCTION(atomic_min, min)
QD_ATOMIC_FUNCTION(atomic_max, max)
QD_ATOMIC_FUNCTION(atomic_mul, mul)
QD_ATOMIC_FUNCTION(atomic_and, bit_and)
QD_ATOMIC_FUNCTION(atomic_or, bit_or)
QD_ATOMIC_FUNCTION(atomic_xor, bit_xor)
QD_ATOMIC_FUNCTION(atomic_exchange, exchange)
#undef QD_ATOMIC_FUNCTION

// Compare-and-swap: stores `desired` where the target holds `expected` (compared bit for
// bit, so a NaN matches its own bits and -0.0 does not match 0.0); returns the old value,
// which equals `expected` exactly when the swap happened.
template <element_type T, operand E, operand D>
expr<T> atomic_cas(const element_ref<T>& target, const E& expected, const D& desired,
                   qd::source_location loc = qd::source_location::current()) {
  detail::at(loc);
  detail::check_atomic_type<T, ir::atomic_op::cas>();
  static_assert(detail::assignable_to<E>(dtype_of<T>) && detail::assignable_to<D>(dtype_of<T>),
                "atomic_cas: expected and desired must convert to the element type without loss; use qd::cast");
  return expr<T>::from_id(detail::emit_global_atomic(ir::atomic_op::cas, target.where(),
                                                     detail::value_id(desired, dtype_of<T>),
                                                     detail::value_id(expected, dtype_of<T>)));
}
template <class W, operand E, operand D, class T = typename var<W>::value_type>
expr<T> atomic_cas(var<W>& target, const E& expected, const D& desired) {
  detail::check_atomic_type<T, ir::atomic_op::cas>();
  static_assert(detail::assignable_to<E>(dtype_of<T>) && detail::assignable_to<D>(dtype_of<T>),
                "atomic_cas: expected and desired must convert to the variable's type without loss; use qd::cast");
  return expr<T>::from_id(detail::emit_local_atomic(ir::atomic_op::cas, target.decl(),
                                                    detail::value_id(desired, dtype_of<T>),
                                                    detail::value_id(expected, dtype_of<T>)));
}

// A uniform draw: [0, 1) for floating types, uniformly random bits for integers.
// Counter-based: reproducible for a given seed (config), launch and iteration. The draws
// of one expression take their places in the stream in source order (where each
// qd::random is written), not in the compiler's evaluation order (detail::draw_group).
template <class E = float, class T = detail::element_of<E>>
expr<T> random(qd::source_location loc = qd::source_location::current(),
               const detail::draw_group& = detail::draw_group()) {
  detail::at(loc);
  static_assert(!std::is_same_v<T, bool>, "qd::random<bool> is not supported; use qd::random<u32>() & 1");
  return expr<T>::from_id(detail::emit_random(dtype_of<T>, loc.file_name(), static_cast<std::uint32_t>(loc.line()),
                                              static_cast<std::uint32_t>(loc.column())));
}

// Checks `cond` when the program runs with config.debug (QD_DEBUG=1): a launch in which
// it is false throws a qd::user_error naming the kernel, the message and this line.
// Without debug it is compiled out (no code, and cache keys of their own).
template <class C>
void assert_(const C& cond, std::string_view message, qd::source_location loc = qd::source_location::current()) {
  static_assert(traced<C>,
                "qd::assert_ checks a traced boolean at run time; for a condition known while tracing, "
                "check it in C++ (a static_assert or a C++ if)");
  if constexpr (traced<C>) {
    static_assert(detail::traced_dtype<C> == dtype::boolean,
                  "qd::assert_ needs a boolean condition; compare it, e.g. x != 0");
    detail::at(loc);
    detail::emit_assert(cond.id(), message);
  }
}

// A load that is never removed, merged or recomputed.
template <element_type T>
expr<T> volatile_load(const element_ref<T>& ref, qd::source_location loc = qd::source_location::current()) {
  detail::at(loc);
  detail::place p = ref.where();
  p.flags = static_cast<std::uint8_t>(p.flags | ir::access::is_volatile);
  return expr<T>::from_id(detail::emit_global_load(p));
}

// Prints its arguments separated by spaces, then a newline (device printf on GPUs).
// A class template (qd::print(a, b) constructs one) so that it can record its line.
template <class... A>
struct print {
  explicit print(const A&... args, qd::source_location loc = qd::source_location::current()) {
    detail::at(loc);
    std::vector<std::int32_t> items;
    auto add = [&](const auto& arg) {
      using X = std::remove_cvref_t<decltype(arg)>;
      if constexpr (std::is_convertible_v<const X&, std::string_view>)
        items.push_back(detail::intern_text(std::string_view(arg)));
      else if constexpr (traced<X>)
        items.push_back(arg.id());
      else if constexpr (literal<X> && detail::floating_literal<X>)
        items.push_back(
            detail::emit_float_constant(dtype::f64, static_cast<double>(static_cast<detail::literal_t<X>>(arg))));
      else if constexpr (literal<X> && std::is_integral_v<detail::literal_t<X>>)
        items.push_back(
            detail::emit_int_constant(dtype::i64, static_cast<std::int64_t>(static_cast<detail::literal_t<X>>(arg))));
      else
        static_assert(sizeof(X) == 0, "qd::print takes text, numbers and traced values");
    };
    (add(args), ...);
    detail::emit_print(items);
  }
};
template <class... A>
print(const A&...) -> print<A...>;

}  // namespace qd::inline v0
