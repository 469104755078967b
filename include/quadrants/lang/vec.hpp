// qd::vec<T, N>: a small vector of traced scalars, unrolled at trace time.
// Each component is a qd::expr<T>, so vector arithmetic records ordinary scalar IR.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "quadrants/lang/math.hpp"
#include "quadrants/lang/var.hpp"

namespace qd::inline v0 {

template <element_type T, int N>
class vec;

namespace detail {

// What a vector-valued operand is: a qd::vec, a qd::var of one or an element of an
// array of vectors. Each specialization names the scalar type and the size; the
// operand's value() is the qd::vec it holds now.
template <class A>
struct vector_traits {
  static constexpr bool value = false;
};
template <element_type T, int N>
struct vector_traits<vec<T, N>> {
  static constexpr bool value = true;
  using scalar = T;
  static constexpr int size = N;
};

// Component k of a C++ integer index, checked while tracing.
inline std::size_t component(int k, int size, const char* what) {
  if (k < 0 || k >= size)
    throw_trace_error(std::string(what) + " index " + std::to_string(k) + " is out of range: it has " +
                      std::to_string(size) + " components or rows, indexed from 0");
  return static_cast<std::size_t>(k);
}

}  // namespace detail

template <class A>
concept vector_like = detail::vector_traits<std::remove_cvref_t<A>>::value;

namespace detail {
template <vector_like A>
inline constexpr int vector_size = vector_traits<std::remove_cvref_t<A>>::size;
template <vector_like A>
using vector_scalar = typename vector_traits<std::remove_cvref_t<A>>::scalar;

// The qd::vec<R, N> whose component k is f(k); R is the type f returns.
template <int N, class F>
auto generate_vec(F&& f) {
  using R = typename decltype(f(0))::value_type;
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return vec<R, N>::from_components(std::array<expr<R>, N>{expr<R>(f(static_cast<int>(I)))...});
  }
  (std::make_index_sequence<static_cast<std::size_t>(N)>{});
}

template <vector_like A>
auto vec_value(const A& a) {
  return a.value();
}
}  // namespace detail

template <element_type T, int N>
class vec {
  static_assert(N >= 1, "qd::vec needs at least one component");
  static_assert(!std::is_same_v<T, bool>, "qd::vec<bool, N> is not supported; use std::int32_t components");

 public:
  using value_type = T;
  static constexpr int size = N;

  // One value per component: C++ numbers or traced values that convert without loss.
  template <class... A>
  requires(sizeof...(A) == N && (operand<A> && ...)) vec(const A&... components) : c_{checked(components)...} {}

  // Every component equal to s: qd::vec3f(0.0f).
  template <operand A>
  requires(N > 1) explicit vec(const A& s) : vec(broadcast(checked(s))) {}

  // Another vector of the same size (a qd::var, an array element, another type
  // that converts without loss, e.g. qd::vec3i to qd::vec3f).
  template <vector_like V>
  requires(!std::is_same_v<std::remove_cvref_t<V>, vec> && detail::vector_size<V> == N &&
           implicitly_convertible(dtype_of<detail::vector_scalar<V>>, dtype_of<T>)) vec(const V& other)
      : vec(convert(detail::vec_value(other))) {}

  static vec zero() { return vec(broadcast(expr<T>(0))); }
  static vec from_components(const std::array<expr<T>, N>& c) { return vec(c); }

  // Component k (a C++ integer): v[0], v.x(), ...
  const expr<T>& operator[](int k) const { return c_[detail::component(k, N, "qd::vec")]; }
  const expr<T>& x() const { return c_[0]; }
  const expr<T>& y() const requires(N >= 2) { return c_[1]; }
  const expr<T>& z() const requires(N >= 3) { return c_[2]; }
  const expr<T>& w() const requires(N >= 4) { return c_[3]; }

  vec value() const { return *this; }

 private:
  explicit vec(const std::array<expr<T>, N>& c) : c_(c) {}

  template <class A>
  static expr<T> checked(const A& a) {
    static_assert(detail::assignable_to<A>(dtype_of<T>),
                  "a qd::vec component does not convert to the vector's type without loss; use qd::cast<T>(value)");
    return expr<T>::from_id(detail::value_id(a, dtype_of<T>));
  }
  static std::array<expr<T>, N> broadcast(const expr<T>& s) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) { return std::array<expr<T>, N>{((void)I, s)...}; }
    (std::make_index_sequence<static_cast<std::size_t>(N)>{});
  }
  template <class U>
  static std::array<expr<T>, N> convert(const vec<U, N>& v) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::array<expr<T>, N>{expr<T>::from_id(detail::convert(v[static_cast<int>(I)].id(), dtype_of<T>))...};
    }
    (std::make_index_sequence<static_cast<std::size_t>(N)>{});
  }

  std::array<expr<T>, N> c_;
};

