// Math on traced values: <cmath>'s functions, GLSL's clamp/mix/step/smoothstep, bit
// counts and casts, Python's floor division, qd::cast<T> and qd::select. Integers promote
// to f32 where a float is needed; f16 computes in f32.
#pragma once

#include <type_traits>

#include "quadrants/lang/expr.hpp"

namespace qd::inline v0 {
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

template <ir::unary_op O, class A>
expr<bool> float_predicate(const A& a) {
  constexpr dtype t = float_type<A>();
  return expr<bool>::from_id(emit_unary(O, dtype::boolean, convert(a.id(), t)));
}

// The result type of a function of several operands, at least one traced: their
// arithmetic type, made floating (f32) where integers need a float.
template <class A, class B>
constexpr dtype floating_type() {
  constexpr dtype t = arithmetic_type<A, B>();
  return is_float(t) ? t : dtype::f32;
}

template <ir::binary_op O, class A, class B>
auto float_binary(const A& a, const B& b) {
  constexpr dtype r = floating_type<A, B>();
  return make_expr<r>(emit_binary(O, r, value_id(a, r), value_id(b, r)));
}

template <class A>
constexpr void check_bit_operand() {
  static_assert(is_integral(traced_dtype<A>),
                "qd::popcnt, qd::clz and qd::ffs take integers; for a float's bits use qd::bit_cast<qd::u32>(x)");
}

template <ir::unary_op O, class A>
expr<std::int32_t> bit_count(const A& a) {
  check_bit_operand<A>();
  return expr<std::int32_t>::from_id(emit_unary(O, dtype::i32, a.id()));
}

// The common type of operands of which any may be a C++ number (at least one traced).
template <class A, class B, class C>
constexpr dtype common_type3() {
  if constexpr (traced<A> || traced<B>) {
    constexpr dtype ab = arithmetic_type<A, B>();
    if constexpr (traced<C>)
      return promote(ab, traced_dtype<C>);
    else
      return weak_promote(ab, floating_literal<C>);
  } else {
    return weak_promote(traced_dtype<C>, floating_literal<A> || floating_literal<B>);
  }
}

}  // namespace detail

template <traced A>
auto sqrt(const A& a) {
  return detail::float_unary<ir::unary_op::sqrt>(a);
}
template <traced A>
auto exp(const A& a) {
  return detail::float_unary<ir::unary_op::exp>(a);
}
template <traced A>
auto log(const A& a) {
  return detail::float_unary<ir::unary_op::log>(a);
}
template <traced A>
auto sin(const A& a) {
  return detail::float_unary<ir::unary_op::sin>(a);
}
template <traced A>
auto cos(const A& a) {
  return detail::float_unary<ir::unary_op::cos>(a);
}
template <traced A>
auto tanh(const A& a) {
  return detail::float_unary<ir::unary_op::tanh>(a);
}
template <traced A>
auto floor(const A& a) {
  return detail::float_unary<ir::unary_op::floor>(a);
}
template <traced A>
auto ceil(const A& a) {
  return detail::float_unary<ir::unary_op::ceil>(a);
}
template <traced A>
auto tan(const A& a) {
  return detail::float_unary<ir::unary_op::tan>(a);
}
template <traced A>
auto asin(const A& a) {
  return detail::float_unary<ir::unary_op::asin>(a);
}
template <traced A>
auto acos(const A& a) {
  return detail::float_unary<ir::unary_op::acos>(a);
}
// 1 / sqrt(x)
template <traced A>
auto rsqrt(const A& a) {
  return detail::float_unary<ir::unary_op::rsqrt>(a);
}
template <traced A>
auto log2(const A& a) {
  return detail::float_unary<ir::unary_op::log2>(a);
}
template <traced A>
auto exp2(const A& a) {
  return detail::float_unary<ir::unary_op::exp2>(a);
}
// Halfway cases away from zero, as std::round.
template <traced A>
auto round(const A& a) {
  return detail::float_unary<ir::unary_op::round>(a);
}
template <traced A>
auto trunc(const A& a) {
  return detail::float_unary<ir::unary_op::trunc>(a);
}
// x - floor(x), in [0, 1)
template <traced A>
auto fract(const A& a) {
  auto x = detail::make_expr<detail::float_type<A>()>(detail::convert(a.id(), detail::float_type<A>()));
  return x - qd::floor(x);
}

