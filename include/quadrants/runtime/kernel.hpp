// qd::kernel: a named kernel built from a lambda. Its parameter list is
// reflected at compile time; calls are type-checked, then launched.
#pragma once

#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "quadrants/lang/graph.hpp"
#include "quadrants/lang/kernel_signature.hpp"
#include "quadrants/lang/vec_param.hpp"
#include "quadrants/runtime/pipeline/dispatch.hpp"
#include "quadrants/runtime/diagnostics/explain.hpp"
#include "quadrants/runtime/gradient.hpp"
#include "quadrants/runtime/mesh.hpp"
#include "quadrants/runtime/graph/graph.hpp"
#include "quadrants/runtime/ndarray.hpp"
#include "quadrants/runtime/struct_ndarray.hpp"
#include "quadrants/runtime/pipeline/template_variants.hpp"
#include "quadrants/runtime/vec_ndarray.hpp"

namespace qd::inline v0 {
namespace detail {

template <class A>
struct is_qd_ndarray : std::false_type {};
template <class T, int N>
struct is_qd_ndarray<ndarray<T, N>> : std::true_type {};
template <class A>
struct is_external_array : std::false_type {};
template <class T, int N>
struct is_external_array<external_array<T, N>> : std::true_type {};

// Whether every value of the C++ arithmetic type A is exactly a value of T: the
// rule for scalar arguments (docs/dsl.md). Same type; integers (and bool) into an
// integer type whose range holds theirs; integers into a floating type whose
// mantissa holds their bits; float into double. Nothing converts into bool.
template <class A, class T>
constexpr bool preserves_value() {
  using from = std::numeric_limits<A>;
  using to = std::numeric_limits<T>;
  if constexpr (std::is_same_v<A, T>) {
    return true;
  } else if constexpr (std::is_same_v<T, bool>) {
    return false;
  } else if constexpr (std::is_floating_point_v<A>) {
    return std::is_floating_point_v<T> && from::digits <= to::digits && from::max_exponent <= to::max_exponent;
  } else if constexpr (std::is_floating_point_v<T>) {
    return from::digits <= to::digits;
  } else {
    bool min_fits = !from::is_signed ||
                    (to::is_signed && static_cast<std::intmax_t>(from::min()) >= static_cast<std::intmax_t>(to::min()));
    return min_fits && static_cast<std::uintmax_t>(from::max()) <= static_cast<std::uintmax_t>(to::max());
  }
}

// Whether a host array's elements H are a kernel array's E: the same type, or two
// spellings of one element type (qd::half and _Float16).
template <class H, class E>
constexpr bool same_element() {
  if constexpr (element_type<H> && element_type<E>)
    return dtype_of<H> == dtype_of<E>;
  else
    return std::is_same_v<H, E>;
}

// Packs argument `a` for kernel parameter type P, rejecting mismatches at compile time.
template <class P, class A>
launch_arg pack_argument(const A& a) {
  launch_arg out;
  if constexpr (is_mesh_param<P>) {  // bound after packing (bind_meshes, runtime/mesh.hpp)
    static_assert(std::is_same_v<A, qd::mesh>,
                  "kernel argument mismatch: this parameter is a qd::types::mesh; pass a "
                  "qd::mesh");
  } else if constexpr (param_traits<P>::is_array) {
    using elem = typename P::value_type;
    static_assert(is_qd_ndarray<A>::value || is_external_array<A>::value,
                  "kernel argument mismatch: this parameter is a qd::types::ndarray; pass a qd::ndarray");
    if constexpr (is_external_array<A>::value) {
      static_assert(same_element<typename A::value_type, elem>(),
                    "kernel argument mismatch: the qd::external_array's element type differs from the parameter's");
      static_assert(A::ndim == P::ndim,
                    "kernel argument mismatch: the qd::external_array's number of dimensions differs from the "
                    "parameter's");
      out.data = a.data();
      out.grad = a.grad_data();
      out.program_id = external_program_id;
      out.extent_known = false;
      copy_launch_shape(out.shape, a);
    } else if constexpr (is_qd_ndarray<A>::value) {
      static_assert(same_element<typename A::value_type, elem>(),
                    "kernel argument mismatch: the qd::ndarray's element type differs from the parameter's");
      static_assert(A::ndim == P::ndim,
                    "kernel argument mismatch: the qd::ndarray's number of dimensions differs from the parameter's");
      out.data = a.storage().data();
      out.program_id = a.storage().program_id();
      out.bytes = a.storage().bytes();
      if (a.has_grad()) out.grad = a.grad().storage().data();
      if (a.has_dual()) out.dual = a.dual().storage().data();
      copy_launch_shape(out.shape, a);
    }
  } else if constexpr (std::is_same_v<typename P::value_type, half>) {
    if constexpr (element_type<A>) {
      static_assert(dtype_of<A> == dtype::f16,
                    "kernel argument mismatch: a qd::f16 parameter takes a qd::half (or "
                    "_Float16); convert a float with qd::half(x), which rounds");
      const half v(static_cast<float>(a));
      std::memcpy(&out.scalar_bits, &v.bits, sizeof v.bits);
    } else {
      static_assert(element_type<A>,
                    "kernel argument mismatch: a qd::f16 parameter takes a qd::half (or _Float16); "
                    "convert a float with qd::half(x), which rounds");
    }
  } else {
    using T = typename P::value_type;
    static_assert(std::is_arithmetic_v<A>,
                  "kernel argument mismatch: this parameter is a scalar (qd::f32, qd::i32, ...); pass a C++ number");
    if constexpr (std::is_arithmetic_v<A>) {
      static_assert(preserves_value<A, T>(),
                    "kernel argument mismatch: this C++ number would change on conversion to the scalar parameter's "
                    "type (3.7 to a qd::i32, a double to a qd::f32, an int to a qd::u32 or qd::f32); pass the "
                    "parameter's own type (2.0f for qd::f32, 3u for qd::u32) or convert explicitly with "
                    "static_cast<T>(value)");
      T v = static_cast<T>(a);
      std::memcpy(&out.scalar_bits, &v, sizeof(T));
    }
  }
  return out;
}

// An array of structs: one launch_arg per member, each a view of the member's values
// (struct_ndarray.hpp): its start, the array's extents, then its stride in scalars.
template <class P, class A>
void pack_struct_array(const A& a, launch_arg*& out) {
  using S = typename P::value_type;
  static_assert(is_qd_ndarray<A>::value && host_struct_element<typename A::value_type>,
                "kernel argument mismatch: this parameter is an array of structs (qd::types::ndarray<S, N>); pass a "
                "qd::ndarray of the host struct");
  if constexpr (is_qd_ndarray<A>::value && host_struct_element<typename A::value_type>) {
    static_assert(host_matches_kernel_struct<typename A::value_type, S>(),
                  "kernel argument mismatch: the host struct of the qd::ndarray does not match the kernel's element "
                  "struct member by member; a qd::f32 member is a float on the host, a qd::vec<T, K> a "
                  "std::array<T, K>, a qd::mat<T, R, C> a std::array<std::array<T, C>, R>, in the same order");
    static_assert(A::ndim == P::ndim,
                  "kernel argument mismatch: the qd::ndarray's number of dimensions differs from the parameter's");
    auto* base = static_cast<unsigned char*>(a.storage().data());
    for (int m = 0; m < A::members; ++m) {
      const member_layout& ml = a.member(m);
      launch_arg& o = *out++;
      o.data = base + ml.offset;
      o.program_id = a.storage().program_id();
      o.bytes = a.storage().bytes() - ml.offset;
      for (int d = 0; d < A::ndim; ++d) o.shape[d] = a.shape(d);
      o.shape[A::ndim] = ml.stride;
      if (a.memory_layout() == layout::aos) {
        o.lane_offset = static_cast<std::uint32_t>(ml.offset);
        o.lane_bytes = static_cast<std::uint32_t>(ml.bytes);
      } else if (m + 1 < A::members) {
        o.bytes = a.member(m + 1).offset - ml.offset;  // a member's values end where the next one's start
      }
    }
  }
}

// Packs argument `a` for parameter type P, a struct parameter member by member (the
// host struct matches the kernel struct in order, checked here at compile time), a
// vector or matrix parameter component by component from its host value (std::array,
// nested for matrices), each checked as a scalar argument.
template <class P, class A>
void pack_param(const A& a, launch_arg*& out) {
  if constexpr (is_template_arg<P>) {
    (void)a;  // no IR parameter: its value chose the variant (kernel_states)
    (void)out;
  } else if constexpr (requires { param_traits<P>::struct_array; }) {
    pack_struct_array<P>(a, out);
  } else if constexpr (requires { param_traits<P>::descs; }) {
    static_assert(param_traits<P>::template accepts_host<A>,
                  "kernel argument mismatch: a qd::vec<T, N> parameter takes a std::array<T, N>, a qd::mat<T, R, C> "
                  "parameter a std::array<std::array<T, C>, R>");
    using S = expr<typename param_traits<P>::scalar>;
    if constexpr (param_traits<P>::template accepts_host<A>)
      param_traits<P>::for_each_component(a, [&](const auto& x) { *out++ = pack_argument<S>(x); });
  } else if constexpr (param_traits<P>::valid) {
    *out++ = pack_argument<P>(a);
  } else if constexpr (requires { a.kernel_argument(); }) {
    // A host object standing for a struct parameter (qd::hash_grid): the aggregate it presents.
    pack_param<P>(a.kernel_argument(), out);
  } else {
    static_assert(reflectable_struct<A>,
                  "kernel argument mismatch: this parameter is a struct; pass a host struct (an aggregate) whose "
                  "members match the kernel struct's in order (qd::ndarray for qd::types::ndarray, C++ numbers for "
                  "scalars, host structs for nested structs)");
    if constexpr (reflectable_struct<A> && has_lvalue_reference_members<A, member_count<P>()>()) {
      static_assert(dependent_false<A>,
                    "kernel argument mismatch: a member of the host struct is a non-const reference (such as "
                    "qd::ndarray<float, 1>&); the members of a host struct must be values or const references "
                    "(const qd::ndarray<float, 1>&)");
    } else if constexpr (reflectable_struct<A>) {
      static_assert(member_count<A>() == member_count<P>(),
                    "kernel argument mismatch: the host struct has another number of members than the kernel struct; "
                    "they must match member by member, in order (members must be values or const references: a "
                    "non-const reference such as qd::ndarray<float, 1>& is not seen)");
      if constexpr (member_count<A>() == member_count<P>()) {
        const auto host = tie_members(a);
        [&]<std::size_t... I>(std::index_sequence<I...>) {
          (pack_param<member_type<P, I>>(std::get<I>(host), out), ...);
        }
        (std::make_index_sequence<member_count<P>()>{});
      }
    }
  }
}

// The hidden result arrays of a kernel returning R (lang/kernel_return.hpp): one 0-d
// array per element. Each thread keeps one set per result type and reuses it while
// the program that allocated it runs, so a call allocates nothing after its first
// (a kernel call is synchronous: nothing else on the thread uses the set meanwhile).
template <class R>
class return_arrays {
  using elements = typename return_traits<R>::elements;
  template <class E>
  using array_of = ndarray<return_storage_t<E>, 0>;
  template <class Tuple>
  struct arrays_for;
  template <class... E>
  struct arrays_for<std::tuple<E...>> {
    using type = std::tuple<array_of<E>...>;
  };
  using arrays = typename arrays_for<elements>::type;

