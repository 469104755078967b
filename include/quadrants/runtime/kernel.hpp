// qd::kernel: a named kernel built from a lambda. Its parameter list is
// reflected at compile time; calls are type-checked, then launched.
#pragma once

#include <array>
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
#include "quadrants/runtime/dispatch.hpp"
#include "quadrants/runtime/explain.hpp"
#include "quadrants/runtime/gradient.hpp"
#include "quadrants/runtime/mesh.hpp"
#include "quadrants/runtime/graph.hpp"
#include "quadrants/runtime/ndarray.hpp"
#include "quadrants/runtime/vec_ndarray.hpp"

namespace qd {
namespace detail {

template <class A> struct is_qd_ndarray : std::false_type {};
template <class T, int N> struct is_qd_ndarray<ndarray<T, N>> : std::true_type {};
template <class A> struct is_external_array : std::false_type {};
template <class T, int N> struct is_external_array<external_array<T, N>> : std::true_type {};

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
    bool min_fits = !from::is_signed || (to::is_signed && static_cast<std::intmax_t>(from::min()) >=
                                                              static_cast<std::intmax_t>(to::min()));
    return min_fits && static_cast<std::uintmax_t>(from::max()) <= static_cast<std::uintmax_t>(to::max());
  }
}

// Packs argument `a` for kernel parameter type P, rejecting mismatches at compile time.
template <class P, class A>
launch_arg pack_argument(const A& a) {
  launch_arg out;
  if constexpr (is_mesh_param<P>) {  // bound after packing (bind_meshes, runtime/mesh.hpp)
    static_assert(std::is_same_v<A, qd::mesh>, "kernel argument mismatch: this parameter is a qd::types::mesh; pass a "
                                               "qd::mesh");
  } else if constexpr (param_traits<P>::is_array) {
    using elem = typename P::value_type;
    static_assert(is_qd_ndarray<A>::value || is_external_array<A>::value,
                  "kernel argument mismatch: this parameter is a qd::types::ndarray; pass a qd::ndarray");
    if constexpr (is_external_array<A>::value) {
      static_assert(std::is_same_v<typename A::value_type, elem>,
                    "kernel argument mismatch: the qd::external_array's element type differs from the parameter's");
      static_assert(A::ndim == P::ndim,
                    "kernel argument mismatch: the qd::external_array's number of dimensions differs from the "
                    "parameter's");
      out.data = a.data();
      out.grad = a.grad_data();
      out.program_id = external_program_id;
      out.extent_known = false;
      for (int d = 0; d < A::ndim; ++d) out.shape[d] = a.shape(d);
    } else if constexpr (is_qd_ndarray<A>::value) {
      static_assert(std::is_same_v<typename A::value_type, elem>,
                    "kernel argument mismatch: the qd::ndarray's element type differs from the parameter's");
      static_assert(A::ndim == P::ndim,
                    "kernel argument mismatch: the qd::ndarray's number of dimensions differs from the parameter's");
      out.data = a.storage().data();
      out.program_id = a.storage().program_id();
      out.bytes = a.storage().bytes();
      if (a.has_grad()) out.grad = a.grad().storage().data();
      copy_launch_shape(out.shape, a);
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

// Packs argument `a` for parameter type P, a struct parameter member by member (the
// host struct matches the kernel struct in order, checked here at compile time), a
// vector or matrix parameter component by component from its host value (std::array,
// nested for matrices), each checked as a scalar argument.
template <class P, class A>
void pack_param(const A& a, launch_arg*& out) {
  if constexpr (requires { param_traits<P>::descs; }) {
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
    if constexpr (reflectable_struct<A>) {
      static_assert(member_count<A>() == member_count<P>(),
                    "kernel argument mismatch: the host struct has another number of members than the kernel struct; "
                    "they must match member by member, in order");
      if constexpr (member_count<A>() == member_count<P>()) {
        const auto host = tie_members(a);
        [&]<std::size_t... I>(std::index_sequence<I...>) {
          (pack_param<member_type<P, I>>(std::get<I>(host), out), ...);
        }(std::make_index_sequence<member_count<P>()>{});
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
  template <class Tuple> struct arrays_for;
  template <class... E> struct arrays_for<std::tuple<E...>> {
    using type = std::tuple<array_of<E>...>;
  };
  using arrays = typename arrays_for<elements>::type;

 public:
  static constexpr std::size_t count = std::tuple_size_v<elements>;
  return_arrays() : arrays_(this_thread_arrays()) {}

  void pack(launch_arg* out) const {
    std::apply([&](const auto&... a) { ((*out++ = pack_argument<types::ndarray<typename std::remove_cvref_t<decltype(a)>::value_type, 0>>(a)), ...); },
               arrays_);
  }
  // Reads every element back (waits for the launch) and assembles the host value.
  typename return_traits<R>::host_type read() const {
    elements values = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return elements{read_element<I>()...};
    }(std::make_index_sequence<count>{});
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
  if constexpr (flat_parameter_count<F>() != count) {  // a struct parameter
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
        ((append_param_names<typename decltype(p)::type>(param_traits<typename decltype(p)::type>::valid && names.empty() ? std::string() : base(), flat), ++k), ...);
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

// kernel.grad: the adjoint of a kernel (SPEC §11.5), called with the forward
// kernel's arguments. It accumulates into the .grad() buffers of the needs_grad
// parameters, seeded from the outputs' .grad() buffers; it always runs whole.
template <class F>
class adjoint_kernel {
 public:
  explicit adjoint_kernel(std::shared_ptr<detail::kernel_state> forward) : forward_(std::move(forward)) {}

  template <class... Args>
  void operator()(const Args&... args) const {
    auto packed = detail::pack_arguments<F>(args...);
    if constexpr (detail::has_mesh_parameter<F>()) detail::bind_meshes<F>(*forward_, packed.data(), args...);
    using R = detail::kernel_result_t<F>;
    if constexpr (detail::return_element_count<R> == 0) {
      detail::launch(detail::adjoint_of(*forward_), packed.data(), packed.size());
    } else {  // the forward kernel's result parameters: written, never returned
      detail::return_arrays<R> out;
      out.pack(packed.data() + detail::flat_parameter_count<F>());
      detail::launch(detail::adjoint_of(*forward_), packed.data(), packed.size());
    }
  }
  void compile() const { detail::compile(detail::adjoint_of(*forward_)); }
  per_offload_observations per_offload_cache_observations() const {
    return detail::observations(detail::adjoint_of(*forward_));
  }
  // The adjoint's IR as text (derived on first use).
  std::string ir() const { return detail::kernel_ir_text(detail::adjoint_of(*forward_)); }

 private:
  std::shared_ptr<detail::kernel_state> forward_;
};

template <class F>
class kernel {
 public:
  kernel(std::string name, F body) : kernel(std::move(name), std::vector<std::string>{}, std::move(body)) {}

  // Parameter names make error messages and logs clearer: {"x", "out"}.
  kernel(std::string name, std::vector<std::string> param_names, F body)
      : state_(detail::make_kernel_state(std::move(name), detail::kernel_param_names<F>(std::move(param_names)),
                                         detail::kernel_param_descs<F>(),
                                         [body = std::move(body)](detail::tracer& t) { detail::trace_kernel(body, t); })) {}

  // A graph kernel (SPEC §11.6): qd::graph::do_while and qd::graph::parallel are allowed in it.
  kernel(std::string name, graph::on_t, F body) : kernel(std::move(name), std::move(body)) {
    detail::set_graph_kernel(*state_);
  }
  kernel(std::string name, std::vector<std::string> param_names, graph::on_t, F body)
      : kernel(std::move(name), std::move(param_names), std::move(body)) {
    detail::set_graph_kernel(*state_);
  }

  // Launches the kernel: arrays as qd::ndarray, scalars as C++ numbers, host structs for
  // struct parameters. A kernel that returns a value (SPEC §11.3) waits for it and
  // returns it as a host value.
  template <class... Args>
  auto operator()(const Args&... args) const {
    auto packed = detail::pack_arguments<F>(args...);
    if constexpr (detail::has_mesh_parameter<F>()) detail::bind_meshes<F>(*state_, packed.data(), args...);
    using R = detail::kernel_result_t<F>;
    if constexpr (detail::return_element_count<R> == 0) {
      detail::launch(*state_, packed.data(), packed.size());
    } else {
      detail::return_arrays<R> out;
      out.pack(packed.data() + detail::flat_parameter_count<F>());
      detail::launch(*state_, packed.data(), packed.size());
      return out.read();
    }
  }

  // Compiles (or loads from the cache) every variant the configuration would use, without launching.
  void compile() const { detail::compile(*state_); }

  per_offload_observations per_offload_cache_observations() const { return detail::observations(*state_); }
  const std::string& name() const { return detail::kernel_name(*state_); }
  // The kernel's IR as text (traced on first use), with the source line of each statement.
  std::string ir() const { return detail::kernel_ir_text(*state_); }
  // Its constructs with their source lines, what each recomputes, the split decision and
  // why (docs/diagnostics.md); dot(): the same as a Graphviz graph.
  std::string explain() const { return detail::explain_text(*state_); }
  std::string dot() const { return detail::explain_dot(*state_); }

 private:
  std::shared_ptr<detail::kernel_state> state_;

 public:
  // The adjoint kernel: kernel.grad(args...) (SPEC §11.5).
  adjoint_kernel<F> grad{state_};
};

template <class F>
kernel(std::string, F) -> kernel<F>;
template <class F>
kernel(std::string, std::vector<std::string>, F) -> kernel<F>;
template <class F>
kernel(std::string, graph::on_t, F) -> kernel<F>;
template <class F>
kernel(std::string, std::vector<std::string>, graph::on_t, F) -> kernel<F>;

}  // namespace qd
