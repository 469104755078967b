// qd::algorithms::reduce, reduce_min and reduce_max of a 1-d array: host calls on qd::ndarray
// and values inside a kernel. Deterministic: a reduction into a top-level qd::var.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "quadrants/algorithms/tiles.hpp"
#include "quadrants/runtime/kernel.hpp"

namespace qd::inline v0::algorithms {

namespace detail {

enum class reduce_op { sum, min, max };

template <class T, reduce_op Op>
constexpr T reduce_identity() {
  if constexpr (Op == reduce_op::sum)
    return T(0);
  else if constexpr (std::is_floating_point_v<T>)
    return Op == reduce_op::min ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity();
  else
    return Op == reduce_op::min ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest();
}

// The reduction as one construct (a loop reducing into a top-level variable: fixed
// chunks combined in a fixed order, the same bits for any number of CPU threads).
template <reduce_op Op, class T, auto... O>
expr<T> reduce_construct(const types::ndarray<T, 1, O...>& in) {
  var<T> acc = reduce_identity<T, Op>();
  qd::range_for(in.shape(0), [&](i32 i) {
    if constexpr (Op == reduce_op::sum)
      acc += in[i];
    else if constexpr (Op == reduce_op::min)
      qd::atomic_min(acc, in[i]);
    else
      qd::atomic_max(acc, in[i]);
  });
  return expr<T>(acc);
}

template <class T, reduce_op Op>
const auto& reduce_kernel() {
  static const auto k = qd::kernel(Op == reduce_op::sum   ? "qd::algorithms::reduce"
                                   : Op == reduce_op::min ? "qd::algorithms::reduce_min"
                                                          : "qd::algorithms::reduce_max",
                                   {"in"}, [](types::ndarray<T, 1> in) -> expr<T> { return reduce_construct<Op>(in); });
  return k;
}

template <class T>
constexpr void check_reduce_type() {
  static_assert(!std::is_same_v<T, bool> && element_type<T>, "a reduction takes an integer or floating array");
}

template <class T>
void check_not_empty(const ndarray<T, 1>& in, const char* what) {
  if (in.shape(0) == 0) throw user_error(std::string(what) + " of an empty array has no value; check the length first");
}

}  // namespace detail

// The sum: f32 accumulates in f64 and rounds once; integers wrap. 0 for an empty array.
template <class T>
T reduce(const ndarray<T, 1>& in) {
  detail::check_reduce_type<T>();
  return detail::reduce_kernel<T, detail::reduce_op::sum>()(in);
}

// The smallest element; NaNs are skipped (IEEE minNum), so an array of NaNs alone gives
// +inf. An empty array is a qd::user_error.
template <class T>
T reduce_min(const ndarray<T, 1>& in) {
  detail::check_reduce_type<T>();
  detail::check_not_empty(in, "qd::algorithms::reduce_min");
  return detail::reduce_kernel<T, detail::reduce_op::min>()(in);
}

// The largest element; NaNs skipped (an array of NaNs gives -inf). Empty: a qd::user_error.
template <class T>
T reduce_max(const ndarray<T, 1>& in) {
  detail::check_reduce_type<T>();
  detail::check_not_empty(in, "qd::algorithms::reduce_max");
  return detail::reduce_kernel<T, detail::reduce_op::max>()(in);
}

// Inside a kernel: one construct; the value is a top-level value later constructs can use
// (an empty array gives the identity: 0, +inf / max, -inf / lowest).
template <class T, auto... O>
expr<T> reduce(const types::ndarray<T, 1, O...>& in) {
  return detail::reduce_construct<detail::reduce_op::sum>(in);
}
template <class T, auto... O>
expr<T> reduce_min(const types::ndarray<T, 1, O...>& in) {
  return detail::reduce_construct<detail::reduce_op::min>(in);
}
template <class T, auto... O>
expr<T> reduce_max(const types::ndarray<T, 1, O...>& in) {
  return detail::reduce_construct<detail::reduce_op::max>(in);
}

}  // namespace qd::inline v0::algorithms
