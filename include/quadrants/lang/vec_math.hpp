// Math functions on vectors, component by component (as <cmath>'s on each component),
// and qd::cast of a vector: qd::floor(v), qd::pow(v, 2.0f), qd::cast<qd::i32>(v).
#pragma once

#include "quadrants/lang/math.hpp"
#include "quadrants/lang/vec.hpp"

namespace qd::inline v0 {

#define QD_VEC_UNARY(fname)                                            \
  template <vector_like A>                                             \
  auto fname(const A& a) {                                             \
    return detail::map(a, [](const auto& x) { return qd::fname(x); }); \
  }
QD_VEC_UNARY(sqrt)
QD_VEC_UNARY(exp)
QD_VEC_UNARY(log)
QD_VEC_UNARY(sin)
QD_VEC_UNARY(cos)
QD_VEC_UNARY(tan)
QD_VEC_UNARY(tanh)
QD_VEC_UNARY(asin)
QD_VEC_UNARY(acos)
QD_VEC_UNARY(rsqrt)
QD_VEC_UNARY(log2)
QD_VEC_UNARY(exp2)
QD_VEC_UNARY(floor)
QD_VEC_UNARY(ceil)
QD_VEC_UNARY(round)
QD_VEC_UNARY(trunc)
QD_VEC_UNARY(fract)
QD_VEC_UNARY(sign)
#undef QD_VEC_UNARY

// vector (f) vector, vector (f) scalar and scalar (f) vector, component by component.
#define QD_VEC_BINARY(fname)                                                                \
  template <vector_like A, vector_like B>                                                   \
  auto fname(const A& a, const B& b) {                                                      \
    return detail::zip(a, b, [](const auto& x, const auto& y) { return qd::fname(x, y); }); \
  }                                                                                         \
  template <vector_like A, operand S>                                                       \
  auto fname(const A& a, const S& s) {                                                      \
    return detail::map(a, [&](const auto& x) { return qd::fname(x, s); });                  \
  }                                                                                         \
  template <operand S, vector_like A>                                                       \
  auto fname(const S& s, const A& a) {                                                      \
    return detail::map(a, [&](const auto& x) { return qd::fname(s, x); });                  \
  }
QD_VEC_BINARY(pow)
QD_VEC_BINARY(atan2)
QD_VEC_BINARY(fmod)
QD_VEC_BINARY(floordiv)
QD_VEC_BINARY(floormod)
QD_VEC_BINARY(step)
#undef QD_VEC_BINARY

namespace detail {
// Component k of a vector operand, or the scalar operand itself.
template <class A>
auto component_or_scalar(const A& a, int k) {
  if constexpr (vector_like<A>)
    return vec_value(a)[k];
  else
    return a;
}
template <class A>
constexpr int size_or_zero() {
  if constexpr (vector_like<A>)
    return vector_size<A>;
  else
    return 0;
}
template <class... A>
constexpr int vector_size_of_any() {
  int n = 0;
  ((n = n == 0 ? size_or_zero<A>() : n), ...);
  return n;
}
template <class... A>
constexpr bool same_vector_sizes() {
  constexpr int n = vector_size_of_any<A...>();
  return (... && (size_or_zero<A>() == 0 || size_or_zero<A>() == n));
}
// f(a[k], b[k], c[k]) for each component k; scalar operands are the same in every component.
template <class A, class B, class C, class F>
auto zip3(const A& a, const B& b, const C& c, F&& f) {
  static_assert(same_vector_sizes<A, B, C>(), "the vectors need the same number of components");
  return generate_vec<vector_size_of_any<A, B, C>()>(
      [&](int k) { return f(component_or_scalar(a, k), component_or_scalar(b, k), component_or_scalar(c, k)); });
}
template <class A>
concept vector_or_operand = vector_like<A> || operand<A>;
}  // namespace detail

// clamp, mix and smoothstep with any operand a vector (the others vectors of its size or scalars).
#define QD_VEC_TERNARY(fname)                                                                                     \
  template <detail::vector_or_operand A, detail::vector_or_operand B, detail::vector_or_operand C>                \
  requires(vector_like<A> || vector_like<B> || vector_like<C>) auto fname(const A& a, const B& b, const C& c) {   \
    return detail::zip3(a, b, c, [](const auto& x, const auto& y, const auto& z) { return qd::fname(x, y, z); }); \
  }
QD_VEC_TERNARY(clamp)
QD_VEC_TERNARY(mix)
QD_VEC_TERNARY(smoothstep)
#undef QD_VEC_TERNARY

// qd::cast<qd::i32>(v) (or qd::cast<qd::vec2i>(v)): each component converted, as the
// scalar qd::cast converts it.
namespace detail {
template <class To>
struct cast_scalar {
  using type = element_of<To>;
};
template <element_type T, int N>
struct cast_scalar<vec<T, N>> {
  using type = T;
};
}  // namespace detail

template <class To, vector_like A>
auto cast(const A& a) {
  using T = typename detail::cast_scalar<std::remove_cv_t<To>>::type;
  return detail::map(a, [](const auto& x) { return qd::cast<T>(x); });
}

}  // namespace qd::inline v0
