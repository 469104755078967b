// qd::types::ndarray<T, N[, qd::needs_grad]>: an array parameter of a kernel, and
// element_ref<T>, the traced array element that x[i] and x(i, j) return.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <type_traits>

#include "quadrants/lang/expr.hpp"
#include "quadrants/lang/source_location.hpp"

namespace qd::inline v0 {

// The tag of arrays with a gradient buffer: a template argument of
// qd::types::ndarray and a constructor argument of qd::ndarray.
struct needs_grad_t {
  friend constexpr bool operator==(needs_grad_t, needs_grad_t) = default;
};
inline constexpr needs_grad_t needs_grad{};

// How x.at(i, b) treats an index outside the shape: clamp moves it to the nearest edge.
enum class boundary : std::uint8_t { unchecked, clamp };

// One array element inside a kernel. Reading it records a load at the point
// where x[i] is written (so `auto v = a[0];` snapshots the value); assigning to
// it records a store; += and -= inside a parallel construct are atomic.
template <element_type T>
class element_ref {
 public:
  using value_type = T;
  static constexpr dtype type = dtype_of<T>;

  explicit element_ref(const detail::place& p) : place_(p), load_(detail::emit_global_load(p)) {}
  element_ref(const element_ref&) = default;

  element_ref& operator=(const element_ref& value) {
    detail::emit_global_store(place_, value.id());
    return *this;
  }
  template <operand A>
  element_ref& operator=(const A& value) {
    detail::emit_global_store(place_, checked_value(value));
    return *this;
  }

#define QD_ELEMENT_COMPOUND(symbol, binop)                                                 \
  template <operand A>                                                                     \
  element_ref& operator symbol(const A& value) {                                           \
    detail::emit_global_update(ir::binary_op::binop, place_, load_, checked_value(value)); \
    return *this;                                                                          \
  }
  QD_ELEMENT_COMPOUND(+=, add)
  QD_ELEMENT_COMPOUND(-=, sub)
  QD_ELEMENT_COMPOUND(*=, mul)
  QD_ELEMENT_COMPOUND(/=, div)
  QD_ELEMENT_COMPOUND(%=, mod)
  QD_ELEMENT_COMPOUND(&=, bit_and)
  QD_ELEMENT_COMPOUND(|=, bit_or)
  QD_ELEMENT_COMPOUND(^=, bit_xor)
#undef QD_ELEMENT_COMPOUND

  operator T() const { return detail::no_cpp_value<T>(); }  // a compile error naming qd::if_ and qd::sqrt

  ir::id id() const { return load_; }
  const detail::place& where() const { return place_; }

 private:
  template <class A>
  static ir::id checked_value(const A& value) {
    static_assert(detail::assignable_to<A>(dtype_of<T>),
                  "storing this value into the array would lose information (for example f64 into f32 or a float "
                  "into an integer array); convert it explicitly with qd::cast<T>(value)");
    return detail::value_id(value, type);
  }
  detail::place place_;
  ir::id load_;
};

namespace detail {
struct param_tag {};

template <class I>
ir::id index_id(const I& index) {
  if constexpr (traced<I>) {
    static_assert(is_integral(traced_dtype<I>), "array indices must be integers; use qd::cast<int>(x)");
    return index.id();
  } else {
    using L = literal_t<I>;  // a C++ number or a qd::types::template_arg
    static_assert(std::is_integral_v<L> && !std::is_same_v<L, bool>, "array indices must be integers");
    return emit_int_constant(dtype::i32, static_cast<std::int64_t>(static_cast<L>(index)));
  }
}
// An array index and where it was written: x[i] and x(i, j) record the user's line.
struct located_index {
  template <class I>
  requires operand<I> located_index(const I& index, qd::source_location loc = qd::source_location::current())
      : id((at(loc), index_id(index))) {}
  ir::id id;
};

// The N indices of x[v] for a vector v of N integers (a qd::vec2i for a 2-D array, or a
// qd::var or an array element holding one), and where x[v] was written.
template <class V>
concept index_vector = requires(const V& v) {
  {v.value()[0].id()};
  { std::remove_cvref_t<decltype(v.value())>::size } -> std::convertible_to<int>;
};
template <int N>
struct located_indices {
  template <index_vector V>
  requires(std::remove_cvref_t<decltype(std::declval<const V&>().value())>::size == N)
      located_indices(const V& v, qd::source_location loc = qd::source_location::current()) {
    at(loc);
    const auto value = v.value();
    for (int d = 0; d < N; ++d) ids[static_cast<std::size_t>(d)] = index_id(value[d]);
  }
  std::array<ir::id, 4> ids{};
};

// The place x.at(indices..., qd::boundary) names: one index per dimension and a
// boundary, in any order (the boundary is conventionally last).
template <int N, class... A>
place boundary_place(std::int32_t param, std::uint8_t flags, const A&... args) {
  static_assert(sizeof...(A) == N + 1, "x.at(indices..., qd::boundary) takes one index per dimension, then a boundary");
  static_assert((std::is_same_v<A, boundary> + ...) == 1, "x.at(indices..., qd::boundary) takes exactly one boundary");
  std::array<ir::id, 4> ids{};
  int count = 0;
  boundary mode = boundary::unchecked;
  auto take = [&](const auto& arg) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(arg)>, boundary>)
      mode = arg;
    else
      ids[static_cast<std::size_t>(count++)] = index_id(arg);
  };
  (take(args), ...);
  return place{param, static_cast<std::uint8_t>(flags | (mode == boundary::clamp ? ir::access::clamp : 0)),
               static_cast<std::uint8_t>(N), ids};
}
}  // namespace detail

