// qd::var<T>: a mutable local of a kernel. Declared at the top level it is a
// top-level value; += / -= on it from a parallel construct are atomic reductions.
#pragma once

#include <concepts>
#include <utility>

#include "quadrants/lang/expr.hpp"
#include "quadrants/lang/source_location.hpp"

namespace qd::inline v0 {

namespace detail {
template <class V>
constexpr void reject_var_by_value() {
  static_assert(dependent_false<V>,
                "a qd::var is captured by value ([=] or [v]) or direct-initialized from another qd::var: the lambda "
                "would update a copy and the kernel would read the unchanged original. Capture qd::var by reference "
                "([&] or [&v]); for a new variable holding v's current value write `qd::var<T> w = v;`");
}
}  // namespace detail

template <class T>
class var {
  static_assert(element_type<T>,
                "qd::var<T> takes an element type (float, std::int32_t, ...) or a traced name (qd::f32, qd::i32, ...)");

 public:
  using value_type = T;
  static constexpr dtype type = dtype_of<T>;

  var(qd::source_location loc = qd::source_location::current())
      : decl_((detail::at(loc), detail::emit_local_decl(type, detail::emit_int_constant(type, 0)))) {}

  template <operand A>
  var(const A& init, qd::source_location loc = qd::source_location::current())
      : decl_((detail::at(loc), detail::emit_local_decl(type, checked_value(init)))) {}

  // Copy-initialization (`qd::var<T> w = v;`) starts a new variable holding v's
  // current value, never an alias.
  var(const var& other) : decl_(detail::emit_local_decl(type, other.id())) {}

  // Direct-initialization from a mutable var is what a lambda's by-value capture
  // (`[=]`) does: the body would update a copy while the kernel reads the
  // original, so it does not compile. Being explicit, this constructor is no
  // candidate for `qd::var<T> w = v;`, which keeps the copy above.
  template <class V>
  requires std::same_as<V, var>
  explicit var(V& other) : var(std::as_const(other)) { detail::reject_var_by_value<V>(); }

  // An assigned value and where the assignment was written: operators take no extra
  // parameter, so the conversion to this records the user's line (`s *= 2` on a line of
  // its own gets that line, for messages and coverage).
  class located_value {
   public:
    template <operand A>
    located_value(const A& value, qd::source_location loc = qd::source_location::current())
        : id_((detail::at(loc), checked_value(value))) {}
    ir::id id() const { return id_; }

   private:
    ir::id id_;
  };

  // The copy assignment takes a non-const var: a `const var&` one would also accept a
  // temporary var made from a number (the converting constructor), ambiguous with
  // located_value. Other values, a const var included, go through located_value.
  var& operator=(var& other) {
    detail::emit_local_store(decl_, other.id());
    return *this;
  }
  var& operator=(const located_value& value) {
    detail::emit_local_store(decl_, value.id());
    return *this;
  }

#define QD_VAR_COMPOUND(symbol, binop)                                  \
  var& operator symbol(const located_value& value) {                    \
    detail::emit_local_update(ir::binary_op::binop, decl_, value.id()); \
    return *this;                                                       \
  }
  QD_VAR_COMPOUND(+=, add)
  QD_VAR_COMPOUND(-=, sub)
  QD_VAR_COMPOUND(*=, mul)
  QD_VAR_COMPOUND(/=, div)
  QD_VAR_COMPOUND(%=, mod)
  QD_VAR_COMPOUND(&=, bit_and)
  QD_VAR_COMPOUND(|=, bit_or)
  QD_VAR_COMPOUND(^=, bit_xor)
#undef QD_VAR_COMPOUND

  operator T() const { return detail::no_cpp_value<T>(); }  // a compile error naming qd::if_ and qd::sqrt

  ir::id id() const { return detail::emit_local_load(decl_); }  // the current value
  ir::id decl() const { return decl_; }

 private:
  template <class A>
  static ir::id checked_value(const A& value) {
    static_assert(detail::assignable_to<A>(dtype_of<T>),
                  "this value does not convert to the variable's type without loss; use qd::cast<T>(value)");
    return detail::value_id(value, type);
  }
  ir::id decl_;
};

// qd::var<qd::f32> is qd::var<float>: the traced name of a type names the same variable.
template <element_type T>
class var<expr<T>> : public var<T> {
 public:
  using var<T>::var;
  using var<T>::operator=;
  var(const var& other) : var<T>(other) {}
  template <class V>
  requires std::same_as<V, var>
  explicit var(V& other) : var<T>(std::as_const(other)) { detail::reject_var_by_value<V>(); }
};

}  // namespace qd::inline v0
