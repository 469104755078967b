// Implementation of runtime/ndarray.hpp.
#pragma once

#include <algorithm>
#include <cstring>

#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/runtime/ndarray.hpp"
#include "quadrants/runtime/pipeline/program.hpp"

namespace qd::inline v0::detail {

QD_FUNC buffer::buffer(std::size_t bytes) {
  program_use p("creating a qd::ndarray");  // qd::reset() waits for it
  device_ = p->device_ptr();
  program_id_ = p->id();
  bytes_ = bytes;
  data_ = device_->allocate(bytes);
  std::vector<unsigned char> zeros(std::min<std::size_t>(bytes, 1 << 20), 0);
  for (std::size_t done = 0; done < bytes; done += zeros.size())
    device_->copy_from_host(static_cast<unsigned char*>(data_) + done, zeros.data(),
                            std::min(zeros.size(), bytes - done));
}

QD_FUNC buffer::~buffer() {
  if (data_) device_->release(data_);
}

QD_FUNC buffer::buffer(buffer&& other) noexcept
    : device_(std::move(other.device_)), data_(other.data_), bytes_(other.bytes_), program_id_(other.program_id_) {
  other.data_ = nullptr;
  other.bytes_ = 0;
  other.program_id_ = 0;
}

QD_FUNC buffer& buffer::operator=(buffer&& other) noexcept {
  if (this != &other) {
    if (data_) device_->release(data_);
    device_ = std::move(other.device_);
    data_ = other.data_;
    bytes_ = other.bytes_;
    program_id_ = other.program_id_;
    other.data_ = nullptr;
    other.bytes_ = 0;
    other.program_id_ = 0;
  }
  return *this;
}

QD_FUNC bool buffer::alive() const noexcept {
  program_use p(std::nothrow);
  return device_ && p && p->id() == program_id_;
}

QD_FUNC void buffer::check_alive(std::string_view what) const {
  if (!device_) throw user_error(fmt::format("{}: the qd::ndarray was moved from", what));
  if (!alive())
    throw user_error(
        fmt::format("{}: this qd::ndarray was created before qd::reset() (or a later qd::init()); arrays "
                    "belong to the program that created them. Create it again after qd::init()",
                    what));
}

// An empty array's host side is an empty vector whose data() may be null: nothing to
// copy, and memcpy with a null pointer is undefined even for zero bytes.
QD_FUNC void buffer::upload(const void* src, std::size_t bytes) {
  check_alive("qd::ndarray::from_host");
  if (bytes == 0) return;
  device_->copy_from_host(data_, src, bytes);
}

QD_FUNC void buffer::download(void* dst, std::size_t bytes) const {
  check_alive("qd::ndarray::to_host");
  if (bytes == 0) return;
  device_->copy_to_host(dst, data_, bytes);
}

QD_FUNC void buffer::fill(const void* value, std::size_t value_size) {
  check_alive("qd::ndarray::fill");
  if (bytes_ == 0) return;
  std::size_t per_chunk = std::max<std::size_t>(1, (std::size_t{1} << 16) / value_size);
  std::vector<unsigned char> pattern(std::min(per_chunk, bytes_ / value_size) * value_size);
  for (std::size_t k = 0; k < pattern.size(); k += value_size) std::memcpy(pattern.data() + k, value, value_size);
  for (std::size_t done = 0; done < bytes_; done += pattern.size())
    device_->copy_from_host(static_cast<unsigned char*>(data_) + done, pattern.data(),
                            std::min(pattern.size(), bytes_ - done));
}

QD_FUNC std::size_t checked_bytes(const std::int64_t* shape, int ndim, std::size_t element_size) {
  auto dims = [&] {
    std::string text;
    for (int d = 0; d < ndim; ++d) text += fmt::format("{}{}", d ? ", " : "", shape[d]);
    return text;
  };
  for (int d = 0; d < ndim; ++d)
    if (shape[d] < 0 || shape[d] > (std::int64_t{1} << 31) - 1)
      throw user_error(
          fmt::format("qd::ndarray({{{}}}): extent {} of dimension {} is out of range; extents must be in "
                      "0..2147483647",
                      dims(), shape[d], d));
  // Elements and bytes below 2^63, so that element counts, byte offsets and the
  // generated code's 64-bit index arithmetic never wrap.
  constexpr std::uint64_t limit = std::uint64_t{1} << 63;
  std::uint64_t bytes = element_size;
  bool any_zero = false;
  for (int d = 0; d < ndim; ++d) any_zero |= shape[d] == 0;
  for (int d = 0; d < ndim && !any_zero; ++d)
    if (__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(shape[d]), &bytes) || bytes >= limit)
      throw user_error(
          fmt::format("qd::ndarray({{{}}}): the size in bytes (the product of the extents times {}) "
                      "is 2^63 or more, which no machine can hold; make the array smaller",
                      dims(), element_size));
  return any_zero ? 0 : static_cast<std::size_t>(bytes);
}

QD_FUNC void throw_bad_dimension(std::string_view what, int d, int ndim) {
  if (ndim == 0) throw user_error(fmt::format("{}({}): a 0-dimensional array has no extents", what, d));
  throw user_error(fmt::format("{}({}): the array has {} dimension{}; pass a dimension in 0..{}", what, d, ndim,
                               ndim == 1 ? "" : "s", ndim - 1));
}

QD_FUNC void throw_size_mismatch(std::string_view what, std::size_t expected, std::size_t got) {
  throw user_error(
      fmt::format("{}: the array has {} elements but {} were given; pass exactly one value per element "
                  "(row-major)",
                  what, expected, got));
}

QD_FUNC void throw_missing_grad() {
  throw user_error("qd::ndarray::grad(): this array has no gradient buffer; construct it with qd::needs_grad");
}

}  // namespace qd::inline v0::detail
