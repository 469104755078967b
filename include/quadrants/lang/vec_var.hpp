// qd::var<qd::vec<T, N>> and qd::var<qd::mat<T, R, C>>: mutable vector and matrix
// locals, one scalar qd::var per component (so a top-level one reduces per component).
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "quadrants/lang/mat.hpp"

namespace qd::inline v0 {

namespace detail {
// Vector and matrix variables are not scalar traced values.
template <element_type T, int N>
struct traced_traits<var<vec<T, N>>> {
  static constexpr bool value = false;
};
template <element_type T, int R, int C>
struct traced_traits<var<mat<T, R, C>>> {
  static constexpr bool value = false;
};
template <element_type T, int N>
struct vector_traits<var<vec<T, N>>> : vector_traits<vec<T, N>> {};
template <element_type T, int R, int C>
struct matrix_traits<var<mat<T, R, C>>> : matrix_traits<mat<T, R, C>> {};

// A vector or matrix seen as a flat list of components (row-major for matrices).
template <class V>
struct flat_components;
template <element_type T, int N>
struct flat_components<vec<T, N>> {
  using scalar = T;
  static constexpr std::size_t count = static_cast<std::size_t>(N);
  template <class A>
  static constexpr bool accepts = vector_like<A>;
  template <class A>
  static auto read(const A& a) {
    static_assert(vector_size<A> == N, "a qd::var<qd::vec> takes a vector of the same size");
    return vec_value(a);
  }
  template <class V>
  static auto at(const V& v, int k) {
    return v[k];
  }
  template <class F>
  static auto build(F&& f) {
    return generate_vec<N>(f);
  }
};
template <element_type T, int R, int C>
struct flat_components<mat<T, R, C>> {
  using scalar = T;
  static constexpr std::size_t count = static_cast<std::size_t>(R * C);
  template <class A>
  static constexpr bool accepts = matrix_like<A>;
  template <class A>
  static auto read(const A& a) {
    static_assert(matrix_rows<A> == R && matrix_cols<A> == C, "a qd::var<qd::mat> takes a matrix of the same shape");
    return mat_value(a);
  }
  template <class M>
  static auto at(const M& m, int k) {
    return m(k / C, k % C);
  }
  template <class F>
  static auto build(F&& f) {
    return generate_mat<R, C>([&](int i, int j) { return f(i * C + j); });
  }
};

// What qd::var of a vector and of a matrix share: the component variables, assignment
// and compound updates. Derived is the qd::var, V the value type.
template <class Derived, class V>
class composite_var {
  using flat = flat_components<V>;
  using T = typename flat::scalar;

 public:
  using value_type = V;

  composite_var() : composite_var(V::zero()) {}
  template <class A>
  requires(flat::template accepts<A> && !std::is_same_v<std::remove_cvref_t<A>, Derived>) composite_var(const A& init)
      : c_(declare(flat::read(init))) {}
  composite_var(const composite_var& other) : c_(declare(other.value())) {}

  template <class A>
  requires(flat::template accepts<A>) Derived& operator=(const A& v) {
    return each(flat::read(v), [](var<T>& c, const auto& x) { c = x; });
  }
  template <class A>
  requires(flat::template accepts<A>) Derived& operator+=(const A& v) {
    return each(flat::read(v), [](var<T>& c, const auto& x) { c += x; });
  }
  template <class A>
  requires(flat::template accepts<A>) Derived& operator-=(const A& v) {
    return each(flat::read(v), [](var<T>& c, const auto& x) { c -= x; });
  }
  template <operand S>
  Derived& operator*=(const S& s) {
    for (auto& c : c_) c *= s;
    return static_cast<Derived&>(*this);
  }
  template <operand S>
  Derived& operator/=(const S& s) {
    for (auto& c : c_) c /= s;
    return static_cast<Derived&>(*this);
  }

  // The current value.
  V value() const {
    return flat::build([&](int k) { return expr<T>::from_id(c_[static_cast<std::size_t>(k)].id()); });
  }

 protected:
  var<T>& component(std::size_t k) { return c_[k]; }

 private:
  template <class W>
  static std::array<var<T>, flat::count> declare(const W& init) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::array<var<T>, flat::count>{var<T>(flat::at(init, static_cast<int>(I)))...};
    }
    (std::make_index_sequence<flat::count>{});
  }
  template <class W, class F>
  Derived& each(const W& v, F&& f) {
    for (std::size_t k = 0; k < flat::count; ++k) f(c_[k], flat::at(v, static_cast<int>(k)));
    return static_cast<Derived&>(*this);
  }

  std::array<var<T>, flat::count> c_;
};
}  // namespace detail

template <element_type T, int N>
class var<vec<T, N>> : public detail::composite_var<var<vec<T, N>>, vec<T, N>> {
  using base = detail::composite_var<var<vec<T, N>>, vec<T, N>>;

 public:
  using base::base;
  using base::operator=;
  var() = default;
  // A new variable holding other's current value, never an alias (as qd::var<T>).
  var(const var& other) : base(other) {}
  // The by-value capture of a lambda ([=]) would update a copy: rejected, as for qd::var<T>.
  template <class V>
  requires std::same_as<V, var>
  explicit var(V& other) : base(std::as_const(other)) { detail::reject_var_by_value<V>(); }
  var& operator=(const var& other) { return base::operator=(other); }

  // Component k, itself a mutable qd::var: acc[1] = 0.0f; acc.x() += 1.0f.
  var<T>& operator[](int k) { return this->component(detail::component(k, N, "qd::var<qd::vec>")); }
  var<T>& x() { return this->component(0); }
  var<T>& y() requires(N >= 2) { return this->component(1); }
  var<T>& z() requires(N >= 3) { return this->component(2); }
  var<T>& w() requires(N >= 4) { return this->component(3); }
};

template <element_type T, int R, int C>
class var<mat<T, R, C>> : public detail::composite_var<var<mat<T, R, C>>, mat<T, R, C>> {
  using base = detail::composite_var<var<mat<T, R, C>>, mat<T, R, C>>;

 public:
  using base::base;
  using base::operator=;
  var() = default;
  var(const var& other) : base(other) {}
  template <class V>
  requires std::same_as<V, var>
  explicit var(V& other) : base(std::as_const(other)) { detail::reject_var_by_value<V>(); }
  var& operator=(const var& other) { return base::operator=(other); }

  // Entry (i, j), itself a mutable qd::var: m2(0, 1) = s.
  var<T>& operator()(int i, int j) {
    return this->component(detail::component(i, R, "qd::var<qd::mat> row") * static_cast<std::size_t>(C) +
                           detail::component(j, C, "qd::var<qd::mat> column"));
  }
};

}  // namespace qd::inline v0
