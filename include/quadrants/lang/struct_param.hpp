// Struct parameters: a kernel parameter may be an aggregate of parameter
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

namespace qd::inline v0::detail {

template <class P>
struct param_traits;  // kernel_signature.hpp: the parameter types themselves

// How many IR parameters a leaf parameter type takes: one, or one per component of a
// vector or matrix (lang/vec_param.hpp, whose traits list `descs` and name each one).
template <class P>
constexpr std::size_t ir_param_count() {
  if constexpr (requires { param_traits<P>::count; })
    return static_cast<std::size_t>(param_traits<P>::count);
  else
    return 1;
}

template <class S, std::size_t I>
using member_type = std::remove_cvref_t<std::tuple_element_t<I, member_types<S>>>;

// Whether S is an aggregate of 1 to max_struct_members members, each a type M with
// Kind<M>::valid (element structs of arrays, lang/struct_ndarray_param.hpp and
// runtime/struct_ndarray.hpp).
template <class S, template <class> class Kind>
constexpr bool aggregate_of() {
  if constexpr (!reflectable_struct<S>) {
    return false;
  } else {
    constexpr std::size_t n = member_count<S>();
    if constexpr (n == 0 || n > max_struct_members) {
      return false;
    } else {
      return []<std::size_t... I>(std::index_sequence<I...>) { return (Kind<member_type<S, I>>::valid && ...); }
      (std::make_index_sequence<n>{});
    }
  }
}

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
        return ((valid_param<member_type<P, I>>() && !requires { param_traits<member_type<P, I>>::top_level_only; }) &&
                ...);
      }
      (std::make_index_sequence<n>{});
    }
  } else {
    return false;
  }
}

// The IR parameters P flattens into (struct members, vector components) (1 for a type that is no parameter at all:
// valid_param reports those).
template <class P>
constexpr std::size_t leaf_count() {
  if constexpr (!valid_param<P>()) {
    return 1;
  } else if constexpr (param_traits<P>::valid) {
    return ir_param_count<P>();
  } else {
    return []<std::size_t... I>(std::index_sequence<I...>) {
      return (std::size_t{0} + ... + leaf_count<member_type<P, I>>());
    }
    (std::make_index_sequence<member_count<P>()>{});
  }
}

template <class P>
void append_param_descs(std::vector<ir::param_desc>& out) {
  if constexpr (requires { param_traits<P>::descs; }) {
    out.insert(out.end(), param_traits<P>::descs.begin(), param_traits<P>::descs.end());
  } else if constexpr (param_traits<P>::valid) {
    out.push_back(param_traits<P>::desc);
  } else {
    [&]<std::size_t... I>(std::index_sequence<I...>) { (append_param_descs<member_type<P, I>>(out), ...); }
    (std::make_index_sequence<member_count<P>()>{});
  }
}

// The symbolic argument of type P whose leaves are parameters next, next + 1, ...
template <class P>
P make_param(std::int32_t& next) {
  if constexpr (param_traits<P>::valid) {
    P p = param_traits<P>::make(next);
    next += static_cast<std::int32_t>(ir_param_count<P>());
    return p;
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return P{make_param<member_type<P, I>>(next)...};  // braced: left to right
    }
    (std::make_index_sequence<member_count<P>()>{});
  }
}

// The names of P's leaves: `base` for a leaf, "base.member" (or "base.<position>") for
// the members of a struct.
template <class P>
void append_param_names(const std::string& base, std::vector<std::string>& out) {
  if constexpr (requires { param_traits<P>::descs; }) {
    // A vector or matrix: one name per component ("g[1]", "m(0, 2)").
    for (int c = 0; c < param_traits<P>::count; ++c) out.push_back(param_traits<P>::component_name(base, c));
  } else if constexpr (param_traits<P>::valid) {
    out.push_back(base);
  } else {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      auto member = [&](std::size_t k, std::string_view name) {
        std::string s = base;  // appended piece by piece: GCC 12 warns wrongly on a chain of +
        s += '.';
        if (name.empty())
          s += std::to_string(k);
        else
          s.append(name);
        return s;
      };
      (append_param_names<member_type<P, I>>(member(I, member_name<I, P>()), out), ...);
    }
    (std::make_index_sequence<member_count<P>()>{});
  }
}

}  // namespace qd::inline v0::detail
