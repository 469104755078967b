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
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "quadrants/lang/call_operator.hpp"
#include "quadrants/lang/kernel_return.hpp"
#include "quadrants/lang/ndarray_param.hpp"
#include "quadrants/lang/struct_param.hpp"
#include "quadrants/lang/template_arg.hpp"

namespace qd::inline v0::detail {

namespace hana = boost::hana;

template <class Tuple>
struct hana_types;
template <class... P>
struct hana_types<std::tuple<P...>> {
  static constexpr auto value = hana::tuple_t<P...>;
};

// hana::tuple_t of the lambda's parameter types (cv-ref removed).
template <class F>
constexpr auto parameter_types() {
  static_assert(kernel_lambda<F>,
                "qd::kernel needs a lambda with typed parameters (qd::types::ndarray<T, N>, qd::f32, ...); generic "
                "`auto` parameters cannot be reflected");
  return hana_types<lambda_params<F>>::value;
}

// What each parameter type means to the kernel.
template <class P>
struct param_traits {
  static constexpr bool valid = false;
};
template <element_type T, int N, auto... Options>
struct param_traits<types::ndarray<T, N, Options...>> {
  static constexpr bool valid = true;
  static constexpr bool is_array = true;
  static constexpr ir::param_desc desc{true, dtype_of<T>, N, types::ndarray<T, N, Options...>::has_grad};
  static types::ndarray<T, N, Options...> make(std::int32_t index) { return {param_tag{}, index}; }
};
// A template argument: a C++ value while tracing, part of the variant's identity, no
// IR parameter (runtime/pipeline/template_variants.hpp).
template <class T>
struct param_traits<types::template_arg<T>> {
  static_assert(!std::is_same_v<T, long double>, "qd::types::template_arg<long double> is not supported; use double");
  static constexpr bool valid = true;
  static constexpr bool is_array = false;
  static constexpr bool top_level_only = true;  // not a struct member
  static constexpr int count = 0;
  static constexpr std::array<ir::param_desc, 0> descs{};
  static std::string component_name(const std::string& base, int) { return base; }
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
  return boost::hana::unpack(parameter_types<F>(),
                             [](auto... t) { return (valid_param<typename decltype(t)::type>() && ...); });
}

// The kernel parameters the lambda's parameters flatten into (structs into their members).
template <class F>
constexpr std::size_t flat_parameter_count() {
  return boost::hana::unpack(parameter_types<F>(), [](auto... t) {
    return (std::size_t{0} + ... + leaf_count<typename decltype(t)::type>());
  });
}

template <class F>
std::vector<ir::param_desc> parameter_descs() {
  static_assert(valid_parameters<F>(),
                "a kernel parameter must be qd::types::ndarray<T, N[, qd::needs_grad]> (T a scalar, a qd::vec / "
                "qd::mat or a struct of them), a scalar type such as qd::f32 or qd::i32, a qd::vec / qd::mat, "
                "qd::types::template_arg<T>, or a struct (an aggregate, at most 16 members) of them (plain C++ types "
                "are not kernel parameters: a value to specialise the kernel for is a qd::types::template_arg)");
  if constexpr (valid_parameters<F>()) {
    std::vector<ir::param_desc> descs;
    hana::unpack(parameter_types<F>(),
                 [&](auto... t) { (append_param_descs<typename decltype(t)::type>(descs), ...); });
    return descs;
  } else {
    return {};
  }
}

// The lambda's return type (void, or a type of lang/kernel_return.hpp).
template <class F>
using kernel_result_t =
    std::remove_cvref_t<typename call_operator<decltype(&std::remove_cvref_t<F>::operator())>::result>;

// The kernel's parameters: the lambda's, then one hidden 0-d array per returned element.
template <class F>
std::vector<ir::param_desc> kernel_param_descs() {
  check_return_type<kernel_result_t<F>>();
  std::vector<ir::param_desc> descs = parameter_descs<F>();
  if constexpr (return_traits<kernel_result_t<F>>::valid) append_return_descs<kernel_result_t<F>>(descs);
  return descs;
}

template <class P>
struct template_slot {
  using type = std::tuple<>;
};
template <class T>
struct template_slot<types::template_arg<T>> {
  using type = std::tuple<T>;
};
template <class Tuple>
struct template_values;
template <class... P>
struct template_values<std::tuple<P...>> {
  using type = decltype(std::tuple_cat(std::declval<typename template_slot<P>::type>()...));
};
template <class F, bool = kernel_lambda<F>>
struct template_values_of_lambda {
  using type = std::tuple<>;
};
template <class F>
struct template_values_of_lambda<F, true> {
  using type = typename template_values<lambda_params<F>>::type;
};
// The values of F's template arguments, in order (std::tuple<> for a kernel without).
template <class F>
using template_values_t = typename template_values_of_lambda<F>::type;

// How many of the first I lambda parameters are template arguments.
template <class F, std::size_t I>
constexpr std::size_t template_index() {
  return []<std::size_t... J>(std::index_sequence<J...>) {
    return (std::size_t{0} + ... + std::size_t{is_template_arg<std::tuple_element_t<J, lambda_params<F>>>});
  }
  (std::make_index_sequence<I>{});
}

// The symbolic argument of lambda parameter I: its IR parameters next, next + 1, ...,
// or for a template argument its value.
template <class F, std::size_t I, class Values>
auto make_lambda_arg(std::int32_t& next, const Values& values) {
  using P = std::tuple_element_t<I, lambda_params<F>>;
  if constexpr (is_template_arg<P>)
    return P(std::get<template_index<F, I>()>(values));
  else
    return make_param<P>(next);
}

// Runs `f` with symbolic arguments while `t` records its IR; `values` are the template
// arguments' values (template_values_t<F>).
template <class F, class Values = std::tuple<>>
void trace_kernel(const F& f, tracer& t, const Values& values = {}) {
  if constexpr (valid_parameters<F>()) {  // else parameter_descs reports the error
    trace_scope scope(t);
    for (const ir::param_desc& d : kernel_param_descs<F>()) t.b.add_param(d);
    using params = lambda_params<F>;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      // Braced initialization evaluates left to right: parameters are numbered in order.
      std::int32_t next = 0;
      hana::tuple<std::tuple_element_t<I, params>...> args{make_lambda_arg<F, I>(next, values)...};
      using R = kernel_result_t<F>;
      hana::unpack(args, [&](auto&... a) {
        if constexpr (std::is_void_v<R> || !return_traits<R>::valid)
          f(a...);
        else
          store_return_value<R>(f(a...), next);
      });
    }
    (std::make_index_sequence<std::tuple_size_v<params>>{});
  }
}

}  // namespace qd::inline v0::detail
