// qd::ndarray<particle, N>: an owning array of host structs, for kernel parameters of
// type qd::types::ndarray<particle_k, N> (lang/struct_ndarray_param.hpp). A host struct
// is an aggregate of arithmetic members, std::array<T, K> (a qd::vec) and
// std::array<std::array<T, C>, R> (a qd::mat), matching the kernel struct member by
// member. The layout is the array's: AoS (qd::layout::aos, the default: the memory of a
// std::vector<particle>) or SoA (qd::layout::soa: each member's values contiguous).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "quadrants/lang/reflect.hpp"
#include "quadrants/lang/struct_ndarray_param.hpp"
#include "quadrants/runtime/ndarray.hpp"
#include "quadrants/runtime/vec_ndarray.hpp"

namespace qd::inline v0 {

// How an array of structs stores its elements: each element's members together (AoS),
// or each member's values together (SoA). Kernels run unchanged on either.
enum class layout : std::uint8_t { aos, soa };

namespace detail {

template <class T>
inline constexpr bool plain_scalar = element_type<T> && !std::is_same_v<T, bool>;

// What a member of a host struct is: a scalar, std::array<T, K> or std::array<std::array<T, C>, R>.
template <class H>
struct host_member_kind {
  static constexpr bool valid = false;
};
template <class T>
requires plain_scalar<T>
struct host_member_kind<T> {
  static constexpr bool valid = true;
  using scalar = T;
  static constexpr int components = 1;
};
template <class T, std::size_t K>
requires plain_scalar<T>
struct host_member_kind<std::array<T, K>> {
  static constexpr bool valid = true;
  using scalar = T;
  static constexpr int components = static_cast<int>(K);
};
template <class T, std::size_t C, std::size_t R>
requires plain_scalar<T>
struct host_member_kind<std::array<std::array<T, C>, R>> {
  static constexpr bool valid = true;
  using scalar = T;
  static constexpr int components = static_cast<int>(R * C);
};

template <class H>
inline constexpr bool is_std_array = false;
template <class T, std::size_t K>
inline constexpr bool is_std_array<std::array<T, K>> = true;

// A host struct usable as an array element.
template <class H>
constexpr bool host_struct_element_type() {
  if constexpr (is_std_array<H> || !std::is_trivially_copyable_v<H>)
    return false;
  else
    return aggregate_of<H, host_member_kind>();
}
template <class H>
concept host_struct_element = host_struct_element_type<H>();

// The host type of a kernel struct member: T, std::array<T, K>, std::array<std::array<T, C>, R>.
template <class M>
struct host_member_of : host_element<M> {};
template <element_type T>
struct host_member_of<expr<T>> {
  using type = T;
};

// Whether host struct H matches kernel struct S member by member, in order.
template <class H, class S>
constexpr bool host_matches_kernel_struct() {
  if constexpr (member_count<H>() != member_count<S>()) {
    return false;
  } else {
    return []<std::size_t... I>(std::index_sequence<I...>) {
      return (std::is_same_v<member_type<H, I>, typename host_member_of<member_type<S, I>>::type> && ...);
    }
    (std::make_index_sequence<member_count<S>()>{});
  }
}

// Where one member's values are: the byte offset of the first, and the distance between
// consecutive elements' in scalars (the last extent of the member's IR parameter).
struct member_layout {
  std::size_t offset = 0;
  std::size_t bytes = 0;  // the member's own size (AoS: its lane within the struct)
  std::int64_t stride = 0;
};

}  // namespace detail

template <class H, int N>
requires detail::host_struct_element<H>
class ndarray<H, N> {
  static_assert(N >= 0 && N <= 3, "an array of structs has at most 3 dimensions");

 public:
  using value_type = H;
  static constexpr int ndim = N;
  static constexpr int members = static_cast<int>(detail::member_count<H>());