template <traced A>
expr<bool> isnan(const A& a) {
  return detail::float_predicate<ir::unary_op::isnan>(a);
}
template <traced A>
expr<bool> isinf(const A& a) {
  return detail::float_predicate<ir::unary_op::isinf>(a);
}
template <traced A>
expr<bool> isfinite(const A& a) {
  return detail::float_predicate<ir::unary_op::isfinite>(a);
}

// Set bits; leading zero bits (the width for 0); the 1-based position of the lowest set
// bit (0 for 0). Of the operand's own width: qd::clz of a qd::u8 counts among 8 bits.
template <traced A>
expr<std::int32_t> popcnt(const A& a) {
  return detail::bit_count<ir::unary_op::popcnt>(a);
}
template <traced A>
expr<std::int32_t> clz(const A& a) {
  return detail::bit_count<ir::unary_op::clz>(a);
}
template <traced A>
expr<std::int32_t> ffs(const A& a) {
  return detail::bit_count<ir::unary_op::ffs>(a);
}

// The bits of `a` as type To (qd::u32, float, ...) of the same size.
template <class To, traced A>
auto bit_cast(const A& a) {
  using T = detail::element_of<To>;
  static_assert(size_of(dtype_of<T>) == size_of(detail::traced_dtype<A>),
                "qd::bit_cast keeps the size: qd::f32 <-> qd::i32/qd::u32, qd::f64 <-> qd::i64/qd::u64, qd::f16 <-> "
                "qd::i16/qd::u16; convert the value with qd::cast<T> first to change the size");
  static_assert(!std::is_same_v<T, bool> && detail::traced_dtype<A> != dtype::boolean,
                "qd::bit_cast does not take or give booleans");
  if constexpr (dtype_of<T> == detail::traced_dtype<A>)
    return expr<T>::from_id(a.id());
  else
    return expr<T>::from_id(detail::emit_unary(ir::unary_op::bit_cast, dtype_of<T>, a.id()));
}

template <traced A>
auto abs(const A& a) {
  constexpr dtype r = detail::weak_promote(detail::traced_dtype<A>, false);
  return detail::make_expr<r>(detail::emit_unary(ir::unary_op::abs, r, a.id()));
}

// +1, -1 or 0 of the operand's (promoted) type; a NaN gives NaN, -0.0 gives -0.0.
template <traced A>
auto sign(const A& a) {
  constexpr dtype r = detail::weak_promote(detail::traced_dtype<A>, false);
  auto x = detail::make_expr<r>(detail::convert(a.id(), r));
  using R = typename decltype(x)::value_type;
  auto zero = [&] {
    if constexpr (is_float(r))
      return x * R(0);  // keeps the sign of zero and NaN, with a zero derivative
    else
      return detail::make_expr<r>(detail::emit_int_constant(r, 0));
  };
  auto positive = detail::make_expr<r>(detail::emit_int_constant(r, 1));
  auto negative = detail::make_expr<r>(detail::emit_int_constant(r, -1));
  return detail::make_expr<r>(detail::emit_select(r, (x > R(0)).id(), positive.id(),
                                                  detail::emit_select(r, (x < R(0)).id(), negative.id(), zero().id())));
}

template <class A, class B>
requires detail::binary_operands<A, B>
auto min(const A& a, const B& b) { return detail::arithmetic<ir::binary_op::min>(a, b); }
template <class A, class B>
requires detail::binary_operands<A, B>
auto max(const A& a, const B& b) { return detail::arithmetic<ir::binary_op::max>(a, b); }

// pow is always floating point: integer operands promote to f32.
template <class A, class B>
requires detail::binary_operands<A, B>
auto pow(const A& a, const B& b) { return detail::float_binary<ir::binary_op::pow>(a, b); }
// The angle of (x, y), in [-pi, pi].
template <class A, class B>
requires detail::binary_operands<A, B>
auto atan2(const A& y, const B& x) { return detail::float_binary<ir::binary_op::atan2>(y, x); }
// C's fmod: the remainder with the dividend's sign.
template <class A, class B>
requires detail::binary_operands<A, B>
auto fmod(const A& a, const B& b) { return detail::float_binary<ir::binary_op::fmod>(a, b); }

