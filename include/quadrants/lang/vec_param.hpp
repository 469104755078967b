// qd::vec and qd::mat as scalar kernel parameters (SPEC §11.1): one run-time scalar
// argument per component; the host passes a std::array (nested for a matrix).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "quadrants/lang/kernel_signature.hpp"
#include "quadrants/lang/mat.hpp"

namespace qd::detail {

// Whether A is std::array<U, N> of C++ numbers (the component type is checked per
// component, as a scalar argument is).
template <class A, std::size_t N> struct is_number_array : std::false_type {};
template <class U, std::size_t N>
struct is_number_array<std::array<U, N>, N> : std::bool_constant<std::is_arithmetic_v<U>> {};

template <class A, std::size_t R, std::size_t C> struct is_number_matrix : std::false_type {};
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
  static constexpr auto descs = scalar_descs<static_cast<std::size_t>(R * C)>(dtype_of<T>);
  static mat<T, R, C> make(std::int32_t first) {
    return generate_mat<R, C>([&](int i, int j) { return expr<T>::from_id(emit_arg(first + i * C + j)); });
  }
  static std::string component_name(const std::string& name, int k) {
    return name.empty() ? name : name + "(" + std::to_string(k / C) + ", " + std::to_string(k % C) + ")";
  }
  template <class A>
  static constexpr bool accepts_host = is_number_matrix<A, static_cast<std::size_t>(R), static_cast<std::size_t>(C)>::value;
  template <class A, class F>
  static void for_each_component(const A& a, F&& f) {
    for (const auto& row : a)
      for (const auto& x : row) f(x);
  }
};

}  // namespace qd::detail
