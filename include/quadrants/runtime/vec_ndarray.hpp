// qd::ndarray<qd::vec3f, N> and qd::ndarray<qd::mat3f, N>: owning arrays of vectors or
// matrices. Host elements are std::array<T, K> (matrices std::array<std::array<T, C>, R>);
// memory holds them contiguously, as a row-major array of T with the component
// dimensions last (lang/vec_ndarray_param.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include "quadrants/lang/vec_ndarray_param.hpp"
#include "quadrants/runtime/ndarray.hpp"

namespace qd::inline v0 {

namespace detail {
// The host type and component extents of a vector or matrix element.
template <class E>
struct host_element;
template <element_type T, int K>
struct host_element<vec<T, K>> {
  using type = std::array<T, static_cast<std::size_t>(K)>;
  static constexpr std::array<std::int64_t, 1> extents{K};
};
template <element_type T, int R, int C>
struct host_element<mat<T, R, C>> {
  using type = std::array<std::array<T, static_cast<std::size_t>(C)>, static_cast<std::size_t>(R)>;
  static constexpr std::array<std::int64_t, 2> extents{R, C};
};

// The scalar array in memory of an N-dimensional array of vectors or matrices E.
template <class E, int N>
struct composite_array {
  using scalar = typename composite_element<E>::scalar;
  static constexpr int storage_rank = N + composite_element<E>::component_dims;
  static_assert(N >= 0 && storage_rank <= 4,
                "an array of vectors has at most 3 dimensions and an array of matrices at most 2");
  // The element shape, then the component extents.
  static std::array<std::int64_t, storage_rank> storage_shape(const std::array<std::int64_t, N>& shape) {
    std::array<std::int64_t, storage_rank> s{};
    for (int d = 0; d < N; ++d) s[static_cast<std::size_t>(d)] = shape[static_cast<std::size_t>(d)];
    int d = N;
    for (auto e : host_element<E>::extents) s[static_cast<std::size_t>(d++)] = e;
    return s;
  }
};
}  // namespace detail

template <class E, int N>
requires detail::composite_element<E>::value class ndarray<E, N> {
  using memory = detail::composite_array<E, N>;
  using T = typename memory::scalar;
  static constexpr int storage_rank = memory::storage_rank;
  static constexpr std::size_t components = sizeof(typename detail::host_element<E>::type) / sizeof(T);
  static_assert(
      sizeof(typename detail::host_element<E>::type) == components * sizeof(T) &&
          components ==
              [] {
                std::size_t n = 1;
                for (auto e : detail::host_element<E>::extents) n *= static_cast<std::size_t>(e);
                return n;
              }(),
      "std::array host elements must be contiguous components");

 public:
  using value_type = E;
  using host_value_type = typename detail::host_element<E>::type;
  static constexpr int ndim = N;

  ndarray() requires(N == 0) : ndarray(std::array<std::int64_t, 0>{}) {}
  explicit ndarray(std::int64_t n) requires(N == 1) : ndarray(std::array<std::int64_t, 1>{n}) {}
  explicit ndarray(const std::array<std::int64_t, N>& shape) : shape_(shape), data_(memory::storage_shape(shape)) {}
  // With a gradient buffer (and, for forward mode, a tangent buffer) of the same shape and element type.
  explicit ndarray(needs_grad_t) requires(N == 0) : ndarray(std::array<std::int64_t, 0>{}, needs_grad) {}
  ndarray(std::int64_t n, needs_grad_t) requires(N == 1) : ndarray(std::array<std::int64_t, 1>{n}, needs_grad) {}
  ndarray(const std::array<std::int64_t, N>& shape, needs_grad_t) : ndarray(shape) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                  "qd::needs_grad on an array of vectors or matrices takes float or double components");
    grad_ = std::make_unique<ndarray>(shape);
  }

  std::int64_t shape(int d) const { return detail::extent(shape_, d, "qd::ndarray::shape"); }
  const std::array<std::int64_t, N>& shape() const { return shape_; }
  // The number of vectors or matrices.
  std::int64_t size() const { return data_.size() / static_cast<std::int64_t>(components); }
  // The shape of the scalar array in memory: the element shape, then the component extents.
  std::array<std::int64_t, storage_rank> storage_shape() const { return data_.shape(); }

  void from_host(std::span<const host_value_type> values) {
    if (values.size() != static_cast<std::size_t>(size()))
      detail::throw_size_mismatch("qd::ndarray<qd::vec/qd::mat>::from_host (elements)",
                                  static_cast<std::size_t>(size()), values.size());
    data_.from_host(std::span<const T>(reinterpret_cast<const T*>(values.data()), values.size() * components));
  }
  void from_host(const std::vector<host_value_type>& values) { from_host(std::span<const host_value_type>(values)); }

  std::vector<host_value_type> to_host() const {
    std::vector<host_value_type> out(static_cast<std::size_t>(size()));
    std::vector<T> flat = data_.to_host();
    std::memcpy(out.data(), flat.data(), flat.size() * sizeof(T));
    return out;
  }

  void fill(const host_value_type& value) {
    std::vector<host_value_type> all(static_cast<std::size_t>(size()), value);
    from_host(all);
  }

  bool has_grad() const { return grad_ != nullptr; }
  // The gradient buffer; a qd::user_error unless constructed with qd::needs_grad.
  ndarray& grad() {
    if (!grad_) detail::throw_missing_grad();
    return *grad_;
  }
  const ndarray& grad() const {
    if (!grad_) detail::throw_missing_grad();
    return *grad_;
  }
  // The tangent buffer of forward mode (kernel.fwd), as for arrays of scalars: created
  // (zeroed) on first use, which must not race with another first use of it.
  ndarray& dual() const {
    if (!grad_) detail::throw_missing_grad();
    if (!dual_) dual_ = std::make_unique<ndarray>(shape_);
    return *dual_;
  }
  bool has_dual() const { return dual_ != nullptr; }

  const detail::buffer& storage() const { return data_.storage(); }

 private:
  std::array<std::int64_t, N> shape_{};
  ndarray<T, storage_rank> data_;
  std::unique_ptr<ndarray> grad_;
  mutable std::unique_ptr<ndarray> dual_;
};