 public:
  static constexpr std::size_t count = std::tuple_size_v<elements>;
  return_arrays() : arrays_(this_thread_arrays()) {}

  void pack(launch_arg* out) const {
    std::apply(
        [&](const auto&... a) {
          ((*out++ = pack_argument<types::ndarray<typename std::remove_cvref_t<decltype(a)>::value_type, 0>>(a)), ...);
        },
        arrays_);
  }
  // Reads every element back (waits for the launch) and assembles the host value.
  typename return_traits<R>::host_type read() const {
    elements values = [&]<std::size_t... I>(std::index_sequence<I...>) { return elements{read_element<I>()...}; }
    (std::make_index_sequence<count>{});
    return return_traits<R>::assemble(values);
  }

 private:
  template <std::size_t I>
  std::tuple_element_t<I, elements> read_element() const {
    const auto& a = std::get<I>(arrays_);
    typename std::remove_cvref_t<decltype(a)>::value_type v{};
    a.storage().download(&v, sizeof v);
    return static_cast<std::tuple_element_t<I, elements>>(v);
  }
  static const arrays& this_thread_arrays() {
    thread_local std::unique_ptr<arrays> kept;
    if (!kept || !std::get<0>(*kept).storage().alive()) {
      kept.reset();  // frees the last program's arrays first
      kept = std::make_unique<arrays>();
    }
    return *kept;
  }
  const arrays& arrays_;
};

// One name per kernel parameter: the given names (one per lambda parameter), struct
// members as "<name>.<member>" ("#<position>.<member>" when the kernel names none),
// then the hidden result parameters'.
template <class F>
std::vector<std::string> kernel_param_names(std::vector<std::string> names) {
  constexpr auto params = parameter_types<F>();
  constexpr std::size_t count = decltype(boost::hana::length(params))::value;
  // A struct parameter (even of one member: as many leaves as parameters), or a vector.
  constexpr bool has_struct = boost::hana::unpack(params, [](auto... p) {
    return ((valid_param<typename decltype(p)::type>() && !param_traits<typename decltype(p)::type>::valid) || ...);
  });
  if constexpr (has_struct || flat_parameter_count<F>() != count) {
    if (names.empty() || names.size() == count) {
      std::vector<std::string> flat;
      boost::hana::unpack(params, [&](auto... p) {
        std::size_t k = 0;
        auto base = [&] {
          if (!names.empty()) return names[k];
          std::string s(1, '#');
          s += std::to_string(k);
          return s;
        };
        // An unnamed leaf stays unnamed ("#3" in messages); an array of structs' members
        // are named after its position ("#0.x").
        auto unnamed_leaf = [&](auto type) {
          using P = typename decltype(type)::type;
          return param_traits<P>::valid && !requires { param_traits<P>::struct_array; }
          &&names.empty();
        };
        ((append_param_names<typename decltype(p)::type>(unnamed_leaf(p) ? std::string() : base(), flat), ++k), ...);
      });
      names = std::move(flat);
    }
  }
  if constexpr (return_traits<kernel_result_t<F>>::valid)
    append_return_names(names, return_element_count<kernel_result_t<F>>);
  return names;
}

// Packs a launch's arguments for the parameters of F, checked at compile time: one
// launch_arg per kernel parameter (struct parameters flattened), then as many empty
// slots as the kernel returns elements (return_arrays::pack fills them).
template <class F, class... Args>
auto pack_arguments(const Args&... args) {
  constexpr auto params = parameter_types<F>();
  static_assert(sizeof...(Args) == decltype(boost::hana::length(params))::value,
                "wrong number of kernel arguments: pass one per kernel parameter");
  std::array<launch_arg, flat_parameter_count<F>() + return_element_count<kernel_result_t<F>>> packed{};
  launch_arg* next = packed.data();
  boost::hana::unpack(params, [&](auto... p) { (pack_param<typename decltype(p)::type>(args, next), ...); });
  return packed;
}

}  // namespace detail

namespace detail {

// The value of template argument P (qd::types::template_arg<T>) from a call's argument:
// a T, or a C++ number every value of which is a T value (as for scalar arguments).
template <class P, class A>
auto template_value_at(const A& a) {
  if constexpr (is_template_arg<P>) {
    using T = typename P::value_type;
    if constexpr (std::is_same_v<A, P>) {
      return std::tuple<T>(a.value());
    } else if constexpr (std::is_enum_v<T> || std::is_enum_v<A>) {
      static_assert(std::is_same_v<A, T>,
                    "kernel argument mismatch: this parameter is a qd::types::template_arg of "
                    "an enum; pass a value of that enum");
      return std::tuple<T>(a);
    } else {
      static_assert(std::is_arithmetic_v<A>,
                    "kernel argument mismatch: this parameter is a qd::types::template_arg; "
                    "pass a C++ value of its type");
      if constexpr (std::is_arithmetic_v<A>) {
        static_assert(
            preserves_value<A, T>(),
            "kernel argument mismatch: this C++ number would change on conversion to the template "
            "argument's type; pass the parameter's own type or convert explicitly with static_cast<T>(value)");
        return std::tuple<T>(static_cast<T>(a));
      } else {
        return std::tuple<T>();
      }
    }
  } else {
    return std::tuple<>();
  }
}

// The template arguments' values of a call, in order.
template <class F, class... Args>
template_values_t<F> template_values_from(const Args&... args) {
  using params = lambda_params<F>;
  static_assert(sizeof...(Args) == std::tuple_size_v<params>,
                "wrong number of kernel arguments: pass one per kernel parameter");
  auto all = std::forward_as_tuple(args...);
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::tuple_cat(template_value_at<std::tuple_element_t<I, params>>(std::get<I>(all))...);
  }
  (std::make_index_sequence<sizeof...(Args)>{});
}

// How a kernel's name shows a template value: 4, 0.5, true.
template <class T>
std::string template_value_text(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_enum_v<T>) {
    return std::to_string(static_cast<std::int64_t>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
  } else {
    return std::to_string(+v);
  }
}

// The variants of a kernel with template arguments: one kernel_state per distinct tuple of
// their values, each traced, split and cached on its own and named "k<n_sub=4>" in messages.
template <class F>
class kernel_variants {
 public:
  using values = template_values_t<F>;