  ndarray() requires(N == 0) : ndarray(std::array<std::int64_t, 0>{}) {}
  explicit ndarray(std::int64_t n, qd::layout l = layout::aos) requires(N == 1)
      : ndarray(std::array<std::int64_t, 1>{n}, l) {}
  explicit ndarray(const std::array<std::int64_t, N>& shape, qd::layout l = layout::aos)
      : shape_(shape),
        layout_(l),
        // SoA rounds each member's values up to 64 bytes.
        buffer_(detail::checked_bytes(shape_.data(), N, sizeof(H)) +
                (l == layout::soa ? 64 * static_cast<std::size_t>(members) : 0)) {
    const std::size_t count = static_cast<std::size_t>(size());
    const H probe{};
    const auto host = detail::tie_members(probe);
    std::size_t region = 0;
    [&]<std::size_t... M>(std::index_sequence<M...>) {
      (([&] {
         using member = std::tuple_element_t<M, std::remove_cvref_t<decltype(host)>>;
         using T = typename detail::host_member_kind<std::remove_cvref_t<member>>::scalar;
         detail::member_layout& m = layout_of_[M];
         m.bytes = sizeof(std::remove_cvref_t<member>);
         if (l == layout::aos) {
           m.offset = static_cast<std::size_t>(reinterpret_cast<const unsigned char*>(&std::get<M>(host)) -
                                               reinterpret_cast<const unsigned char*>(&probe));
           m.stride = static_cast<std::int64_t>(sizeof(H) / sizeof(T));
           static_assert(sizeof(H) % sizeof(T) == 0, "a host struct's size is a multiple of each member's scalar");
         } else {
           m.offset = region;
           m.stride = detail::host_member_kind<std::remove_cvref_t<member>>::components;
           region += (count * m.bytes + 63) / 64 * 64;  // each member's values start on a 64-byte boundary
         }
       }()),
       ...);
    }
    (std::make_index_sequence<static_cast<std::size_t>(members)>{});
  }

  ndarray(ndarray&&) noexcept = default;
  ndarray& operator=(ndarray&&) noexcept = default;
  ndarray(const ndarray&) = delete;
  ndarray& operator=(const ndarray&) = delete;

  std::int64_t shape(int d) const { return detail::extent(shape_, d, "qd::ndarray::shape"); }
  const std::array<std::int64_t, N>& shape() const { return shape_; }
  std::int64_t size() const { return detail::element_count(shape_); }
  qd::layout memory_layout() const { return layout_; }

  void from_host(std::span<const H> values) {
    if (values.size() != static_cast<std::size_t>(size()))
      detail::throw_size_mismatch("qd::ndarray<struct>::from_host (elements)", static_cast<std::size_t>(size()),
                                  values.size());
    if (layout_ == layout::aos) {
      buffer_.upload(values.data(), values.size() * sizeof(H));
      return;
    }
    std::vector<unsigned char> bytes(buffer_.bytes());
    for (std::size_t e = 0; e < values.size(); ++e) {
      const auto host = detail::tie_members(values[e]);
      for_each_member(host, [&](int m, const auto& member) {
        const detail::member_layout& ml = layout_of_[static_cast<std::size_t>(m)];
        std::memcpy(bytes.data() + ml.offset + e * ml.bytes, &member, ml.bytes);
      });
    }
    buffer_.upload(bytes.data(), bytes.size());
  }
  void from_host(const std::vector<H>& values) { from_host(std::span<const H>(values)); }

  std::vector<H> to_host() const {
    std::vector<H> out(static_cast<std::size_t>(size()));
    if (layout_ == layout::aos) {
      buffer_.download(out.data(), out.size() * sizeof(H));
      return out;
    }
    std::vector<unsigned char> bytes(buffer_.bytes());
    buffer_.download(bytes.data(), bytes.size());
    for (std::size_t e = 0; e < out.size(); ++e) {
      auto host = detail::tie_members(out[e]);
      for_each_member(host, [&](int m, auto& member) {
        const detail::member_layout& ml = layout_of_[static_cast<std::size_t>(m)];
        std::memcpy(&member, bytes.data() + ml.offset + e * ml.bytes, ml.bytes);
      });
    }
    return out;
  }

  void fill(const H& value) { from_host(std::vector<H>(static_cast<std::size_t>(size()), value)); }

  bool has_grad() const { return false; }
  // Arrays of structs have no gradient buffer: a qd::user_error.
  const ndarray& grad() const { detail::throw_missing_grad(); }

  const detail::buffer& storage() const { return buffer_; }
  // Where member m's values are (the launch passes each member as an array of its own).
  const detail::member_layout& member(int m) const { return layout_of_[static_cast<std::size_t>(m)]; }

 private:
  template <class Tuple, class F>
  static void for_each_member(Tuple& members_of, F&& f) {
    [&]<std::size_t... M>(std::index_sequence<M...>) { (f(static_cast<int>(M), std::get<M>(members_of)), ...); }
    (std::make_index_sequence<std::tuple_size_v<std::remove_cvref_t<Tuple>>>{});
  }

  std::array<std::int64_t, N> shape_{};
  qd::layout layout_ = layout::aos;
  detail::buffer buffer_;
  std::array<detail::member_layout, static_cast<std::size_t>(members)> layout_of_{};
};

}  // namespace qd::inline v0
