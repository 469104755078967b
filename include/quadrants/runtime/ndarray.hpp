// qd::ndarray<T, N>: an owning, row-major array in the memory of the current
// arch, optionally with a gradient buffer of the same shape.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "quadrants/base/dtype.hpp"
#include "quadrants/lang/ndarray_param.hpp"

namespace qd::inline v0 {
namespace backend {
class device;
}

namespace detail {

// Device memory owned by one array. Keeps its device alive, so freeing after
// qd::reset is safe; using it after qd::reset is a qd::user_error.
class buffer {
 public:
  buffer() = default;
  QD_FUNC explicit buffer(std::size_t bytes);  // zero-filled, on the current program's device
  QD_FUNC ~buffer();
  QD_FUNC buffer(buffer&& other) noexcept;
  QD_FUNC buffer& operator=(buffer&& other) noexcept;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  std::uint64_t program_id() const { return program_id_; }

  // Whether the buffer belongs to the running program.
  QD_FUNC bool alive() const noexcept;
  // Throws unless the buffer belongs to the running program.
  QD_FUNC void check_alive(std::string_view what) const;
  QD_FUNC void upload(const void* src, std::size_t bytes);
  QD_FUNC void download(void* dst, std::size_t bytes) const;
  QD_FUNC void fill(const void* value, std::size_t value_size);

 private:
  std::shared_ptr<backend::device> device_;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  std::uint64_t program_id_ = 0;
};

// The byte size of an array of this shape; a qd::user_error for an extent outside
// 0..2^31-1 or a size that 64-bit arithmetic cannot hold (it used to wrap to 0 bytes).
QD_FUNC std::size_t checked_bytes(const std::int64_t* shape, int ndim, std::size_t element_size);
[[noreturn]] QD_FUNC void throw_size_mismatch(std::string_view what, std::size_t expected, std::size_t got);
[[noreturn]] QD_FUNC void throw_bad_dimension(std::string_view what, int d, int ndim);

template <std::size_t N>
std::int64_t extent(const std::array<std::int64_t, N>& shape, int d, std::string_view what) {
  if (d < 0 || d >= static_cast<int>(N)) throw_bad_dimension(what, d, static_cast<int>(N));
  return shape[static_cast<std::size_t>(d)];
}

template <std::size_t N>
std::int64_t element_count(const std::array<std::int64_t, N>& shape) {
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

}  // namespace detail

// Elements are scalars here; runtime/vec_ndarray.hpp specializes vectors and matrices.
template <class T, int N>
class ndarray {
  static_assert(element_type<T>,
                "qd::ndarray<T, N> takes an element type (float, std::int32_t, ...), a qd::vec or a "
                "qd::mat");
  static_assert(N >= 0 && N <= 4, "qd::ndarray supports 0 to 4 dimensions");
  static_assert(!std::is_same_v<T, bool>, "arrays of bool are not supported; use std::uint8_t");

 public:
  using value_type = T;
  static constexpr int ndim = N;

  // A 0-dimensional array holds one element.
  ndarray() requires(N == 0) : ndarray(std::array<std::int64_t, 0>{}) {}
  explicit ndarray(needs_grad_t) requires(N == 0) : ndarray(std::array<std::int64_t, 0>{}, needs_grad) {}
  explicit ndarray(std::int64_t n) requires(N == 1) : ndarray(std::array<std::int64_t, 1>{n}) {}
  ndarray(std::int64_t n, needs_grad_t) requires(N == 1) : ndarray(std::array<std::int64_t, 1>{n}, needs_grad) {}
  explicit ndarray(const std::array<std::int64_t, N>& shape)
      : shape_(shape), buffer_(detail::checked_bytes(shape_.data(), N, sizeof(T))) {}
  ndarray(const std::array<std::int64_t, N>& shape, needs_grad_t) : ndarray(shape) {
    grad_ = std::make_unique<ndarray>(shape);
  }

  ndarray(ndarray&&) noexcept = default;
  ndarray& operator=(ndarray&&) noexcept = default;
  ndarray(const ndarray&) = delete;  // device memory is not copied implicitly; move it, or copy through to_host
  ndarray& operator=(const ndarray&) = delete;

  std::int64_t shape(int d) const { return detail::extent(shape_, d, "qd::ndarray::shape"); }
  const std::array<std::int64_t, N>& shape() const { return shape_; }
  std::int64_t size() const { return detail::element_count(shape_); }

  void from_host(std::span<const T> values) {
    if (values.size() != static_cast<std::size_t>(size()))
      detail::throw_size_mismatch("qd::ndarray::from_host", static_cast<std::size_t>(size()), values.size());
    buffer_.upload(values.data(), values.size() * sizeof(T));
  }
  void from_host(const std::vector<T>& values) { from_host(std::span<const T>(values)); }

  std::vector<T> to_host() const {
    std::vector<T> out(static_cast<std::size_t>(size()));
    buffer_.download(out.data(), out.size() * sizeof(T));
    return out;
  }

  void fill(T value) { buffer_.fill(&value, sizeof(T)); }

  bool has_grad() const { return grad_ != nullptr; }
  // The gradient buffer; a qd::user_error unless constructed with qd::needs_grad.
  ndarray& grad() { return grad_ ? *grad_ : missing_grad(); }
  const ndarray& grad() const { return grad_ ? *grad_ : missing_grad(); }
  // The tangent buffer of forward mode (kernel.fwd): same shape and type, zeroed when first
  // used (it is created then: not concurrently with another first use of it); a
  // qd::user_error unless constructed with qd::needs_grad.
  ndarray& dual() const {
    if (!grad_) missing_grad();
    if (!dual_) dual_ = std::make_unique<ndarray>(shape_);
    return *dual_;
  }
  bool has_dual() const { return dual_ != nullptr; }

  const detail::buffer& storage() const { return buffer_; }

 private:
  [[noreturn]] static ndarray& missing_grad();
  std::array<std::int64_t, N> shape_{};
  detail::buffer buffer_;
  std::unique_ptr<ndarray> grad_;
  mutable std::unique_ptr<ndarray> dual_;
};

namespace detail {
[[noreturn]] QD_FUNC void throw_missing_grad();
}

// A raw buffer the caller owns, passed where a qd::ndarray<T, N> is expected
// (memory of the current arch: host memory on cpu). Its extent is not known to
// Quadrants, so a split kernel that needs two parameters to be disjoint runs its
// whole-kernel variant for a call that passes one.
// Elements are scalars here; runtime/vec_ndarray.hpp specializes vectors and matrices.
template <class T, int N>
class external_array {
  static_assert(element_type<T>,
                "qd::external_array<T, N> takes an element type (float, std::int32_t, ...), a "
                "qd::vec or a qd::mat");
  static_assert(N >= 0 && N <= 4, "qd::external_array supports 0 to 4 dimensions");

 public:
  using value_type = T;
  static constexpr int ndim = N;
  external_array(T* data, const std::array<std::int64_t, N>& shape, T* grad = nullptr)
      : data_(data), grad_(grad), shape_(shape) {}
  T* data() const { return data_; }
  T* grad_data() const { return grad_; }
  std::int64_t shape(int d) const { return detail::extent(shape_, d, "qd::external_array::shape"); }

 private:
  T* data_;
  T* grad_;
  std::array<std::int64_t, N> shape_;
};

template <class T, int N>
ndarray<T, N>& ndarray<T, N>::missing_grad() {
  detail::throw_missing_grad();
}

}  // namespace qd::inline v0

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/ndarray-inl.hpp"
#endif
