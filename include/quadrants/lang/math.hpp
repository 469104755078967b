// Math on traced values: sqrt, exp, log, sin, cos, tanh, pow, abs, min, max,
// floor, ceil, fma, qd::cast<T> and qd::select. Integers promote to f32 where a float is needed.
#pragma once

#include "quadrants/lang/expr.hpp"

namespace qd {
namespace detail {

template <class A>
constexpr dtype float_type() {
  constexpr dtype t = traced_dtype<A>;
  return t == dtype::f64 ? dtype::f64 : dtype::f32;
}

template <ir::unary_op O, class A>
auto float_unary(const A& a) {
  static_assert(traced<A>, "qd math functions take traced values; for C++ numbers use <cmath>");
  constexpr dtype r = float_type<A>();
  return make_expr<r>(emit_unary(O, r, a.id()));
}

}  // namespace detail

template <traced A> auto sqrt(const A& a) { return detail::float_unary<ir::unary_op::sqrt>(a); }
template <traced A> auto exp(const A& a) { return detail::float_unary<ir::unary_op::exp>(a); }
template <traced A> auto log(const A& a) { return detail::float_unary<ir::unary_op::log>(a); }
template <traced A> auto sin(const A& a) { return detail::float_unary<ir::unary_op::sin>(a); }
template <traced A> auto cos(const A& a) { return detail::float_unary<ir::unary_op::cos>(a); }
template <traced A> auto tanh(const A& a) { return detail::float_unary<ir::unary_op::tanh>(a); }
template <traced A> auto floor(const A& a) { return detail::float_unary<ir::unary_op::floor>(a); }
template <traced A> auto ceil(const A& a) { return detail::float_unary<ir::unary_op::ceil>(a); }

template <traced A>
auto abs(const A& a) {
  constexpr dtype r = detail::weak_promote(detail::traced_dtype<A>, false);
  return detail::make_expr<r>(detail::emit_unary(ir::unary_op::abs, r, a.id()));
}

template <class A, class B> requires detail::binary_operands<A, B>
auto min(const A& a, const B& b) { return detail::arithmetic<ir::binary_op::min>(a, b); }
template <class A, class B> requires detail::binary_operands<A, B>
auto max(const A& a, const B& b) { return detail::arithmetic<ir::binary_op::max>(a, b); }

// pow is always floating point: integer operands promote to f32.
template <class A, class B> requires detail::binary_operands<A, B>
auto pow(const A& a, const B& b) {
  constexpr dtype t = detail::arithmetic_type<A, B>();
  constexpr dtype r = is_float(t) ? t : dtype::f32;
  return detail::make_expr<r>(detail::emit_binary(ir::binary_op::pow, r, detail::value_id(a, r), detail::value_id(b, r)));
}

namespace detail {
template <class A>
constexpr bool is_traced_f64() {
  if constexpr (traced<A>) return traced_dtype<A> == dtype::f64;
  else return false;
}
}  // namespace detail

// a * b + c with a single rounding. f64 when a traced operand is f64, else f32;
// any operand may be a C++ number.
template <class A, class B, class C>
  requires(operand<A> && operand<B> && operand<C> && (traced<A> || traced<B> || traced<C>))
auto fma(const A& a, const B& b, const C& c) {
  constexpr dtype r =
      detail::is_traced_f64<A>() || detail::is_traced_f64<B>() || detail::is_traced_f64<C>() ? dtype::f64 : dtype::f32;
  return detail::make_expr<r>(
      detail::emit_fma(r, detail::value_id(a, r), detail::value_id(b, r), detail::value_id(c, r)));
}

// Explicit conversion, including the narrowing ones implicit conversion refuses.
// The target is an element type (float) or its traced name (qd::f32).
template <class To, operand A>
auto cast(const A& a) {
  using T = detail::element_of<To>;
  return expr<T>::from_id(detail::value_id(a, dtype_of<T>));
}

namespace detail {
template <class A>
constexpr bool is_boolean_operand() {
  if constexpr (traced<A>) return traced_dtype<A> == dtype::boolean;
  else return std::is_same_v<std::remove_cvref_t<A>, bool>;
}

// select keeps booleans boolean; two C++ numbers give their C++ type (-9.8 and 0.1: f64).
template <class A, class B>
constexpr dtype select_type() {
  if constexpr (!traced<A> && !traced<B>) {
    return literal_type<A, B>();
  } else if constexpr (is_boolean_operand<A>() && is_boolean_operand<B>()) {
    return dtype::boolean;
  } else {
    return arithmetic_type<A, B>();
  }
}
}  // namespace detail

// cond ? a : b, evaluating both sides.
template <traced C, operand A, operand B>
auto select(const C& cond, const A& a, const B& b) {
  static_assert(detail::traced_dtype<C> == dtype::boolean, "qd::select needs a boolean condition");
  constexpr dtype r = detail::select_type<A, B>();
  return detail::make_expr<r>(detail::emit_select(r, cond.id(), detail::value_id(a, r), detail::value_id(b, r)));
}

}  // namespace qd
