// Reflection of a kernel lambda's parameter list (Boost.Hana) and its tracing
// into IR with symbolic arguments. The rest of the pipeline is non-template.
#pragma once

#include <boost/hana/basic_tuple.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>
#include <boost/hana/unpack.hpp>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "quadrants/lang/kernel_return.hpp"
#include "quadrants/lang/ndarray_param.hpp"
#include "quadrants/lang/struct_param.hpp"

namespace qd::detail {

namespace hana = boost::hana;

template <class M> struct call_operator;
template <class C, class R, class... A>
struct call_operator<R (C::*)(A...) const> {
  static constexpr auto params = hana::tuple_t<std::remove_cvref_t<A>...>;
  using result = R;
};
template <class C, class R, class... A>
struct call_operator<R (C::*)(A...)> : call_operator<R (C::*)(A...) const> {};
// noexcept is part of the function type since C++17: `[](...) noexcept {...}`, `mutable noexcept`.
template <class C, class R, class... A>
struct call_operator<R (C::*)(A...) const noexcept> : call_operator<R (C::*)(A...) const> {};
template <class C, class R, class... A>
struct call_operator<R (C::*)(A...) noexcept> : call_operator<R (C::*)(A...) const> {};

template <class F>
concept kernel_lambda = requires { &std::remove_cvref_t<F>::operator(); };

// hana::tuple_t of the lambda's parameter types (cv-ref removed).
template <class F>
constexpr auto parameter_types() {
  static_assert(kernel_lambda<F>,
                "qd::kernel needs a lambda with typed parameters (qd::types::ndarray<T, N>, qd::f32, ...); generic "
                "`auto` parameters cannot be reflected");
  return call_operator<decltype(&std::remove_cvref_t<F>::operator())>::params;
}

// What each parameter type means to the kernel.
template <class P> struct param_traits {
  static constexpr bool valid = false;
};
template <element_type T, int N, auto... Options>
struct param_traits<types::ndarray<T, N, Options...>> {
  static constexpr bool valid = true;
  static constexpr bool is_array = true;
  static constexpr ir::param_desc desc{true, dtype_of<T>, N, types::ndarray<T, N, Options...>::has_grad};
  static types::ndarray<T, N, Options...> make(std::int32_t index) { return {param_tag{}, index}; }
};
template <element_type T>
struct param_traits<expr<T>> {
  static constexpr bool valid = true;
  static constexpr bool is_array = false;
  static constexpr ir::param_desc desc{false, dtype_of<T>, 0, false};
  static expr<T> make(std::int32_t index) { return expr<T>::from_id(emit_arg(index)); }
};

// Every parameter a parameter type or a struct of them (lang/struct_param.hpp).
template <class F>
constexpr bool valid_parameters() {
  return boost::hana::unpack(parameter_types<F>(), [](auto... t) { return (valid_param<typename decltype(t)::type>() && ...); });
}

// The kernel parameters the lambda's parameters flatten into (structs into their members).
template <class F>
constexpr std::size_t flat_parameter_count() {
  return boost::hana::unpack(parameter_types<F>(), [](auto... t) { return (std::size_t{0} + ... + leaf_count<typename decltype(t)::type>()); });
}

template <class F>
std::vector<ir::param_desc> parameter_descs() {
  static_assert(valid_parameters<F>(),
                "a kernel parameter must be qd::types::ndarray<T, N[, qd::needs_grad]>, a scalar type such as "
                "qd::f32 or qd::i32, a qd::vec / qd::mat, or a struct (an aggregate, at most 16 members) of them (plain C++ types are not "
                "kernel parameters)");
  if constexpr (valid_parameters<F>()) {
    std::vector<ir::param_desc> descs;
    hana::unpack(parameter_types<F>(), [&](auto... t) { (append_param_descs<typename decltype(t)::type>(descs), ...); });
    return descs;
  } else {
    return {};
  }
}

// The lambda's return type (void, or a type of lang/kernel_return.hpp).
template <class F>
using kernel_result_t = std::remove_cvref_t<typename call_operator<decltype(&std::remove_cvref_t<F>::operator())>::result>;

// The kernel's parameters: the lambda's, then one hidden 0-d array per returned element.
template <class F>
std::vector<ir::param_desc> kernel_param_descs() {
  check_return_type<kernel_result_t<F>>();
  std::vector<ir::param_desc> descs = parameter_descs<F>();
  if constexpr (return_traits<kernel_result_t<F>>::valid) append_return_descs<kernel_result_t<F>>(descs);
  return descs;
}

// Runs `f` with symbolic arguments while `t` records its IR.
template <class F>
void trace_kernel(const F& f, tracer& t) {
  if constexpr (valid_parameters<F>()) {  // else parameter_descs reports the error
    trace_scope scope(t);
    for (const ir::param_desc& d : kernel_param_descs<F>()) t.b.add_param(d);
    hana::unpack(parameter_types<F>(), [&](auto... types) {
      // Braced initialization evaluates left to right: parameters are numbered in order.
      std::int32_t next = 0;
      hana::tuple<typename decltype(types)::type...> args{make_param<typename decltype(types)::type>(next)...};
      using R = kernel_result_t<F>;
      hana::unpack(args, [&](auto&... a) {
        if constexpr (std::is_void_v<R> || !return_traits<R>::valid)
          f(a...);
        else
          store_return_value<R>(f(a...), next);
      });
    });
  }
}

}  // namespace qd::detail
