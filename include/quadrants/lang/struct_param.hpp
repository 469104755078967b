// Struct parameters (SPEC §11.2): a kernel parameter may be an aggregate of parameter
// types (nested aggregates too). It is flattened into its members' parameters, in
// order: each member is its own kernel parameter for cache keys, the run-time checks
// and messages, named "<parameter>.<member>" (by position where the compiler cannot
// spell member names).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "quadrants/ir/node.hpp"
#include "quadrants/lang/reflect.hpp"

namespace qd::detail {

template <class P>
struct param_traits;  // kernel_signature.hpp: the parameter types themselves

template <class S, std::size_t I>
using member_type = std::remove_cvref_t<std::tuple_element_t<I, member_types<S>>>;

// A leaf parameter type, or an aggregate whose members are all valid parameters.
template <class P>
constexpr bool valid_param() {
  if constexpr (param_traits<P>::valid) {
    return true;
  } else if constexpr (reflectable_struct<P>) {
    constexpr std::size_t n = member_count<P>();
    if constexpr (n == 0 || n > max_struct_members) {
      return false;
    } else {
      return []<std::size_t... I>(std::index_sequence<I...>) {
        return (valid_param<member_type<P, I>>() && ...);
      }(std::make_index_sequence<n>{});
    }
  } else {
    return false;
  }
}

// The kernel parameters P flattens into (1 for a type that is no parameter at all:
// valid_param reports those).
template <class P>
constexpr std::size_t leaf_count() {
  if constexpr (!valid_param<P>() || param_traits<P>::valid) {
    return 1;
  } else {
    return []<std::size_t... I>(std::index_sequence<I...>) {
      return (std::size_t{0} + ... + leaf_count<member_type<P, I>>());
    }(std::make_index_sequence<member_count<P>()>{});
  }
}

template <class P>
void append_param_descs(std::vector<ir::param_desc>& out) {
  if constexpr (param_traits<P>::valid) {
    out.push_back(param_traits<P>::desc);
  } else {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (append_param_descs<member_type<P, I>>(out), ...);
    }(std::make_index_sequence<member_count<P>()>{});
  }
}

// The symbolic argument of type P whose leaves are parameters next, next + 1, ...
template <class P>
P make_param(std::int32_t& next) {
  if constexpr (param_traits<P>::valid) {
    return param_traits<P>::make(next++);
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return P{make_param<member_type<P, I>>(next)...};  // braced: left to right
    }(std::make_index_sequence<member_count<P>()>{});
  }
}

// The names of P's leaves: `base` for a leaf, "base.member" (or "base.<position>") for
// the members of a struct.
template <class P>
void append_param_names(const std::string& base, std::vector<std::string>& out) {
  if constexpr (param_traits<P>::valid) {
    out.push_back(base);
  } else {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      auto member = [&](std::size_t k, std::string_view name) {
        std::string s = base;  // appended piece by piece: GCC 12 warns wrongly on a chain of +
        s += '.';
        if (name.empty()) s += std::to_string(k);
        else s.append(name);
        return s;
      };
      (append_param_names<member_type<P, I>>(member(I, member_name<I, P>()), out), ...);
    }(std::make_index_sequence<member_count<P>()>{});
  }
}

}  // namespace qd::detail