  kernel_variants(std::string name, std::vector<std::string> names, F body)
      : name_(std::move(name)),
        template_names_(template_param_names(names)),
        flat_names_(kernel_param_names<F>(std::move(names))),
        descs_(kernel_param_descs<F>()),
        body_(std::make_shared<const F>(std::move(body))) {}

  void set_graph() { graph_ = true; }

  template <class... Args>
  kernel_state& for_call(const Args&... args) {
    return variant(template_values_from<F>(args...));
  }

  kernel_state& variant(const values& v) {
    return table_.get(v, [&] {
      auto k = make_kernel_state(variant_name(v), flat_names_, descs_,
                                 [body = body_, v](tracer& t) { trace_kernel(*body, t, v); });
      if (graph_) set_graph_kernel(*k);
      return k;
    });
  }

  // For ir(), explain(), observations: the variant launched or compiled last.
  kernel_state& latest() const {
    if (kernel_state* k = table_.latest()) return *k;
    throw user_error("kernel '" + name_ +
                     "' has template arguments (qd::types::template_arg) and no variant yet: launch it, or compile "
                     "one with kernel.compile(values...)");
  }
  const std::string& name() const { return name_; }

 private:
  // The names given to the template parameters, by position among them.
  static std::vector<std::string> template_param_names(const std::vector<std::string>& names) {
    std::vector<std::string> out;
    using params = lambda_params<F>;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((is_template_arg<std::tuple_element_t<I, params>>
            ? out.push_back(names.size() == std::tuple_size_v<params> ? names[I] : std::string())
            : void()),
       ...);
    }
    (std::make_index_sequence<std::tuple_size_v<params>>{});
    return out;
  }
  std::string variant_name(const values& v) const {
    std::string out = name_ + "<";
    std::size_t k = 0;
    std::apply(
        [&](const auto&... x) {
          ((out += (k ? ", " : "") + (template_names_[k].empty() ? std::string() : template_names_[k] + "=") +
                   template_value_text(x),
            ++k),
           ...);
        },
        v);
    return out + ">";
  }