namespace types {

// Elements are scalars here; lang/vec_ndarray_param.hpp specializes vectors and matrices.
template <class T, int N, auto... Options>
class ndarray {
  static_assert(element_type<T>,
                "qd::types::ndarray<T, N> takes an element type (float, std::int32_t, ...), a "
                "qd::vec or a qd::mat");
  static_assert(N >= 0 && N <= 4, "qd::types::ndarray supports 0 to 4 dimensions");
  static_assert(!std::is_same_v<T, bool>, "arrays of bool are not supported; use std::uint8_t");
  static_assert((std::is_same_v<std::remove_cv_t<decltype(Options)>, needs_grad_t> && ...),
                "the only qd::types::ndarray option is qd::needs_grad");
  static_assert(sizeof...(Options) <= 1, "qd::needs_grad given twice");
  static_assert(sizeof...(Options) == 0 || dtype_of<T> != dtype::f16,
                "qd::needs_grad does not take f16 elements (f16 is storage: keep the differentiated copy in f32)");

 public:
  using value_type = T;
  static constexpr int ndim = N;
  static constexpr bool has_grad = sizeof...(Options) == 1;

  ndarray(detail::param_tag, std::int32_t param, std::uint8_t flags = 0) : param_(param), flags_(flags) {}

  element_ref<T> operator[](detail::located_index i) const requires(N == 1) {
    return element_ref<T>(make_place(flags_, i.id));
  }
  // x[v] with a vector of N integer indices: x(v[0], v[1], ...).
  element_ref<T> operator[](const detail::located_indices<N>& v) const requires(N >= 2) {
    return element_ref<T>(detail::place{param_, flags_, static_cast<std::uint8_t>(N), v.ids});
  }

  template <class... I>
  requires(sizeof...(I) + 1 == N && (operand<I> && ...)) element_ref<T>
  operator()(detail::located_index first, const I&... i) const {
    return element_ref<T>(make_place(flags_, first.id, detail::index_id(i)...));
  }
  element_ref<T> operator()() const requires(N == 0) { return element_ref<T>(make_place(flags_)); }

  // x.at(i, j, qd::boundary::clamp): indices clamped into the shape.
  template <class... A>
  element_ref<T> at(const A&... args) const {
    return element_ref<T>(detail::boundary_place<N>(param_, flags_, args...));
  }

  // The extent of dimension d, as a traced i32.
  expr<std::int32_t> shape(int d) const { return expr<std::int32_t>::from_id(detail::emit_shape(param_, d)); }

  // The gradient buffer, an array of the same shape.
  ndarray<T, N> grad() const requires has_grad {
    return ndarray<T, N>(detail::param_tag{}, param_, static_cast<std::uint8_t>(flags_ | ir::access::grad));
  }

  std::int32_t param_index() const { return param_; }

 private:
  template <class... Ids>
  detail::place make_place(std::uint8_t flags, Ids... ids) const {
    return detail::place{param_, flags, static_cast<std::uint8_t>(N), std::array<ir::id, 4>{ids...}};
  }
  std::int32_t param_;
  std::uint8_t flags_;
};

}  // namespace types
}  // namespace qd::inline v0