// A buffer of vectors or matrices the caller owns (see external_array in ndarray.hpp):
// contiguous components, element after element, given as host elements
// (std::array<float, 3>* for a qd::vec3f) or as scalars (float*).
template <class E, int N>
requires detail::composite_element<E>::value class external_array<E, N> {
  using memory = detail::composite_array<E, N>;
  using T = typename memory::scalar;

 public:
  using value_type = E;
  using host_value_type = typename detail::host_element<E>::type;
  static constexpr int ndim = N;

  external_array(host_value_type* data, const std::array<std::int64_t, N>& shape)
      : external_array(reinterpret_cast<T*>(data), shape) {}
  external_array(T* data, const std::array<std::int64_t, N>& shape) : data_(data), shape_(shape) {}
  T* data() const { return data_; }
  T* grad_data() const { return nullptr; }
  std::int64_t shape(int d) const { return detail::extent(shape_, d, "qd::external_array::shape"); }
  // The shape of the scalar array in memory: the element shape, then the component extents.
  std::array<std::int64_t, memory::storage_rank> storage_shape() const { return memory::storage_shape(shape_); }

 private:
  T* data_;
  std::array<std::int64_t, N> shape_;
};

namespace detail {
// The shape a launch passes for an array argument: its memory's shape.
template <class A>
void copy_launch_shape(std::int64_t (&out)[4], const A& a) {
  if constexpr (requires { a.storage_shape(); }) {
    auto s = a.storage_shape();
    for (std::size_t d = 0; d < s.size(); ++d) out[d] = s[d];
  } else {
    for (int d = 0; d < A::ndim; ++d) out[d] = a.shape(d);
  }
}
}  // namespace detail

}  // namespace qd::inline v0