  std::string name_;
  std::vector<std::string> template_names_, flat_names_;
  std::vector<ir::param_desc> descs_;
  std::shared_ptr<const F> body_;
  bool graph_ = false;
  mutable template_variants<values> table_;
};

template <class F>
inline constexpr bool has_template_args = std::tuple_size_v<template_values_t<F>> > 0;

// What a kernel object shares with its copies, its .grad and its .fwd: for a kernel with
// template arguments its variants; for any other its one kernel_state, which is not a
// template, so that such a kernel adds little code of its own to the user's translation
// unit beyond its trace function and its launches (each kernel<F> used to add about a
// hundred functions: docs/architecture.md, "What a kernel costs to compile").
template <class F>
using kernel_states = std::conditional_t<has_template_args<F>, kernel_variants<F>, kernel_state>;

template <class F>
class kernel_body_of final : public kernel_body {
 public:
  explicit kernel_body_of(F body) : body_(std::move(body)) {}
  void trace(tracer& t) const override { trace_kernel(body_, t); }

 private:
  F body_;
};

template <class F>
std::shared_ptr<kernel_states<F>> make_kernel_states(std::string name, std::vector<std::string> names, F body) {
  if constexpr (has_template_args<F>)
    return std::make_shared<kernel_variants<F>>(std::move(name), std::move(names), std::move(body));
  else
    return make_kernel_state(std::move(name), kernel_param_names<F>(std::move(names)), kernel_param_descs<F>(),
                             std::unique_ptr<const kernel_body>(new kernel_body_of<F>(std::move(body))));
}

