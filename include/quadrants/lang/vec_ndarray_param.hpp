// Arrays of vectors and matrices as kernel parameters: qd::types::ndarray<qd::vec3f, N>
// and qd::types::ndarray<qd::mat3f, N>, and the element references p[i] returns.
//
// Layout: an array of N dimensions whose elements are qd::vec<T, K> is, in the IR and
// in memory, an ordinary row-major array of T with N + 1 dimensions, the last of
// extent K (a matrix element adds two, R and C): the components of an element are
// contiguous (array of structures). Component c of p[i] is the scalar access
// p(i, c) with a constant trailing index, so the split, the disjointness check and
// atomic demotion see ordinary array accesses.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "quadrants/lang/kernel_signature.hpp"
#include "quadrants/lang/statements.hpp"
#include "quadrants/lang/vec_var.hpp"

namespace qd::inline v0 {

namespace detail {
// `base` with the constant indices `trailing` appended.
inline place with_trailing(const place& base, std::initializer_list<int> trailing) {
  place p = base;
  for (int t : trailing) p.indices[p.rank++] = emit_int_constant(dtype::i32, t);
  return p;
}
}  // namespace detail

// Element p[i] of an array of vectors. Reading it loads every component where p[i]
// is written (a snapshot, as element_ref); p[i][k] is the scalar element_ref of one
// component; += and -= update each component (atomic in a parallel construct unless
// demoted, see analysis/atomic_demotion.hpp).
template <element_type T, int N>
class vec_ref {
 public:
  using value_type = vec<T, N>;

  explicit vec_ref(const detail::place& element) : element_(element), value_(load(element)) {}
  vec_ref(const vec_ref&) = default;

  vec_ref& operator=(const vec_ref& v) { return assign(v.value()); }
  // p[i] = {0.0f, -1.0f}: a braced list of the components.
  vec_ref& operator=(const vec<T, N>& v) { return assign(v); }
  template <vector_like A>
  vec_ref& operator=(const A& v) {
    return assign(v);
  }
  template <vector_like A>
  vec_ref& operator+=(const A& v) {
    return update(ir::binary_op::add, checked(v));
  }
  template <vector_like A>
  vec_ref& operator-=(const A& v) {
    return update(ir::binary_op::sub, checked(v));
  }
  template <operand S>
  vec_ref& operator*=(const S& s) {
    return update(ir::binary_op::mul, detail::generate_vec<N>([&](int) { return expr<T>(s); }));
  }
  template <operand S>
  vec_ref& operator/=(const S& s) {
    return update(ir::binary_op::div, detail::generate_vec<N>([&](int) { return expr<T>(s); }));
  }

  // Component k as a scalar array element: p[i][2] += 1.0f.
  element_ref<T> operator[](int k) const {
    return element_ref<T>(
        detail::with_trailing(element_, {static_cast<int>(detail::component(k, N, "qd::vec element"))}));
  }
  element_ref<T> x() const { return (*this)[0]; }
  element_ref<T> y() const requires(N >= 2) { return (*this)[1]; }
  element_ref<T> z() const requires(N >= 3) { return (*this)[2]; }
  element_ref<T> w() const requires(N >= 4) { return (*this)[3]; }

  // The value loaded where the reference was made.
  vec<T, N> value() const { return value_; }
  // Where component k lives.
  detail::place component_place(int k) const { return detail::with_trailing(element_, {k}); }

 private:
  static vec<T, N> load(const detail::place& element) {
    return detail::generate_vec<N>(
        [&](int k) { return expr<T>::from_id(detail::emit_global_load(detail::with_trailing(element, {k}))); });
  }
  template <class A>
  static vec<T, N> checked(const A& v) {
    static_assert(detail::vector_size<A> == N, "an element of an array of vectors takes a vector of the same size");
    auto value = detail::vec_value(v);
    return detail::generate_vec<N>([&](int k) {
      static_assert(detail::assignable_to<decltype(value[k])>(dtype_of<T>),
                    "storing this vector into the array would lose information (for example f64 into f32); "
                    "convert it explicitly");
      return expr<T>::from_id(detail::convert(value[k].id(), dtype_of<T>));
    });
  }
  template <class A>
  vec_ref& assign(const A& v) {
    auto value = checked(v);
    for (int k = 0; k < N; ++k) detail::emit_global_store(component_place(k), value[k].id());
    return *this;
  }
  vec_ref& update(ir::binary_op o, const vec<T, N>& v) {
    for (int k = 0; k < N; ++k) detail::emit_global_update(o, component_place(k), value_[k].id(), v[k].id());
    return *this;
  }

