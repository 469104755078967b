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

#include "quadrants/lang/ndarray_param.hpp"

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

// How many IR parameters a kernel parameter takes: one, or one per component of a
// vector or matrix (whose traits then list `descs` and name each component).
template <class P>
constexpr int ir_param_count() {
  if constexpr (requires { param_traits<P>::count; }) return param_traits<P>::count;
  else return 1;
}

template <class P>
void append_descs(std::vector<ir::param_desc>& out) {
  if constexpr (requires { param_traits<P>::descs; }) out.insert(out.end(), param_traits<P>::descs.begin(), param_traits<P>::descs.end());
  else out.push_back(param_traits<P>::desc);
}

// The first IR parameter of each kernel parameter.
template <class F>
constexpr auto first_ir_params() {
  return hana::unpack(parameter_types<F>(), [](auto... t) {
    std::array<std::int32_t, sizeof...(t)> first{};
    std::int32_t next = 0;
    std::size_t k = 0;
    ((first[k++] = next, next += ir_param_count<typename decltype(t)::type>()), ...);
    return first;
  });
}

// Parameter names, one per IR parameter: a vector or matrix parameter's name is
// repeated per component ("g[1]", "m(0, 2)"). Any other count is passed on unchanged
// for the kernel to report.
template <class F>
std::vector<std::string> ir_param_names(std::vector<std::string> names) {
  constexpr std::size_t params = decltype(hana::length(parameter_types<F>()))::value;
  if (names.size() != params) return names;
  std::vector<std::string> out;
  std::size_t k = 0;
  hana::unpack(parameter_types<F>(), [&](auto... t) {
    auto add = [&]<class P>(hana::basic_type<P>) {
      if constexpr (requires { param_traits<P>::descs; }) {
        for (int c = 0; c < param_traits<P>::count; ++c) out.push_back(param_traits<P>::component_name(names[k], c));
      } else {
        out.push_back(names[k]);
      }
      ++k;
    };
    (add(t), ...);
  });
  return out;
}

template <class F>
constexpr bool valid_parameters() {
  return boost::hana::unpack(parameter_types<F>(),
                             [](auto... t) { return (param_traits<typename decltype(t)::type>::valid && ...); });
}

template <class F>
std::vector<ir::param_desc> parameter_descs() {
  static_assert(valid_parameters<F>(),
                "a kernel parameter must be qd::types::ndarray<T, N[, qd::needs_grad]> or a scalar type such as "
                "qd::f32 or qd::i32 (plain C++ types are not kernel parameters)");
  if constexpr (valid_parameters<F>()) {
    return hana::unpack(parameter_types<F>(), [](auto... t) {
      std::vector<ir::param_desc> out;
      (append_descs<typename decltype(t)::type>(out), ...);
      return out;
    });
  } else {
    return {};
  }
}

// Runs `f` with symbolic arguments while `t` records its IR.
template <class F>
void trace_kernel(const F& f, tracer& t) {
  if constexpr (valid_parameters<F>()) {  // else parameter_descs reports the error
    trace_scope scope(t);
    for (const ir::param_desc& d : parameter_descs<F>()) t.b.add_param(d);
    hana::unpack(parameter_types<F>(), [&](auto... types) {
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        // Braced initialization evaluates left to right: parameters are numbered in order.
        constexpr auto first = first_ir_params<F>();
        hana::tuple<typename decltype(types)::type...> args{param_traits<typename decltype(types)::type>::make(first[I])...};
        hana::unpack(args, [&](auto&... a) { f(a...); });
      }(std::index_sequence_for<decltype(types)...>{});
    });
  }
}

}  // namespace qd::detail