using vec2f = vec<float, 2>;
using vec3f = vec<float, 3>;
using vec4f = vec<float, 4>;
using vec2d = vec<double, 2>;
using vec3d = vec<double, 3>;
using vec4d = vec<double, 4>;
using vec2i = vec<std::int32_t, 2>;
using vec3i = vec<std::int32_t, 3>;
using vec4i = vec<std::int32_t, 4>;

namespace detail {

template <class A, class B>
constexpr void check_same_size() {
  static_assert(vector_size<A> == vector_size<B>,
                "an elementwise operation or a dot product of vectors of different sizes (a qd::vec3 with a "
                "qd::vec4?): both operands need the same number of components");
}

// The vector of f(a[k], b[k]).
template <class A, class B, class F>
auto zip(const A& a, const B& b, F&& f) {
  check_same_size<A, B>();
  auto va = vec_value(a);
  auto vb = vec_value(b);
  return generate_vec<vector_size<A>>([&](int k) { return f(va[k], vb[k]); });
}

template <class A, class F>
auto map(const A& a, F&& f) {
  auto va = vec_value(a);
  return generate_vec<vector_size<A>>([&](int k) { return f(va[k]); });
}

}  // namespace detail

// Elementwise vector (op) vector, and vector (op) scalar in either order.
#define QD_VEC_OPERATOR(symbol)                                                        \
  template <vector_like A, vector_like B>                                              \
  auto operator symbol(const A& a, const B& b) {                                       \
    return detail::zip(a, b, [](const auto& x, const auto& y) { return x symbol y; }); \
  }                                                                                    \
  template <vector_like A, operand S>                                                  \
  auto operator symbol(const A& a, const S& s) {                                       \
    return detail::map(a, [&](const auto& x) { return x symbol s; });                  \
  }                                                                                    \
  template <operand S, vector_like A>                                                  \
  auto operator symbol(const S& s, const A& a) {                                       \
    return detail::map(a, [&](const auto& x) { return s symbol x; });                  \
  }
QD_VEC_OPERATOR(+)
QD_VEC_OPERATOR(-)
QD_VEC_OPERATOR(*)
QD_VEC_OPERATOR(/)
#undef QD_VEC_OPERATOR

template <vector_like A>
auto operator-(const A& a) {
  return detail::map(a, [](const auto& x) { return -x; });
}
template <vector_like A>
auto operator+(const A& a) {
  return detail::map(a, [](const auto& x) { return +x; });
}

template <vector_like A, vector_like B>
auto dot(const A& a, const B& b) {
  detail::check_same_size<A, B>();
  auto va = detail::vec_value(a);
  auto vb = detail::vec_value(b);
  auto sum = va[0] * vb[0];
  for (int k = 1; k < detail::vector_size<A>; ++k) sum = sum + va[k] * vb[k];
  return sum;
}

template <vector_like A, vector_like B>
auto cross(const A& a, const B& b) {
  static_assert(detail::vector_size<A> == 3 && detail::vector_size<B> == 3, "qd::cross takes two 3-component vectors");
  auto va = detail::vec_value(a);
  auto vb = detail::vec_value(b);
  return detail::generate_vec<3>([&](int k) {
    const int i = (k + 1) % 3, j = (k + 2) % 3;
    return va[i] * vb[j] - va[j] * vb[i];
  });
}

template <vector_like A>
auto norm_sqr(const A& a) {
  return dot(a, a);
}
// Integer vectors give a floating-point norm (f32), as qd::sqrt does.
template <vector_like A>
auto norm(const A& a) {
  return qd::sqrt(norm_sqr(a));
}
template <vector_like A>
auto normalize(const A& a) {
  auto n = norm(a);
  return detail::map(a, [&](const auto& x) { return x / n; });
}

// Elementwise min, max and abs.
template <vector_like A, vector_like B>
auto min(const A& a, const B& b) {
  return detail::zip(a, b, [](const auto& x, const auto& y) { return qd::min(x, y); });
}
template <vector_like A, vector_like B>
auto max(const A& a, const B& b) {
  return detail::zip(a, b, [](const auto& x, const auto& y) { return qd::max(x, y); });
}
template <vector_like A>
auto abs(const A& a) {
  return detail::map(a, [](const auto& x) { return qd::abs(x); });
}

}  // namespace qd::inline v0