// The state a launch with these arguments uses.
template <class F, class... Args>
kernel_state& state_for_call(kernel_states<F>& s, const Args&... args) {
  if constexpr (has_template_args<F>)
    return s.for_call(args...);
  else
    return s;
}

// For ir(), explain(), observations: the state, or the variant launched or compiled last.
template <class F>
kernel_state& latest_state(kernel_states<F>& s) {
  if constexpr (has_template_args<F>)
    return s.latest();
  else
    return s;
}

}  // namespace detail

// What kernel.grad and kernel.fwd share: a kernel derived from the forward one on first
// use (by Of), called with the forward kernel's arguments.
template <class F, detail::kernel_state& (*Of)(detail::kernel_state&)>
class derived_kernel {
 public:
  explicit derived_kernel(std::shared_ptr<detail::kernel_states<F>> forward) : forward_(std::move(forward)) {}

  void compile() const { detail::compile(Of(detail::latest_state<F>(*forward_))); }
  per_offload_observations per_offload_cache_observations() const {
    return detail::observations(Of(detail::latest_state<F>(*forward_)));
  }
  // The derived kernel's IR as text (derived on first use).
  std::string ir() const { return detail::kernel_ir_text(Of(detail::latest_state<F>(*forward_))); }

 protected:
  // Packs the arguments as the forward kernel takes them; launch(forward state, args, count).
  template <class Launch, class... Args>
  void run(Launch launch, const Args&... args) const {
    detail::kernel_state& fwd = detail::state_for_call<F>(*forward_, args...);
    auto packed = detail::pack_arguments<F>(args...);
    if constexpr (detail::has_mesh_parameter<F>()) detail::bind_meshes<F>(fwd, packed.data(), args...);
    using R = detail::kernel_result_t<F>;
    if constexpr (detail::return_element_count<R> == 0) {
      launch(fwd, packed.data(), packed.size());
    } else {  // the forward kernel's result parameters: written, never returned
      detail::return_arrays<R> out;
      out.pack(packed.data() + detail::flat_parameter_count<F>());
      launch(fwd, packed.data(), packed.size());
    }
  }