// Python's a // b and a % b: the quotient rounded down, the remainder with the divisor's
// sign. Integers: x // 0 and x % 0 give 0, as / and % do; floats follow Python's float ops.
template <class A, class B>
requires detail::binary_operands<A, B>
auto floordiv(const A& a, const B& b) { return detail::arithmetic<ir::binary_op::floordiv>(a, b); }
template <class A, class B>
requires detail::binary_operands<A, B>
auto floormod(const A& a, const B& b) { return detail::arithmetic<ir::binary_op::floormod>(a, b); }

// x below lo gives lo, above hi gives hi, else x (a NaN stays NaN): std::clamp.
template <class X, class L, class H>
requires(operand<X>&& operand<L>&& operand<H> &&
         (traced<X> || traced<L> || traced<H>)) auto clamp(const X& x, const L& lo, const H& hi) {
  constexpr dtype r = detail::common_type3<X, L, H>();
  static_assert(r != dtype::boolean, "qd::clamp takes numbers");
  auto v = detail::make_expr<r>(detail::value_id(x, r));
  auto l = detail::make_expr<r>(detail::value_id(lo, r));
  auto h = detail::make_expr<r>(detail::value_id(hi, r));
  return detail::make_expr<r>(
      detail::emit_select(r, (v < l).id(), l.id(), detail::emit_select(r, (h < v).id(), h.id(), v.id())));
}

// a * (1 - t) + b * t (GLSL's mix, Quadrants' qd.math.mix): exactly a at t = 0 and b at t = 1.
template <class A, class B, class T>
requires(operand<A>&& operand<B>&& operand<T> && (traced<A> || traced<B> || traced<T>)) auto mix(const A& a, const B& b,
                                                                                                 const T& t) {
  constexpr dtype c = detail::common_type3<A, B, T>();
  constexpr dtype r = is_float(c) ? c : dtype::f32;
  auto x = detail::make_expr<r>(detail::value_id(a, r));
  auto y = detail::make_expr<r>(detail::value_id(b, r));
  auto s = detail::make_expr<r>(detail::value_id(t, r));
  return x * (1 - s) + y * s;
}

// 0 where x < edge, else 1 (GLSL's step).
template <class E, class X>
requires detail::binary_operands<E, X>
auto step(const E& edge, const X& x) {
  constexpr dtype r = detail::floating_type<E, X>();
  auto e = detail::make_expr<r>(detail::value_id(edge, r));
  auto v = detail::make_expr<r>(detail::value_id(x, r));
  return detail::make_expr<r>(
      detail::emit_select(r, (v < e).id(), detail::emit_float_constant(r, 0.0), detail::emit_float_constant(r, 1.0)));
}

// Hermite interpolation between 0 at e0 and 1 at e1: t * t * (3 - 2 t), t = clamp((x - e0) / (e1 - e0), 0, 1).
template <class E0, class E1, class X>
requires(operand<E0>&& operand<E1>&& operand<X> &&
         (traced<E0> || traced<E1> || traced<X>)) auto smoothstep(const E0& e0, const E1& e1, const X& x) {
  constexpr dtype c = detail::common_type3<E0, E1, X>();
  constexpr dtype r = is_float(c) ? c : dtype::f32;
  auto lo = detail::make_expr<r>(detail::value_id(e0, r));
  auto hi = detail::make_expr<r>(detail::value_id(e1, r));
  auto v = detail::make_expr<r>(detail::value_id(x, r));
  auto t = qd::clamp((v - lo) / (hi - lo), 0, 1);
  return t * t * (3 - 2 * t);
}

namespace detail {
template <class A>
constexpr bool is_traced_f64() {
  if constexpr (traced<A>)
    return traced_dtype<A> == dtype::f64;
  else
    return false;
}
}  // namespace detail

// a * b + c with a single rounding. f64 when a traced operand is f64, else f32;
// any operand may be a C++ number.
template <class A, class B, class C>
requires(operand<A>&& operand<B>&& operand<C> && (traced<A> || traced<B> || traced<C>)) auto fma(const A& a, const B& b,
                                                                                                 const C& c) {
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
  if constexpr (traced<A>)
    return traced_dtype<A> == dtype::boolean;
  else
    return std::is_same_v<std::remove_cvref_t<A>, bool>;
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

}  // namespace qd::inline v0
