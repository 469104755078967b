// Reflection of aggregates without macros, for struct parameters: member
// count, members as a tuple of references, member names where the compiler allows.
// The structured-bindings technique of Boost.PFR, which Debian's Boost 1.74 lacks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace qd::inline v0::detail {

// --- reflection -----------------------------------------------------------------

// Converts to anything: probes how many initializers an aggregate takes.
struct any_member {
  template <class T>
  operator T() const;  // never defined: unevaluated only
};

template <class S, std::size_t... I>
constexpr bool brace_constructible(std::index_sequence<I...>) {
  return requires { S{(static_cast<void>(I), any_member{})...}; };
}

// Binds any non-const lvalue reference: probes for members such as `qd::ndarray<float, 1>& a`,
// which any_member cannot initialize (so member_count does not see them).
struct any_lvalue_member {
  template <class T>
  operator T&() const;  // never defined: unevaluated only
};

// Whether S takes N initializers that bind non-const references: a host struct with
// reference members, which reflection does not support.
template <class S, std::size_t N>
constexpr bool has_lvalue_reference_members() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return requires { S{(static_cast<void>(I), any_lvalue_member{})...}; };
  }
  (std::make_index_sequence<N>{}) && !brace_constructible<S>(std::make_index_sequence<N>{});
}

inline constexpr std::size_t max_struct_members = 16;

// The number of members of the aggregate S (max_struct_members + 1: more than supported).
template <class S, std::size_t N = max_struct_members + 1>
constexpr std::size_t member_count() {
  if constexpr (N == 0 || brace_constructible<S>(std::make_index_sequence<N>{}))
    return N;
  else
    return member_count<S, N - 1>();
}

// Whether S is a struct the reflection handles: an aggregate class, not a std::tuple-like type.
template <class S>
inline constexpr bool reflectable_struct = std::is_class_v<S>&& std::is_aggregate_v<S> && !std::is_union_v<S>;

// A std::tuple of references to the members of `s`, in declaration order.
template <class S>
constexpr auto tie_members(S& s) {
  constexpr std::size_t N = member_count<std::remove_cv_t<S>>();
  static_assert(N <= max_struct_members, "a struct parameter has at most 16 members; nest structs for more");
  if constexpr (N == 0) {
    return std::tuple<>{};
  } else if constexpr (N == 1) {
    auto& [m0] = s;
    return std::forward_as_tuple(m0);
  } else if constexpr (N == 2) {
    auto& [m0, m1] = s;
    return std::forward_as_tuple(m0, m1);
  } else if constexpr (N == 3) {
    auto& [m0, m1, m2] = s;
    return std::forward_as_tuple(m0, m1, m2);
  } else if constexpr (N == 4) {
    auto& [m0, m1, m2, m3] = s;
    return std::forward_as_tuple(m0, m1, m2, m3);
  } else if constexpr (N == 5) {
    auto& [m0, m1, m2, m3, m4] = s;
    return std::forward_as_tuple(m0, m1, m2, m3, m4);
  } else if constexpr (N == 6) {
    auto& [m0, m1, m2, m3, m4, m5] = s;
    return std::forward_as_tuple(m0, m1, m2, m3, m4, m5);
  } else if constexpr (N == 7) {
    auto& [m0, m1, m2, m3, m4, m5, m6] = s;
    return std::forward_as_tuple(m0, m1, m2, m3, m4, m5, m6);
  } else if constexpr (N == 8) {
    auto& [m0, m1, m2, m3, m4, m5, m6, m7] = s;
    return std::forward_as_tuple(m0, m1, m2, m3, m4, m5, m6, m7);
  } else if constexpr (N == 9) {
    auto& [m0, m1, m2, m3, m4, m5, m6, m7, m8] = s;
    return std::forward_as_tuple(m0, m1, m2, m3, m4, m5, m6, m7, m8);
  } else if constexpr (N == 10) {
    auto& [m0, m1, m2, m3, m4, m5, m6, m7, m8, m9] = s;
    return std::forward_as_tuple(m0, m1, m2, m3, m4, m5, m6, m7, m8, m9);
  } else if constexpr (N == 11) {
    auto& [m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10] = s;
    return std::forward_as_tuple(m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10);
  } else if constexpr (N == 12) {
    auto& [m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11] = s;
    return std::forward_as_tuple(m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11);
  } else if constexpr (N == 13) {
    auto& [m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12] = s;
    return std::forward_as_tuple(m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12);
  } else if constexpr (N == 14) {
    auto& [m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13] = s;
    return std::forward_as_tuple(m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13);
  } else if constexpr (N == 15) {
    auto& [m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14] = s;
    return std::forward_as_tuple(m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14);
  } else if constexpr (N == 16) {
    auto& [m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15] = s;
    return std::forward_as_tuple(m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15);
  }
}

template <class S>
using member_types = decltype(tie_members(std::declval<S&>()));  // std::tuple<M&...>

// Member names where the compiler spells them in __PRETTY_FUNCTION__ for a pointer to
// a subobject (GCC); elsewhere empty, and messages use the member's position.
template <class S>
struct fake_wrapper {
  const S value;
};
template <class S>
extern const fake_wrapper<S> fake_object;  // never defined: only its members' addresses are named

