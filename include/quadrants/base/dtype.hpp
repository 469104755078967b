// Element and scalar types of the DSL, and the promotion rules between them.
// Everything here is constexpr so the type checks run at C++ compile time.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

namespace qd {

enum class dtype : std::uint8_t { boolean, u8, i32, u32, i64, f32, f64 };

inline constexpr int dtype_count = 7;

constexpr std::string_view name(dtype t) {
  switch (t) {
    case dtype::boolean: return "bool";
    case dtype::u8: return "u8";
    case dtype::i32: return "i32";
    case dtype::u32: return "u32";
    case dtype::i64: return "i64";
    case dtype::f32: return "f32";
    case dtype::f64: return "f64";
  }
  return "?";
}

constexpr int size_of(dtype t) {
  switch (t) {
    case dtype::boolean:
    case dtype::u8: return 1;
    case dtype::i32:
    case dtype::u32:
    case dtype::f32: return 4;
    case dtype::i64:
    case dtype::f64: return 8;
  }
  return 0;
}

constexpr bool is_float(dtype t) { return t == dtype::f32 || t == dtype::f64; }
constexpr bool is_integral(dtype t) { return !is_float(t) && t != dtype::boolean; }
constexpr bool is_signed(dtype t) { return t == dtype::i32 || t == dtype::i64 || is_float(t); }

// Rank used by promotion: the wider or floating type wins.
constexpr int promotion_rank(dtype t) {
  switch (t) {
    case dtype::boolean: return 0;
    case dtype::u8: return 1;
    case dtype::i32: return 2;
    case dtype::u32: return 3;
    case dtype::i64: return 4;
    case dtype::f32: return 5;
    case dtype::f64: return 6;
  }
  return 0;
}

// Binary arithmetic promotion, as C++ for these types except that bool and u8
// promote to i32 (C++'s int) and i64 mixed with f32 gives f32.
constexpr dtype promote(dtype a, dtype b) {
  dtype r = promotion_rank(a) >= promotion_rank(b) ? a : b;
  if (r == dtype::boolean || r == dtype::u8) return dtype::i32;
  return r;
}

// Implicit conversion allowed without qd::cast: never loses value range.
// Integer to float, narrow to wide integer, bool to anything, f32 to f64.
constexpr bool implicitly_convertible(dtype from, dtype to) {
  if (from == to) return true;
  if (to == dtype::boolean) return false;
  if (from == dtype::boolean) return true;
  if (is_float(to)) return !(from == dtype::f64 && to == dtype::f32);
  if (is_float(from)) return false;
  switch (to) {
    case dtype::i32: return from == dtype::u8;
    case dtype::u32: return from == dtype::u8;
    case dtype::i64: return from == dtype::u8 || from == dtype::i32 || from == dtype::u32;
    case dtype::boolean:
    case dtype::u8:
    case dtype::f32:
    case dtype::f64: return false;
  }
}

namespace detail {
template <class T>
struct dtype_of_impl {
  static constexpr bool supported = false;
};
template <dtype D, class T>
struct dtype_entry {
  static constexpr bool supported = true;
  static constexpr dtype value = D;
};
template <> struct dtype_of_impl<bool> : dtype_entry<dtype::boolean, bool> {};
template <> struct dtype_of_impl<std::uint8_t> : dtype_entry<dtype::u8, std::uint8_t> {};
template <> struct dtype_of_impl<std::int32_t> : dtype_entry<dtype::i32, std::int32_t> {};
template <> struct dtype_of_impl<std::uint32_t> : dtype_entry<dtype::u32, std::uint32_t> {};
template <> struct dtype_of_impl<std::int64_t> : dtype_entry<dtype::i64, std::int64_t> {};
template <> struct dtype_of_impl<float> : dtype_entry<dtype::f32, float> {};
template <> struct dtype_of_impl<double> : dtype_entry<dtype::f64, double> {};

template <dtype D> struct cpp_type_impl;
template <> struct cpp_type_impl<dtype::boolean> { using type = bool; };
template <> struct cpp_type_impl<dtype::u8> { using type = std::uint8_t; };
template <> struct cpp_type_impl<dtype::i32> { using type = std::int32_t; };
template <> struct cpp_type_impl<dtype::u32> { using type = std::uint32_t; };
template <> struct cpp_type_impl<dtype::i64> { using type = std::int64_t; };
template <> struct cpp_type_impl<dtype::f32> { using type = float; };
template <> struct cpp_type_impl<dtype::f64> { using type = double; };
}  // namespace detail

// The element types a kernel can use: bool (scalars only), u8, i32, u32, i64, f32, f64.
template <class T>
concept element_type = detail::dtype_of_impl<std::remove_cv_t<T>>::supported;

template <element_type T>
inline constexpr dtype dtype_of = detail::dtype_of_impl<std::remove_cv_t<T>>::value;

template <dtype D>
using cpp_type = typename detail::cpp_type_impl<D>::type;

}  // namespace qd