  detail::place element_;
  vec<T, N> value_;
};

// Element q[i] of an array of matrices: q[i](r, c) is the scalar element_ref of one
// entry, q[i].row(r) a vec_ref; assignment and += / -= work entry by entry.
template <element_type T, int R, int C>
class mat_ref {
 public:
  using value_type = mat<T, R, C>;

  explicit mat_ref(const detail::place& element) : element_(element), value_(load(element)) {}
  mat_ref(const mat_ref&) = default;

  mat_ref& operator=(const mat_ref& m) { return assign(m.value()); }
  mat_ref& operator=(const mat<T, R, C>& m) { return assign(m); }
  template <matrix_like A>
  mat_ref& operator=(const A& m) {
    return assign(m);
  }
  template <matrix_like A>
  mat_ref& operator+=(const A& m) {
    return update(ir::binary_op::add, checked(m));
  }
  template <matrix_like A>
  mat_ref& operator-=(const A& m) {
    return update(ir::binary_op::sub, checked(m));
  }

  element_ref<T> operator()(int i, int j) const {
    return element_ref<T>(
        detail::with_trailing(element_, {static_cast<int>(detail::component(i, R, "qd::mat row")),
                                         static_cast<int>(detail::component(j, C, "qd::mat column"))}));
  }
  vec_ref<T, C> row(int i) const {
    return vec_ref<T, C>(detail::with_trailing(element_, {static_cast<int>(detail::component(i, R, "qd::mat row"))}));
  }

  mat<T, R, C> value() const { return value_; }
  detail::place entry_place(int i, int j) const { return detail::with_trailing(element_, {i, j}); }

 private:
  static mat<T, R, C> load(const detail::place& element) {
    return detail::generate_mat<R, C>([&](int i, int j) {
      return expr<T>::from_id(detail::emit_global_load(detail::with_trailing(element, {i, j})));
    });
  }
  template <class A>
  static mat<T, R, C> checked(const A& m) {
    static_assert(detail::matrix_rows<A> == R && detail::matrix_cols<A> == C,
                  "an element of an array of matrices takes a matrix of the same shape");
    static_assert(implicitly_convertible(dtype_of<detail::matrix_scalar<A>>, dtype_of<T>),
                  "storing this matrix into the array would lose information (for example f64 into f32); convert "
                  "it explicitly");
    return mat<T, R, C>(detail::mat_value(m));
  }
  template <class A>
  mat_ref& assign(const A& m) {
    auto value = checked(m);
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) detail::emit_global_store(entry_place(i, j), value(i, j).id());
    return *this;
  }
  mat_ref& update(ir::binary_op o, const mat<T, R, C>& m) {
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) detail::emit_global_update(o, entry_place(i, j), value_(i, j).id(), m(i, j).id());
    return *this;
  }

  detail::place element_;
  mat<T, R, C> value_;
};

namespace detail {
template <element_type T, int N>
struct vector_traits<vec_ref<T, N>> : vector_traits<vec<T, N>> {};
template <element_type T, int R, int C>
struct matrix_traits<mat_ref<T, R, C>> : matrix_traits<mat<T, R, C>> {};

// The number of trailing component dimensions of an array element type, and its scalar.
template <class E>
struct composite_element {
  static constexpr bool value = false;
};
template <element_type T, int K>
struct composite_element<vec<T, K>> {
  static constexpr bool value = true;
  using scalar = T;
  static constexpr int component_dims = 1;
  using reference = vec_ref<T, K>;
};
template <element_type T, int R, int C>
struct composite_element<mat<T, R, C>> {
  static constexpr bool value = true;
  using scalar = T;
  static constexpr int component_dims = 2;
  using reference = mat_ref<T, R, C>;
};
}  // namespace detail

