// Element and scalar types of the DSL, and the promotion rules between them.
// Everything here is constexpr so the type checks run at C++ compile time.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

#include "quadrants/base/half.hpp"

namespace qd::inline v0 {

// Appended in the order they arrived: the values are part of serialized IR.
enum class dtype : std::uint8_t { boolean, u8, i32, u32, i64, f32, f64, i8, i16, u16, u64, f16 };

inline constexpr int dtype_count = 12;

constexpr std::string_view name(dtype t) {
  switch (t) {
    case dtype::boolean: return "bool";
    case dtype::u8: return "u8";
    case dtype::i32: return "i32";
    case dtype::u32: return "u32";
    case dtype::i64: return "i64";
    case dtype::f32: return "f32";
    case dtype::f64: return "f64";
    case dtype::i8: return "i8";
    case dtype::i16: return "i16";
    case dtype::u16: return "u16";
    case dtype::u64: return "u64";
    case dtype::f16: return "f16";
  }
  return "?";
}

constexpr int size_of(dtype t) {
  switch (t) {
    case dtype::boolean:
    case dtype::u8:
    case dtype::i8: return 1;
    case dtype::i16:
    case dtype::u16:
    case dtype::f16: return 2;
    case dtype::i32:
    case dtype::u32:
    case dtype::f32: return 4;
    case dtype::i64:
    case dtype::u64:
    case dtype::f64: return 8;
  }
  return 0;
}

constexpr bool is_float(dtype t) { return t == dtype::f32 || t == dtype::f64 || t == dtype::f16; }
constexpr bool is_integral(dtype t) { return !is_float(t) && t != dtype::boolean; }
constexpr bool is_signed(dtype t) {
  return t == dtype::i8 || t == dtype::i16 || t == dtype::i32 || t == dtype::i64 || is_float(t);
}

// Rank used by promotion: the wider or floating type wins.
constexpr int promotion_rank(dtype t) {
  switch (t) {
    case dtype::boolean: return 0;
    case dtype::i8:
    case dtype::u8:
    case dtype::i16:
    case dtype::u16: return 1;
    case dtype::i32: return 2;
    case dtype::u32: return 3;
    case dtype::i64: return 4;
    case dtype::u64: return 5;
    case dtype::f16: return 6;
    case dtype::f32: return 7;
    case dtype::f64: return 8;
  }
  return 0;
}

// Binary arithmetic promotion, as C++ for these types except that i64 or u64 mixed
// with f32 gives f32: bool and the narrow integers promote to i32 (C++'s int), and
// f16 computes in f32 (as a C++ _Float16 does on most hosts).
constexpr dtype promote(dtype a, dtype b) {
  dtype r = promotion_rank(a) >= promotion_rank(b) ? a : b;
  if (r == dtype::boolean || promotion_rank(r) == 1) return dtype::i32;
  if (r == dtype::f16) return dtype::f32;
  return r;
}

// Implicit conversion allowed without qd::cast: never loses value range.
// Integer to f32/f64, narrow to wide integer, bool to anything, f16 to f32 to f64;
// into f16 only what it holds exactly (bool, i8, u8).
constexpr bool implicitly_convertible(dtype from, dtype to) {
  if (from == to) return true;
  if (to == dtype::boolean) return false;
  if (from == dtype::boolean) return true;
  if (to == dtype::f16) return from == dtype::i8 || from == dtype::u8;
  if (is_float(to)) return !(from == dtype::f64 && to == dtype::f32);
  if (is_float(from)) return false;
  const bool from_signed = is_signed(from);
  if (is_signed(to)) return size_of(from) < size_of(to) || (from_signed && size_of(from) == size_of(to));
  return !from_signed && size_of(from) <= size_of(to);
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
template <>
struct dtype_of_impl<bool> : dtype_entry<dtype::boolean, bool> {};
template <>
struct dtype_of_impl<std::uint8_t> : dtype_entry<dtype::u8, std::uint8_t> {};
template <>
struct dtype_of_impl<std::int32_t> : dtype_entry<dtype::i32, std::int32_t> {};
template <>
struct dtype_of_impl<std::uint32_t> : dtype_entry<dtype::u32, std::uint32_t> {};
template <>
struct dtype_of_impl<std::int64_t> : dtype_entry<dtype::i64, std::int64_t> {};
template <>
struct dtype_of_impl<float> : dtype_entry<dtype::f32, float> {};
template <>
struct dtype_of_impl<double> : dtype_entry<dtype::f64, double> {};
template <>
struct dtype_of_impl<std::int8_t> : dtype_entry<dtype::i8, std::int8_t> {};
template <>
struct dtype_of_impl<std::int16_t> : dtype_entry<dtype::i16, std::int16_t> {};
template <>
struct dtype_of_impl<std::uint16_t> : dtype_entry<dtype::u16, std::uint16_t> {};
template <>
struct dtype_of_impl<std::uint64_t> : dtype_entry<dtype::u64, std::uint64_t> {};
template <>
struct dtype_of_impl<half> : dtype_entry<dtype::f16, half> {};
#ifdef __FLT16_MAX__
template <>
struct dtype_of_impl<_Float16> : dtype_entry<dtype::f16, _Float16> {};
#endif

template <dtype D>
struct cpp_type_impl;
template <>
struct cpp_type_impl<dtype::boolean> {
  using type = bool;
};
template <>
struct cpp_type_impl<dtype::u8> {
  using type = std::uint8_t;
};
template <>
struct cpp_type_impl<dtype::i32> {
  using type = std::int32_t;
};
template <>
struct cpp_type_impl<dtype::u32> {
  using type = std::uint32_t;
};
template <>
struct cpp_type_impl<dtype::i64> {
  using type = std::int64_t;
};
template <>
struct cpp_type_impl<dtype::f32> {
  using type = float;
};
template <>
struct cpp_type_impl<dtype::f64> {
  using type = double;
};
template <>
struct cpp_type_impl<dtype::i8> {
  using type = std::int8_t;
};
template <>
struct cpp_type_impl<dtype::i16> {
  using type = std::int16_t;
};
template <>
struct cpp_type_impl<dtype::u16> {
  using type = std::uint16_t;
};
template <>
struct cpp_type_impl<dtype::u64> {
  using type = std::uint64_t;
};
template <>
struct cpp_type_impl<dtype::f16> {
  using type = half;
};
}  // namespace detail

// The element types a kernel can use: bool (scalars only), i8, u8, i16, u16, i32, u32,
// i64, u64, f16 (qd::half, or the compiler's _Float16 where it has one), f32, f64.
template <class T>
concept element_type = detail::dtype_of_impl<std::remove_cv_t<T>>::supported;

template <element_type T>
inline constexpr dtype dtype_of = detail::dtype_of_impl<std::remove_cv_t<T>>::value;

template <dtype D>
using cpp_type = typename detail::cpp_type_impl<D>::type;

}  // namespace qd::inline v0