 private:
  std::shared_ptr<detail::kernel_states<F>> forward_;
};

// kernel.grad: the adjoint of a kernel, called with the forward
// kernel's arguments. It accumulates into the .grad() buffers of the needs_grad
// parameters, seeded from the outputs' .grad() buffers; it always runs whole.
template <class F>
class adjoint_kernel : public derived_kernel<F, detail::adjoint_of> {
 public:
  using derived_kernel<F, detail::adjoint_of>::derived_kernel;

  template <class... Args>
  void operator()(const Args&... args) const {
    this->run([](detail::kernel_state& fwd, const detail::launch_arg* a,
                 std::size_t n) { detail::launch(detail::adjoint_of(fwd), a, n); },
              args...);
  }
};

// kernel.fwd: forward mode. Runs the kernel and, alongside, its tangent: the needs_grad
// arrays' .dual() hold the input tangents, and what the kernel writes into them (stores,
// accumulations) is the Jacobian-vector product. Tapes do not record it.
template <class F>
class tangent_kernel : public derived_kernel<F, detail::tangent_of> {
 public:
  using derived_kernel<F, detail::tangent_of>::derived_kernel;

  template <class... Args>
  void operator()(const Args&... args) const {
    (make_dual(args), ...);
    this->run(
        [](detail::kernel_state& fwd, detail::launch_arg* a, std::size_t n) { detail::launch_tangent(fwd, a, n); },
        args...);
  }

 private:
  template <class A>
  static void make_dual(const A& a) {
    if constexpr (detail::is_qd_ndarray<A>::value)
      if (a.has_grad()) a.dual();  // created (zeroed) on first use
  }
};

namespace detail {
struct kernel_access;  // runtime/custom_grad.hpp
}

