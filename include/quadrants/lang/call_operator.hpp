// call_operator<&F::operator()>: the parameter and result types of a non-generic
// lambda, for reflecting kernel signatures and checking loop bodies.
#pragma once

#include <tuple>
#include <type_traits>

namespace qd::inline v0::detail {

template <class M>
struct call_operator;
template <class C, class R, class... A>
struct call_operator<R (C::*)(A...) const> {
  using param_tuple = std::tuple<std::remove_cvref_t<A>...>;  // cv-ref removed
  using result = R;
};
template <class C, class R, class... A>
struct call_operator<R (C::*)(A...)> : call_operator<R (C::*)(A...) const> {};
// noexcept is part of the function type since C++17: `[](...) noexcept {...}`, `mutable noexcept`.
template <class C, class R, class... A>
struct call_operator<R (C::*)(A...) const noexcept> : call_operator<R (C::*)(A...) const> {};
template <class C, class R, class... A>
struct call_operator<R (C::*)(A...) noexcept> : call_operator<R (C::*)(A...) const> {};

// A lambda (or function object) whose call operator is not a template.
template <class F>
concept kernel_lambda = requires {
  &std::remove_cvref_t<F>::operator();
};

// The parameter types of F's call operator as a std::tuple (cv-ref removed).
template <class F>
using lambda_params = typename call_operator<decltype(&std::remove_cvref_t<F>::operator())>::param_tuple;

}  // namespace qd::inline v0::detail
