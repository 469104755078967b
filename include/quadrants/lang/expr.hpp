// qd::expr<T>: an immutable traced value of element type T (qd::f32, qd::i32, ...),
// its operators, and the compile-time promotion rules that type them.
#pragma once

#include <concepts>
#include <cstdint>
#include <type_traits>

#include "quadrants/base/dtype.hpp"
#include "quadrants/lang/template_arg.hpp"
#include "quadrants/lang/trace.hpp"

namespace qd::inline v0 {

template <element_type T>
class expr;
template <class T>
class var;  // T: an element type (float) or its traced name (qd::f32)
template <element_type T>
class element_ref;

namespace detail {

// false, but only once T is known: for static_asserts in templates that must not be used.
template <class T>
inline constexpr bool dependent_false = false;

// The body of a traced value's conversion to its C++ type, instantiated only where C++
// uses one as a bool or a number (`if (x[i] > 0)`, `float v = x[i]`, `std::sqrt(x[i])`).
// Converting to exactly its own type makes `std::sqrt(x[i])` pick one overload and land
// here, instead of an ambiguous-overload error listing every <cmath> signature.
template <class T>
constexpr bool no_cpp_value() {
  static_assert(dependent_false<T>,
                "a traced value (qd::f32, qd::boolean, a qd::var, an array element) has no C++ value while the kernel "
                "is traced. For math, use qd::sqrt, qd::exp, qd::abs, ... (std::sqrt and the rest of <cmath> take "
                "C++ numbers). For a run-time decision, use qd::if_(cond, [&] { ... }).else_([&] { ... }), "
                "qd::select(cond, a, b) or qd::while_ (a C++ if, ?: or loop on it would decide once, at trace time); "
                "to keep a traced value, use qd::f32 v = x[i]; to accumulate one, use a qd::var (qd::var<float> acc "
                "= 0.0f; acc += x[i];)");
  return false;
}

// The body of `acc += x[i]` where acc is a C++ number.
template <class A>
void no_number_update() {
  static_assert(dependent_false<A>,
                "a C++ number cannot accumulate a traced value: `acc += x[i]` on a float or int would run once, at "
                "trace time. Declare the accumulator as a qd::var, e.g. qd::var<float> acc = 0.0f; acc += x[i];");
}

template <class A>
struct traced_traits {
  static constexpr bool value = false;
};
template <class T>
struct traced_traits<expr<T>> {
  static constexpr bool value = true;
  using type = T;
};
template <class T>
struct traced_traits<var<T>> {
  static constexpr bool value = true;
  using type = typename var<T>::value_type;
};
template <class T>
struct traced_traits<element_ref<T>> {
  static constexpr bool value = true;
  using type = T;
};

}  // namespace detail

// A value recorded into the kernel's IR: qd::expr, qd::var or an array element.
template <class A>
concept traced = detail::traced_traits<std::remove_cvref_t<A>>::value;

namespace detail {
// A host binary16 number: qd::half, or the compiler's _Float16 where it has one.
template <class L>
inline constexpr bool is_host_half = std::is_same_v<L, half>
#ifdef __FLT16_MAX__
                                     || std::is_same_v<L, _Float16>
#endif
    ;
// C++ numbers (a host binary16 included), and template arguments
// (qd::types::template_arg<int>) of arithmetic type.
template <class A>
struct literal_traits {
  static constexpr bool value = std::is_arithmetic_v<A> || is_host_half<A>;
  using type = A;
};
template <class T>
struct literal_traits<types::template_arg<T>> {
  static constexpr bool value = std::is_arithmetic_v<T>;
  using type = T;
};
// A C++ floating-point number (float, double, a host binary16), or a template argument of one.
template <class L>
inline constexpr bool floating_literal =
    std::is_floating_point_v<typename literal_traits<std::remove_cvref_t<L>>::type> ||
    is_host_half<typename literal_traits<std::remove_cvref_t<L>>::type>;
}  // namespace detail

// A C++ number used inside a kernel; it takes the type of the traced operand it meets.
template <class A>
concept literal = detail::literal_traits<std::remove_cvref_t<A>>::value;

template <class A>
concept operand = traced<A> || literal<A>;

namespace detail {

template <traced A>
using traced_type = typename traced_traits<std::remove_cvref_t<A>>::type;

template <traced A>
inline constexpr dtype traced_dtype = dtype_of<traced_type<A>>;

// The C++ type of a literal operand (int for 3 and for a qd::types::template_arg<int>).
template <literal A>
using literal_t = typename literal_traits<std::remove_cvref_t<A>>::type;

// The type of an operation whose operands are all C++ values: C++'s own usual arithmetic
// conversions (qd::select(c, -9.8, 0.1) is f64, select(c, 1, 2) i32, two bools a bool).
template <literal A, literal B>
constexpr dtype literal_type() {
  using LA = literal_t<A>;
  using LB = literal_t<B>;
  if constexpr (std::is_same_v<LA, bool> && std::is_same_v<LB, bool>) {
    return dtype::boolean;
  } else if constexpr (is_host_half<LA> && is_host_half<LB>) {
    return dtype::f16;
  } else if constexpr (is_host_half<LA> || is_host_half<LB>) {
    // binary16 meeting another number: as C++ does with _Float16 (the other's floating
    // type, an integer gives f16).
    using O = std::conditional_t<is_host_half<LA>, LB, LA>;
    if constexpr (std::is_floating_point_v<O>)
      return dtype_of<O>;
    else
      return dtype::f16;
  } else {
    using C = std::common_type_t<decltype(+std::declval<LA>()), decltype(+std::declval<LB>())>;
    static_assert(element_type<C>,
                  "an operation on two C++ numbers takes their C++ type, and this one (such as long "
                  "double or unsigned long long) is no Quadrants type; convert one with qd::cast<T>");
    if constexpr (element_type<C>)
      return dtype_of<C>;
    else
      return dtype::f64;
  }
}

// Literals are weakly typed, like Quadrants' Python literals: they adopt the
// traced operand's type; a floating literal with an integer operand gives f32.
constexpr dtype weak_promote(dtype traced_type, bool floating) {
  if (floating && !is_float(traced_type)) return dtype::f32;
  return promote(traced_type, traced_type);  // bool and narrow integers to i32, f16 to f32
}

template <class A, class B>
constexpr dtype arithmetic_type() {
  if constexpr (traced<A> && traced<B>)
    return promote(traced_dtype<A>, traced_dtype<B>);
  else if constexpr (traced<A>)
    return weak_promote(traced_dtype<A>, floating_literal<B>);
  else
    return weak_promote(traced_dtype<B>, floating_literal<A>);
}

// Whether a value of operand type A may be stored into / bound to type To without qd::cast.
template <class A>
constexpr bool assignable_to(dtype to) {
  if constexpr (traced<A>) {
    return implicitly_convertible(traced_dtype<A>, to);
  } else {
    using L = literal_t<A>;
    if constexpr (std::is_same_v<L, bool>)
      return to == dtype::boolean;
    else if constexpr (floating_literal<L>)
      return is_float(to);
    else
      return to != dtype::boolean;
  }
}

// The IR value of an operand, converted to `to`.
template <class A>
ir::id value_id(const A& a, dtype to) {
  if constexpr (traced<A>) {
    return convert(a.id(), to);
  } else if constexpr (floating_literal<A>) {
    return emit_float_constant(to, static_cast<double>(static_cast<literal_t<A>>(a)));
  } else {
    return emit_int_constant(to, static_cast<std::int64_t>(static_cast<literal_t<A>>(a)));
  }
}

template <class T>
struct from_id_tag {};

// The element type named by T: T itself (float), or U for a traced name (qd::f32 = expr<U>).
template <class T>
struct element_of_impl {
  static_assert(element_type<T>,
                "expected an element type (float, double, std::int32_t, ...) or qd::f32, qd::i32, ...");
  using type = T;
};
template <class U>
struct element_of_impl<expr<U>> {
  using type = U;
};
template <class T>
using element_of = typename element_of_impl<std::remove_cv_t<T>>::type;

}  // namespace detail

namespace detail {
// Reads and sets which array element a member of an element proxy stands for
// (lang/struct_ndarray_param.hpp); nothing else binds a handle.
struct expr_binding;
}  // namespace detail

template <element_type T>
class expr {
 public:
  using value_type = T;
  static constexpr dtype type = dtype_of<T>;