template <class F>
class kernel {
  using states = detail::kernel_states<F>;
  static constexpr bool specialised = detail::has_template_args<F>;

 public:
  kernel(std::string name, F body) : kernel(std::move(name), std::vector<std::string>{}, std::move(body)) {}

  // Parameter names make error messages and logs clearer: {"x", "out"}.
  kernel(std::string name, std::vector<std::string> param_names, F body)
      : states_(detail::make_kernel_states(std::move(name), std::move(param_names), std::move(body))) {}

  // A graph kernel: qd::graph::do_while and qd::graph::parallel are allowed in it.
  kernel(std::string name, graph::on_t, F body) : kernel(std::move(name), std::move(body)) { set_graph(); }
  kernel(std::string name, std::vector<std::string> param_names, graph::on_t, F body)
      : kernel(std::move(name), std::move(param_names), std::move(body)) {
    set_graph();
  }

  // Launches the kernel: arrays as qd::ndarray, scalars as C++ numbers, host structs for
  // struct parameters, C++ values for template arguments (each distinct value runs its
  // own variant). A kernel that returns a value waits for it and returns it
  // as a host value.
  template <class... Args>
  auto operator()(const Args&... args) const {
    detail::kernel_state& k = detail::state_for_call<F>(*states_, args...);
    auto packed = detail::pack_arguments<F>(args...);
    if constexpr (detail::has_mesh_parameter<F>()) detail::bind_meshes<F>(k, packed.data(), args...);
    using R = detail::kernel_result_t<F>;
    if constexpr (detail::return_element_count<R> == 0) {
      detail::launch(k, packed.data(), packed.size());
    } else {
      detail::return_arrays<R> out;
      out.pack(packed.data() + detail::flat_parameter_count<F>());
      detail::launch(k, packed.data(), packed.size());
      return out.read();
    }
  }

  // Compiles (or loads from the cache) every variant the configuration would use, without
  // launching. A kernel with template arguments takes their values, in order: k.compile(4).
  template <class... V>
  void compile(const V&... template_values) const {
    if constexpr (specialised) {
      static_assert(sizeof...(V) == std::tuple_size_v<typename states::values>,
                    "kernel.compile(values...) of a kernel with template arguments takes one value per "
                    "qd::types::template_arg parameter, in order");
      if constexpr (sizeof...(V) == std::tuple_size_v<typename states::values>)
        detail::compile(states_->variant(typename states::values(template_values...)));
    } else {
      static_assert(sizeof...(V) == 0, "kernel.compile() takes no arguments: the kernel has no template arguments");
      detail::compile(*states_);
    }
  }

  // The next members describe the kernel, or for a kernel with template arguments the
  // variant launched or compiled last.
  per_offload_observations per_offload_cache_observations() const { return detail::observations(latest()); }
  const std::string& name() const {
    if constexpr (specialised)
      return states_->name();
    else
      return detail::kernel_name(*states_);
  }
  // The kernel's IR as text (traced on first use), with the source line of each statement.
  std::string ir() const { return detail::kernel_ir_text(latest()); }
  // Its constructs with their source lines, what each recomputes, the split decision and
  // why (docs/diagnostics.md); dot(): the same as a Graphviz graph.
  std::string explain() const { return detail::explain_text(latest()); }
  std::string dot() const { return detail::explain_dot(latest()); }

 private:
  detail::kernel_state& latest() const { return detail::latest_state<F>(*states_); }
  void set_graph() {
    if constexpr (specialised)
      states_->set_graph();
    else
      detail::set_graph_kernel(*states_);
  }

  std::shared_ptr<states> states_;
  friend struct detail::kernel_access;

 public:
  // The adjoint kernel: kernel.grad(args...).
  adjoint_kernel<F> grad{states_};
  // The tangent kernel (forward mode): kernel.fwd(args...).
  tangent_kernel<F> fwd{states_};
};

template <class F>
kernel(std::string, F) -> kernel<F>;
template <class F>
kernel(std::string, std::vector<std::string>, F) -> kernel<F>;
template <class F>
kernel(std::string, graph::on_t, F) -> kernel<F>;
template <class F>
kernel(std::string, std::vector<std::string>, graph::on_t, F) -> kernel<F>;

}  // namespace qd::inline v0
