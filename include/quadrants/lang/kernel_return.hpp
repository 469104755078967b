// Kernel return values: what a kernel lambda may return, and how.
// Each returned scalar is one element, written by a final top-level store into a
// hidden 0-d array parameter appended after the kernel's own (so a value reduced in a
// loop and returned is a carried value, like any top-level value a later store reads);
// the call reads the elements back and assembles the host value.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/lang/expr.hpp"

namespace qd::inline v0::detail {

// The element type a returned T is stored as (arrays of bool do not exist).
template <class T>
using return_storage_t = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;

// return_traits<R>: valid; host_type (what the call returns); elements (a std::tuple of
// the element types, in order); ids(r, out) writes each element's IR value; and
// assemble(flat) builds host_type from a std::tuple of the elements' values. A new
// returnable type (qd::vec, qd::mat) is one more specialization.
template <class R>
struct return_traits {
  static constexpr bool valid = false;
};

template <traced A>
struct return_traits<A> {
  using T = traced_type<A>;
  static constexpr bool valid = true;
  using host_type = T;
  using elements = std::tuple<T>;
  static void ids(const A& r, ir::id* out) { out[0] = r.id(); }
  static host_type assemble(const elements& e) { return std::get<0>(e); }
};

template <class... X>
struct return_traits<std::tuple<X...>> {
  static constexpr bool valid = (return_traits<X>::valid && ...);
  using host_type = std::tuple<typename return_traits<X>::host_type...>;
  using elements = decltype(std::tuple_cat(std::declval<typename return_traits<X>::elements>()...));
  static constexpr std::array<std::size_t, sizeof...(X)> counts{
      std::tuple_size_v<typename return_traits<X>::elements>...};
  static constexpr std::size_t offset(std::size_t k) {
    std::size_t o = 0;
    for (std::size_t j = 0; j < k; ++j) o += counts[j];
    return o;
  }
  static void ids(const std::tuple<X...>& r, ir::id* out) {
    [&]<std::size_t... I>(std::index_sequence<I...>) { (return_traits<X>::ids(std::get<I>(r), out + offset(I)), ...); }
    (std::index_sequence_for<X...>{});
  }
  static host_type assemble(const elements& e) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) { return host_type{part<offset(I), X>(e)...}; }
    (std::index_sequence_for<X...>{});
  }

 private:
  template <std::size_t Offset, class Y>
  static typename return_traits<Y>::host_type part(const elements& e) {
    using E = typename return_traits<Y>::elements;
    return [&]<std::size_t... J>(std::index_sequence<J...>) {
      return return_traits<Y>::assemble(E{std::get<Offset + J>(e)...});
    }
    (std::make_index_sequence<std::tuple_size_v<E>>{});
  }
};

// The kernel's returned type (void: nothing) and its element count.
template <class R>
inline constexpr std::size_t return_element_count = 0;
template <class R>
requires(!std::is_void_v<R> && return_traits<R>::valid) inline constexpr std::size_t return_element_count<R> =
    std::tuple_size_v<typename return_traits<R>::elements>;

template <class R>
constexpr void check_return_type() {
  static_assert(
      std::is_void_v<R> || return_traits<R>::valid,
      "a kernel lambda may return a traced scalar (qd::f32, qd::i32, ..., a qd::var or an array element), "
      "a qd::vec or qd::mat, or a std::tuple of them; a C++ number is no kernel result: return qd::f32(value)");
}

// The hidden parameters of the returned elements: one 0-d array each.
template <class R>
void append_return_descs(std::vector<ir::param_desc>& descs) {
  if constexpr (return_element_count < R >> 0) {
    std::apply(
        [&](auto... e) {
          (descs.push_back({true, dtype_of<return_storage_t<decltype(e)>>, 0, false}), ...);
        },
        typename return_traits<R>::elements{});
  }
}

// Names of the hidden parameters when the kernel names its own: "return" or "return.<k>".
QD_FUNC void append_return_names(std::vector<std::string>& names, std::size_t count);
// At the end of the trace: stores each returned element into its hidden parameter,
// the first of which is parameter `first`.
QD_FUNC void emit_return_stores(const ir::id* values, std::size_t count, std::int32_t first);

template <class R>
void store_return_value(const R& r, std::int32_t first) {
  std::array<ir::id, return_element_count<R>> values{};
  return_traits<R>::ids(r, values.data());
  emit_return_stores(values.data(), values.size(), first);
}

}  // namespace qd::inline v0::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/lang/kernel_return-inl.hpp"
#endif