  // A C++ number: emits a constant.
  template <literal L>
  requires(detail::assignable_to<L>(dtype_of<T>)) expr(L value)
      : id_(detail::value_id(value, type)), block_(detail::current_block()) {}

  // Another traced value whose type converts without loss (i32 -> f32, f32 -> f64, ...).
  // Narrowing conversions need qd::cast<T>(e).
  template <traced A>
  requires(!std::is_same_v<std::remove_cvref_t<A>, expr> &&
           implicitly_convertible(detail::traced_dtype<A>, dtype_of<T>)) expr(const A& value)
      : id_(detail::convert(value.id(), type)), block_(detail::current_block()) {}

  // A copy is a value: a copied member of an array element no longer stores into it.
  expr(const expr& other) : id_(other.id_), block_(detail::current_block()) {}

  // Rebinding a handle is trace-time metaprogramming (`acc = acc * p` in a C++
  // loop) and is allowed in the block where the handle lives. Inside a nested
  // qd::if_ / range_for / while_ body it would not change the run-time value, so
  // it is a qd::user_error there: use qd::var<T> for a mutable local.
  // A member of an array element (`p[i].m = v`) is stored instead, as `x[i] = v` is,
  // and keeps the value loaded where p[i] was written.
  expr& operator=(const expr& other) {
    if (bound_ >= 0) {
      detail::store_bound(bound_, other.id_);
      return *this;
    }
    detail::check_rebind(block_);
    id_ = other.id_;
    return *this;
  }