// qd::atomic_add(p[i], dv) and friends: one atomic per component; returns the old vector.
#define QD_VEC_ATOMIC(fname, aop)                                                                               \
  template <element_type T, int N, vector_like V>                                                               \
  vec<T, N> fname(const vec_ref<T, N>& target, const V& value) {                                                \
    static_assert(detail::vector_size<V> == N, #fname ": the vector needs the element's number of components"); \
    auto v = detail::vec_value(value);                                                                          \
    return detail::generate_vec<N>([&](int k) { return fname(target[k], v[k]); });                              \
  }
QD_VEC_ATOMIC(atomic_add, add)
QD_VEC_ATOMIC(atomic_sub, sub)
QD_VEC_ATOMIC(atomic_min, min)
QD_VEC_ATOMIC(atomic_max, max)
QD_VEC_ATOMIC(atomic_mul, mul)
QD_VEC_ATOMIC(atomic_and, bit_and)
QD_VEC_ATOMIC(atomic_or, bit_or)
QD_VEC_ATOMIC(atomic_xor, bit_xor)
QD_VEC_ATOMIC(atomic_exchange, exchange)
#undef QD_VEC_ATOMIC

// Per component: each component swaps when it holds expected's; returns the old vector.
template <element_type T, int N, vector_like E, vector_like D>
vec<T, N> atomic_cas(const vec_ref<T, N>& target, const E& expected, const D& desired) {
  static_assert(detail::vector_size<E> == N && detail::vector_size<D> == N,
                "atomic_cas: the vectors need the element's number of components");
  auto e = detail::vec_value(expected);
  auto d = detail::vec_value(desired);
  return detail::generate_vec<N>([&](int k) { return atomic_cas(target[k], e[k], d[k]); });
}

namespace types {

// An array parameter whose elements are vectors or matrices (see the layout above).
template <class E, int N, auto... Options>
requires detail::composite_element<E>::value class ndarray<E, N, Options...> {
  using traits = detail::composite_element<E>;
  static_assert(N >= 0 && N + traits::component_dims <= 4,
                "an array of vectors has at most 3 dimensions and an array of matrices at most 2 (their components "
                "take the remaining ones of the 4)");
  static_assert((std::is_same_v<std::remove_cv_t<decltype(Options)>, needs_grad_t> && ...),
                "the only qd::types::ndarray option is qd::needs_grad");
  static_assert(sizeof...(Options) <= 1, "qd::needs_grad given twice");
  static_assert(sizeof...(Options) == 0 || dtype_of<typename traits::scalar> == dtype::f32 ||
                    dtype_of<typename traits::scalar> == dtype::f64,
                "qd::needs_grad on an array of vectors or matrices takes f32 or f64 components");

 public:
  using value_type = E;
  using scalar_type = typename traits::scalar;
  static constexpr int ndim = N;
  static constexpr int storage_ndim = N + traits::component_dims;
  static constexpr bool has_grad = sizeof...(Options) == 1;

  ndarray(detail::param_tag, std::int32_t param, std::uint8_t flags = 0) : param_(param), flags_(flags) {}

  // The gradient buffer: an array of the same shape and element type.
  ndarray<E, N> grad() const requires has_grad {
    return ndarray<E, N>(detail::param_tag{}, param_, static_cast<std::uint8_t>(flags_ | ir::access::grad));
  }

  // p[i], p(i, j): the element's reference; the first index records the user's line.
  typename traits::reference operator[](detail::located_index i) const requires(N == 1) {
    return typename traits::reference(make_place(i.id));
  }
  // p[v] with a vector of N integer indices: p(v[0], v[1], ...).
  typename traits::reference operator[](const detail::located_indices<N>& v) const requires(N >= 2) {
    return typename traits::reference(detail::place{param_, flags_, static_cast<std::uint8_t>(N), v.ids});
  }
  template <class... I>
  requires(sizeof...(I) + 1 == N && (operand<I> && ...)) typename traits::reference operator()(
      detail::located_index first, const I&... i) const {
    return typename traits::reference(make_place(first.id, detail::index_id(i)...));
  }
  typename traits::reference operator()() const requires(N == 0) { return typename traits::reference(make_place()); }

  // p.at(i, j, qd::boundary::clamp): the element with its indices clamped into the shape.
  template <class... A>
  typename traits::reference at(const A&... args) const {
    return typename traits::reference(detail::boundary_place<N>(param_, flags_, args...));
  }

  // The extent of dimension d (d < N: the element dimensions), as a traced i32.
  expr<std::int32_t> shape(int d) const {
    detail::component(d, N, "shape() of an array of vectors or matrices: dimension");
    return expr<std::int32_t>::from_id(detail::emit_shape(param_, d));
  }

  std::int32_t param_index() const { return param_; }

 private:
  template <class... Ids>
  detail::place make_place(Ids... ids) const {
    return detail::place{param_, flags_, static_cast<std::uint8_t>(N), std::array<ir::id, 4>{ids...}};
  }
  std::int32_t param_;
  std::uint8_t flags_;
};

}  // namespace types

namespace detail {
template <class E, int N, auto... Options>
requires composite_element<E>::value struct param_traits<types::ndarray<E, N, Options...>> {
  using P = types::ndarray<E, N, Options...>;
  static constexpr bool valid = true;
  static constexpr bool is_array = true;
  static constexpr ir::param_desc desc{true, dtype_of<typename P::scalar_type>, P::storage_ndim, P::has_grad};
  static P make(std::int32_t index) { return {param_tag{}, index}; }
};
}  // namespace detail

}  // namespace qd::inline v0
