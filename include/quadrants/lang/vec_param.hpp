// qd::vec and qd::mat as scalar kernel parameters: one run-time scalar
// argument per component; the host passes a std::array (nested for a matrix).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "quadrants/lang/kernel_signature.hpp"
#include "quadrants/lang/mat.hpp"

namespace qd::inline v0::detail {

// Whether A is std::array<U, N> of C++ numbers (the component type is checked per
// component, as a scalar argument is).
template <class A, std::size_t N>
struct is_number_array : std::false_type {};
template <class U, std::size_t N>
struct is_number_array<std::array<U, N>, N> : std::bool_constant<std::is_arithmetic_v<U>> {};

template <class A, std::size_t R, std::size_t C>
struct is_number_matrix : std::false_type {};
template <class U, std::size_t R, std::size_t C>
struct is_number_matrix<std::array<std::array<U, C>, R>, R, C> : std::bool_constant<std::is_arithmetic_v<U>> {};

template <std::size_t K>
constexpr std::array<ir::param_desc, K> scalar_descs(dtype t) {
  std::array<ir::param_desc, K> out{};
  for (auto& d : out) d = ir::param_desc{false, t, 0, false};
  return out;
}

template <element_type T, int N>
struct param_traits<vec<T, N>> {
  static constexpr bool valid = true;
  static constexpr bool is_array = false;
  static constexpr int count = N;
  using scalar = T;
  static constexpr auto descs = scalar_descs<static_cast<std::size_t>(N)>(dtype_of<T>);
  static vec<T, N> make(std::int32_t first) {
    return generate_vec<N>([&](int k) { return expr<T>::from_id(emit_arg(first + k)); });
  }
  static std::string component_name(const std::string& name, int k) {
    return name.empty() ? name : name + "[" + std::to_string(k) + "]";
  }
  template <class A>
  static constexpr bool accepts_host = is_number_array<A, static_cast<std::size_t>(N)>::value;
  template <class A, class F>
  static void for_each_component(const A& a, F&& f) {
    for (const auto& x : a) f(x);
  }
};

template <element_type T, int R, int C>
struct param_traits<mat<T, R, C>> {
  static constexpr bool valid = true;
  static constexpr bool is_array = false;
  static constexpr int count = R * C;
  using scalar = T;
  static constexpr auto descs = scalar_descs<static_cast<std::size_t>(R* C)>(dtype_of<T>);
  static mat<T, R, C> make(std::int32_t first) {
    return generate_mat<R, C>([&](int i, int j) { return expr<T>::from_id(emit_arg(first + i * C + j)); });
  }
  static std::string component_name(const std::string& name, int k) {
    return name.empty() ? name : name + "(" + std::to_string(k / C) + ", " + std::to_string(k % C) + ")";
  }
  template <class A>
  static constexpr bool accepts_host =
      is_number_matrix<A, static_cast<std::size_t>(R), static_cast<std::size_t>(C)>::value;
  template <class A, class F>
  static void for_each_component(const A& a, F&& f) {
    for (const auto& row : a)
      for (const auto& x : row) f(x);
  }
};

// qd::vec and qd::mat as kernel return values: one returned element per
// component (row-major for a matrix); the host value is the std::array a parameter of
// the same type takes. A qd::var of them, or an array element, returns its value.
template <class T, std::size_t K, class Seq = std::make_index_sequence<K>>
struct repeated_tuple;
template <class T, std::size_t K, std::size_t... I>
struct repeated_tuple<T, K, std::index_sequence<I...>> {
  template <std::size_t>
  using same = T;
  using type = std::tuple<same<I>...>;
};

template <class A>
requires(vector_like<A> && !traced<A>) struct return_traits<A> {
  using T = vector_scalar<A>;
  static constexpr std::size_t N = static_cast<std::size_t>(vector_size<A>);
  static constexpr bool valid = true;
  using host_type = std::array<T, N>;
  using elements = typename repeated_tuple<T, N>::type;
  static void ids(const A& r, ir::id* out) {
    const auto v = vec_value(r);
    for (std::size_t k = 0; k < N; ++k) out[k] = v[static_cast<int>(k)].id();
  }
  static host_type assemble(const elements& e) {
    return std::apply([](auto... x) { return host_type{x...}; }, e);
  }
};

template <class A>
requires(matrix_like<A> && !vector_like<A> && !traced<A>) struct return_traits<A> {
  using T = matrix_scalar<A>;
  static constexpr std::size_t R = static_cast<std::size_t>(matrix_rows<A>),
                               C = static_cast<std::size_t>(matrix_cols<A>);
  static constexpr bool valid = true;
  using host_type = std::array<std::array<T, C>, R>;
  using elements = typename repeated_tuple<T, R * C>::type;
  static void ids(const A& r, ir::id* out) {
    const auto m = mat_value(r);
    for (std::size_t k = 0; k < R * C; ++k) out[k] = m(static_cast<int>(k / C), static_cast<int>(k % C)).id();
  }
  static host_type assemble(const elements& e) {
    host_type h{};
    std::apply(
        [&](auto... x) {
          std::size_t k = 0;
          ((h[k / C][k % C] = x, ++k), ...);
        },
        e);
    return h;
  }
};

}  // namespace qd::inline v0::detail