  // A traced value has no C++ value: use qd::if_ / qd::select, or a plain C++ value
  // for trace-time decisions. Using it as one is a compile error that says so.
  operator T() const { return detail::no_cpp_value<T>(); }

  ir::id id() const { return id_; }
  static expr from_id(ir::id i) { return expr(detail::from_id_tag<T>{}, i); }

 private:
  friend struct detail::expr_binding;
  expr(detail::from_id_tag<T>, ir::id i) : id_(i), block_(detail::current_block()) {}
  ir::id id_;
  std::int32_t block_;       // the IR block the handle was created in
  std::int32_t bound_ = -1;  // the array element place it stands for (tracer::bound_places), or -1
};

namespace detail {
struct expr_binding {
  template <element_type T>
  static void bind(const expr<T>& e, std::int32_t place_index) {
    const_cast<expr<T>&>(e).bound_ = place_index;  // e is a member of a proxy being built
  }
  template <element_type T>
  static std::int32_t bound(const expr<T>& e) {
    return e.bound_;
  }
};
}  // namespace detail

using f32 = expr<float>;
using f64 = expr<double>;
using i32 = expr<std::int32_t>;
using i64 = expr<std::int64_t>;
using u32 = expr<std::uint32_t>;
using u8 = expr<std::uint8_t>;
using i8 = expr<std::int8_t>;
using i16 = expr<std::int16_t>;
using u16 = expr<std::uint16_t>;
using u64 = expr<std::uint64_t>;
using f16 = expr<half>;  // binary16 storage; arithmetic promotes it to f32
using boolean = expr<bool>;

namespace detail {

template <class A, class B>
concept binary_operands = operand<A> && operand<B> &&(traced<A> || traced<B>);

template <dtype D>
expr<cpp_type<D>> make_expr(ir::id i) {
  return expr<cpp_type<D>>::from_id(i);
}

template <ir::binary_op O, class A, class B>
auto arithmetic(const A& a, const B& b) {
  constexpr dtype r = arithmetic_type<A, B>();
  static_assert(r != dtype::boolean, "arithmetic on booleans: convert with qd::cast<int>(b) first");
  return make_expr<r>(emit_binary(O, r, value_id(a, r), value_id(b, r)));
}

template <ir::binary_op O, class A, class B>
auto integer_arithmetic(const A& a, const B& b) {
  constexpr dtype r = arithmetic_type<A, B>();
  static_assert(is_integral(r), "%, bitwise operators and shifts need integer operands; use qd::cast<int>(x)");
  return make_expr<r>(emit_binary(O, r, value_id(a, r), value_id(b, r)));
}

template <ir::binary_op O, class A, class B>
expr<bool> comparison(const A& a, const B& b) {
  constexpr dtype r = arithmetic_type<A, B>();
  return expr<bool>::from_id(emit_binary(O, r, value_id(a, r), value_id(b, r)));
}

template <ir::binary_op O, class A, class B>
expr<bool> logical(const A& a, const B& b) {
  static_assert(assignable_to<A>(dtype::boolean) && assignable_to<B>(dtype::boolean),
                "&& and || need boolean operands (comparisons, qd::boolean); compare numbers with != 0 first");
  return expr<bool>::from_id(emit_binary(O, dtype::boolean, value_id(a, dtype::boolean), value_id(b, dtype::boolean)));
}

// The left operand of a traced && or ||. C++17 sequences an overloaded &&'s operands
// left to right, and the conversion into this parameter is part of the left one, so
// it runs before anything of the right operand is traced: it declares the result and
// opens the branch that records the right operand's statements (loads, atomics, draws),
// which then run only when the left operand does not decide.
template <bool Or>
struct logical_left {
  template <traced A>
  logical_left(const A& a) {  // NOLINT: implicit, it is the operator's parameter
    static_assert(traced_dtype<A> == dtype::boolean,
                  "&& and || need boolean operands (comparisons, qd::boolean); compare numbers with != 0 first");
    guard = begin_short_circuit(Or, a.id());
  }
  short_circuit guard;
};

template <bool Or, traced B>
expr<bool> short_circuit_result(const logical_left<Or>& a, const B& b) {
  static_assert(traced_dtype<B> == dtype::boolean,
                "&& and || need boolean operands (comparisons, qd::boolean); compare numbers with != 0 first");
  return expr<bool>::from_id(end_short_circuit(a.guard, b.id()));
}

}  // namespace detail

// Arithmetic.
template <class A, class B>
requires detail::binary_operands<A, B>
auto operator+(const A& a, const B& b) { return detail::arithmetic<ir::binary_op::add>(a, b); }
template <class A, class B>
requires detail::binary_operands<A, B>
auto operator-(const A& a, const B& b) { return detail::arithmetic<ir::binary_op::sub>(a, b); }
template <class A, class B>
requires detail::binary_operands<A, B>
auto operator*(const A& a, const B& b) { return detail::arithmetic<ir::binary_op::mul>(a, b); }
// Integer division truncates toward zero, as in C++; x / 0 gives 0 for integers.
template <class A, class B>
requires detail::binary_operands<A, B>
auto operator/(const A& a, const B& b) { return detail::arithmetic<ir::binary_op::div>(a, b); }
template <class A, class B>
requires detail::binary_operands<A, B>
auto operator%(const A& a, const B& b) { return detail::integer_arithmetic<ir::binary_op::mod>(a, b); }
template <class A, class B>
requires detail::binary_operands<A, B>
auto operator&(const A& a, const B& b) { return detail::integer_arithmetic<ir::binary_op::bit_and>(a, b); }
template <class A, class B>
requires detail::binary_operands<A, B>
auto operator|(const A& a, const B& b) { return detail::integer_arithmetic<ir::binary_op::bit_or>(a, b); }
template <class A, class B>
requires detail::binary_operands<A, B>
auto operator^(const A& a, const B& b) { return detail::integer_arithmetic<ir::binary_op::bit_xor>(a, b); }
template <class A, class B>
requires detail::binary_operands<A, B>
auto operator<<(const A& a, const B& b) { return detail::integer_arithmetic<ir::binary_op::shl>(a, b); }
template <class A, class B>
requires detail::binary_operands<A, B>
auto operator>>(const A& a, const B& b) { return detail::integer_arithmetic<ir::binary_op::shr>(a, b); }

template <class A, class B>
requires detail::binary_operands<A, B> expr<bool>
operator==(const A& a, const B& b) { return detail::comparison<ir::binary_op::eq>(a, b); }
template <class A, class B>
requires detail::binary_operands<A, B> expr<bool>
operator!=(const A& a, const B& b) { return detail::comparison<ir::binary_op::ne>(a, b); }
template <class A, class B>
requires detail::binary_operands<A, B> expr<bool>
operator<(const A& a, const B& b) { return detail::comparison<ir::binary_op::lt>(a, b); }
template <class A, class B>
requires detail::binary_operands<A, B> expr<bool>
operator<=(const A& a, const B& b) { return detail::comparison<ir::binary_op::le>(a, b); }
template <class A, class B>
requires detail::binary_operands<A, B> expr<bool>
operator>(const A& a, const B& b) { return detail::comparison<ir::binary_op::gt>(a, b); }
template <class A, class B>
requires detail::binary_operands<A, B> expr<bool>
operator>=(const A& a, const B& b) { return detail::comparison<ir::binary_op::ge>(a, b); }

// && and || short-circuit as in C++: the right operand's statements run only when the
// left one does not decide (`i < n && x[i] > 0.0f` never reads x[n]). A C++ bool on
// either side is a trace-time value: nothing to skip at run time.
template <traced B>
expr<bool> operator&&(detail::logical_left<false> a, const B& b) {
  return detail::short_circuit_result(a, b);
}
template <traced B>
expr<bool> operator||(detail::logical_left<true> a, const B& b) {
  return detail::short_circuit_result(a, b);
}
template <class A, class B>
requires(detail::binary_operands<A, B> && !(traced<A> && traced<B>)) expr<bool>
operator&&(const A& a, const B& b) { return detail::logical<ir::binary_op::logical_and>(a, b); }
template <class A, class B>
requires(detail::binary_operands<A, B> && !(traced<A> && traced<B>)) expr<bool>
operator||(const A& a, const B& b) { return detail::logical<ir::binary_op::logical_or>(a, b); }

// `acc += x[i]` with a C++ number acc does not compile, with a message pointing to qd::var.
#define QD_NUMBER_COMPOUND(symbol)          \
  template <literal L, traced A>            \
  L& operator symbol(L& target, const A&) { \
    detail::no_number_update<A>();          \
    return target;                          \
  }
QD_NUMBER_COMPOUND(+=)
QD_NUMBER_COMPOUND(-=)
QD_NUMBER_COMPOUND(*=)
QD_NUMBER_COMPOUND(/=)
QD_NUMBER_COMPOUND(%=)
QD_NUMBER_COMPOUND(&=)
QD_NUMBER_COMPOUND(|=)
QD_NUMBER_COMPOUND(^=)
QD_NUMBER_COMPOUND(<<=)
QD_NUMBER_COMPOUND(>>=)
#undef QD_NUMBER_COMPOUND

template <traced A>
auto operator-(const A& a) {
  constexpr dtype r = detail::weak_promote(detail::traced_dtype<A>, false);
  return detail::make_expr<r>(detail::emit_unary(ir::unary_op::neg, r, a.id()));
}
template <traced A>
auto operator+(const A& a) {
  constexpr dtype r = detail::weak_promote(detail::traced_dtype<A>, false);
  return detail::make_expr<r>(detail::convert(a.id(), r));
}
template <traced A>
expr<bool> operator!(const A& a) {
  static_assert(detail::traced_dtype<A> == dtype::boolean, "! needs a boolean; compare numbers with == 0");
  return expr<bool>::from_id(detail::emit_unary(ir::unary_op::logical_not, dtype::boolean, a.id()));
}
template <traced A>
auto operator~(const A& a) {
  constexpr dtype r = detail::weak_promote(detail::traced_dtype<A>, false);
  static_assert(is_integral(r), "~ needs an integer operand");
  return detail::make_expr<r>(detail::emit_unary(ir::unary_op::bit_not, r, a.id()));
}

}  // namespace qd::inline v0