template <std::size_t I, class S>
consteval auto member_address() {
  constexpr std::size_t N = member_count<S>();
  if constexpr (N == 0) {
    return static_cast<const int*>(nullptr);
  } else if constexpr (N == 1) {
    const auto& [m0] = fake_object<S>.value;
    return std::get<I>(std::tuple{&m0});
  } else if constexpr (N == 2) {
    const auto& [m0, m1] = fake_object<S>.value;
    return std::get<I>(std::tuple{&m0, &m1});
  } else if constexpr (N == 3) {
    const auto& [m0, m1, m2] = fake_object<S>.value;
    return std::get<I>(std::tuple{&m0, &m1, &m2});
  } else if constexpr (N == 4) {
    const auto& [m0, m1, m2, m3] = fake_object<S>.value;
    return std::get<I>(std::tuple{&m0, &m1, &m2, &m3});
  } else if constexpr (N == 5) {
    const auto& [m0, m1, m2, m3, m4] = fake_object<S>.value;
    return std::get<I>(std::tuple{&m0, &m1, &m2, &m3, &m4});
  } else if constexpr (N == 6) {
    const auto& [m0, m1, m2, m3, m4, m5] = fake_object<S>.value;
    return std::get<I>(std::tuple{&m0, &m1, &m2, &m3, &m4, &m5});
  } else if constexpr (N == 7) {
    const auto& [m0, m1, m2, m3, m4, m5, m6] = fake_object<S>.value;
    return std::get<I>(std::tuple{&m0, &m1, &m2, &m3, &m4, &m5, &m6});
  } else if constexpr (N == 8) {
    const auto& [m0, m1, m2, m3, m4, m5, m6, m7] = fake_object<S>.value;
    return std::get<I>(std::tuple{&m0, &m1, &m2, &m3, &m4, &m5, &m6, &m7});
  } else if constexpr (N == 9) {
    const auto& [m0, m1, m2, m3, m4, m5, m6, m7, m8] = fake_object<S>.value;
    return std::get<I>(std::tuple{&m0, &m1, &m2, &m3, &m4, &m5, &m6, &m7, &m8});
  } else if constexpr (N == 10) {
    const auto& [m0, m1, m2, m3, m4, m5, m6, m7, m8, m9] = fake_object<S>.value;
    return std::get<I>(std::tuple{&m0, &m1, &m2, &m3, &m4, &m5, &m6, &m7, &m8, &m9});
  } else if constexpr (N == 11) {
    const auto& [m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10] = fake_object<S>.value;
    return std::get<I>(std::tuple{&m0, &m1, &m2, &m3, &m4, &m5, &m6, &m7, &m8, &m9, &m10});
  } else if constexpr (N == 12) {
    const auto& [m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11] = fake_object<S>.value;
    return std::get<I>(std::tuple{&m0, &m1, &m2, &m3, &m4, &m5, &m6, &m7, &m8, &m9, &m10, &m11});
  } else if constexpr (N == 13) {
    const auto& [m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12] = fake_object<S>.value;
    return std::get<I>(std::tuple{&m0, &m1, &m2, &m3, &m4, &m5, &m6, &m7, &m8, &m9, &m10, &m11, &m12});
  } else if constexpr (N == 14) {
    const auto& [m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13] = fake_object<S>.value;
    return std::get<I>(std::tuple{&m0, &m1, &m2, &m3, &m4, &m5, &m6, &m7, &m8, &m9, &m10, &m11, &m12, &m13});
  } else if constexpr (N == 15) {
    const auto& [m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14] = fake_object<S>.value;
    return std::get<I>(std::tuple{&m0, &m1, &m2, &m3, &m4, &m5, &m6, &m7, &m8, &m9, &m10, &m11, &m12, &m13, &m14});
  } else if constexpr (N == 16) {
    const auto& [m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15] = fake_object<S>.value;
    return std::get<I>(
        std::tuple{&m0, &m1, &m2, &m3, &m4, &m5, &m6, &m7, &m8, &m9, &m10, &m11, &m12, &m13, &m14, &m15});
  }
}

template <auto P>
consteval std::string_view pretty_name_of() {
  return __PRETTY_FUNCTION__;
}

// The trailing identifier of the template argument in a __PRETTY_FUNCTION__ text.
constexpr std::string_view trailing_identifier(std::string_view pretty) {
  const std::size_t at = pretty.find("P = ");
  if (at == std::string_view::npos) return {};
  std::size_t end = pretty.find_first_of(";]", at);
  if (end == std::string_view::npos) end = pretty.size();
  while (end > at && pretty[end - 1] == ')') --end;
  std::size_t begin = end;
  auto ident = [](char c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  while (begin > at && ident(pretty[begin - 1])) --begin;
  if (begin == end || (pretty[begin] >= '0' && pretty[begin] <= '9')) return {};
  return pretty.substr(begin, end - begin);
}

template <std::size_t I, class S>
constexpr std::string_view member_name() {
#if defined(__GNUC__) && !defined(__clang__)
  return trailing_identifier(pretty_name_of<member_address<I, S>()>());
#else
  return {};
#endif
}

}  // namespace qd::inline v0::detail
