// Arrays of structs as kernel parameters: qd::types::ndarray<particle_k, N> whose element
// is an aggregate of scalars (qd::f32, ...), qd::vec and qd::mat, reflected as struct
// parameters are (lang/reflect.hpp); p[i] is an element whose members are read and
// written by name: p[i].x = p[i].x + p[i].v * dt.
//
// Each member is an IR array parameter of its own, of the member's scalar type and N + 1
// dimensions: component c of member m of p[i] is member m's p(i, c). The last extent
// (a launch value) is the member's stride in scalars and its data pointer starts at the
// member, so one compiled kernel serves both host layouts (runtime/struct_ndarray.hpp):
// AoS (the stride is the struct's size, the pointer offset by the member's) and SoA (each
// member contiguous, the stride its component count).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "quadrants/lang/struct_param.hpp"
#include "quadrants/lang/vec_ndarray_param.hpp"

namespace qd::inline v0 {

namespace detail {

// What a member of an element struct is: a scalar, a vector or a matrix of `scalar`,
// `components` scalars in all.
template <class M>
struct member_kind {
  static constexpr bool valid = false;
};
template <element_type T>
struct member_kind<expr<T>> {
  static constexpr bool valid = !std::is_same_v<T, bool>;
  using scalar = T;
  static constexpr int components = 1;
};
template <element_type T, int K>
struct member_kind<vec<T, K>> {
  static constexpr bool valid = true;
  using scalar = T;
  static constexpr int components = K;
};
template <element_type T, int R, int C>
struct member_kind<mat<T, R, C>> {
  static constexpr bool valid = true;
  using scalar = T;
  static constexpr int components = R * C;
};

// An aggregate of 1 to 16 members, each a scalar, a qd::vec or a qd::mat.
template <class S>
constexpr bool struct_element_type() {
  if constexpr (member_kind<S>::valid)
    return false;
  else
    return aggregate_of<S, member_kind>();
}
template <class S>
concept struct_element = struct_element_type<S>();

// Where component c of a member (IR parameter `param`) of the element at `element` is.
inline place member_place(std::int32_t param, const place& element, int c) {
  place p = with_trailing(element, {c});
  p.param = param;
  return p;
}

// Member M (IR parameter `param`) of the element at `element`, loaded.
template <class M>
M load_member(std::int32_t param, const place& element) {
  using K = member_kind<M>;
  using T = typename K::scalar;
  auto component = [&](int c) { return expr<T>::from_id(emit_global_load(member_place(param, element, c))); };
  if constexpr (std::is_same_v<M, expr<T>>)
    return component(0);
  else if constexpr (std::is_same_v<M, vec<T, K::components>>)
    return generate_vec<K::components>(component);
  else
    return generate_mat<M::rows, M::cols>([&](int i, int j) { return component(i * M::cols + j); });
}

// Makes member m stand for its array element: assigning to it then stores (expr::operator=).
template <class M>
void bind_member(const M& m, std::int32_t param, const place& element) {
  using K = member_kind<M>;
  using T = typename K::scalar;
  if constexpr (std::is_same_v<M, expr<T>>) {
    expr_binding::bind(m, bind_place(member_place(param, element, 0)));
  } else if constexpr (std::is_same_v<M, vec<T, K::components>>) {
    for (int k = 0; k < K::components; ++k) expr_binding::bind(m[k], bind_place(member_place(param, element, k)));
  } else {
    for (int i = 0; i < M::rows; ++i)
      for (int j = 0; j < M::cols; ++j)
        expr_binding::bind(m(i, j), bind_place(member_place(param, element, i * M::cols + j)));
  }
}

}  // namespace detail

// Element p[i] of an array of structs: an S whose members stand for the element's.
// Reading a member reads the value loaded where p[i] is written (a snapshot, as for
// x[i]); assigning to a member (p[i].m = v, p[i].x = qd::vec3f(...)) stores it at once;
// assigning a whole S stores every member. `auto e = p[i];` keeps the reference, while
// `particle_k e = p[i];` copies the values. Compound assignment does not compile on
// members (they are values); qd::ref(p[i].m) += v is the atomic update of x[i] += v.
template <class S>
class struct_ref : public S {
 public:
  // `loaded`: the members' values; member m is IR parameter first_param + m.
  struct_ref(S&& loaded, std::int32_t first_param, const detail::place& element) : S(std::move(loaded)) {
    const auto members = detail::tie_members(static_cast<S&>(*this));
    [&]<std::size_t... M>(std::index_sequence<M...>) {
      (detail::bind_member(std::get<M>(members), first_param + static_cast<std::int32_t>(M), element), ...);
    }
    (std::make_index_sequence<std::tuple_size_v<decltype(members)>>{});
  }
  using S::operator=;
};

namespace types {

template <class S, int N, auto... Options>
requires detail::struct_element<S>
class ndarray<S, N, Options...> {
  static_assert(N >= 0 && N <= 3, "an array of structs has at most 3 dimensions (each member takes one more)");
  static_assert(sizeof...(Options) == 0, "qd::needs_grad is not supported for arrays of structs");

 public:
  using value_type = S;
  static constexpr int ndim = N;
  static constexpr int members = static_cast<int>(detail::member_count<S>());

  ndarray(detail::param_tag, std::int32_t first_param) : param_(first_param) {}

  struct_ref<S> operator[](detail::located_index i) const requires(N == 1) { return element(make_place(i.id)); }
  struct_ref<S> operator[](const detail::located_indices<N>& v) const requires(N >= 2) {
    return element(detail::place{param_, 0, static_cast<std::uint8_t>(N), v.ids});
  }
  template <class... I>
  requires(sizeof...(I) + 1 == N && (operand<I> && ...)) struct_ref<S>
  operator()(detail::located_index first, const I&... i) const {
    return element(make_place(first.id, detail::index_id(i)...));
  }
  struct_ref<S> operator()() const requires(N == 0) { return element(make_place()); }

  // The extent of dimension d (d < N), as a traced i32.
  expr<std::int32_t> shape(int d) const {
    detail::component(d, N, "shape() of an array of structs: dimension");
    return expr<std::int32_t>::from_id(detail::emit_shape(param_, d));
  }

  // The IR parameter of the first member (each member is one, in order).
  std::int32_t param_index() const { return param_; }

 private:
  template <class... Ids>
  detail::place make_place(Ids... ids) const {
    return detail::place{param_, 0, static_cast<std::uint8_t>(N), std::array<ir::id, 4>{ids...}};
  }
  struct_ref<S> element(const detail::place& at) const {
    return struct_ref<S>(
        [&]<std::size_t... M>(std::index_sequence<M...>) {
          return S{detail::load_member<detail::member_type<S, M>>(param_ + static_cast<std::int32_t>(M), at)...};
        }(std::make_index_sequence<static_cast<std::size_t>(members)>{}),
        param_, at);
  }
  std::int32_t param_;
};

}  // namespace types

namespace detail {
template <class S, int N, auto... Options>
requires struct_element<S>
struct param_traits<types::ndarray<S, N, Options...>> {
  using P = types::ndarray<S, N, Options...>;
  static constexpr bool valid = true;
  static constexpr bool is_array = true;
  static constexpr bool struct_array = true;
  static constexpr int count = P::members;
  static constexpr std::array<ir::param_desc, static_cast<std::size_t>(count)> descs =
      []<std::size_t... M>(std::index_sequence<M...>) {
    return std::array<ir::param_desc, sizeof...(M)>{
        ir::param_desc{true, dtype_of<typename member_kind<member_type<S, M>>::scalar>, N + 1, false}...};
  }
  (std::make_index_sequence<static_cast<std::size_t>(count)>{});
  // "p.x" (by position, "p.0", where the compiler cannot spell member names).
  static std::string component_name(const std::string& base, int m) {
    return [&]<std::size_t... M>(std::index_sequence<M...>) {
      std::string out = base;
      out += '.';
      std::string_view name;
      ((static_cast<int>(M) == m ? (void)(name = member_name<M, S>()) : void()), ...);
      if (name.empty())
        out += std::to_string(m);
      else
        out.append(name);
      return out;
    }
    (std::make_index_sequence<static_cast<std::size_t>(count)>{});
  }
  static P make(std::int32_t index) { return {param_tag{}, index}; }
};
}  // namespace detail

// The array element a member of p[i] stands for, as a reference: qd::ref(p[i].m) is the
// element_ref of x[i] (+= atomic in a parallel loop, usable with qd::atomic_add...),
// qd::ref(p[i].v) the vec_ref of a vector member.
template <element_type T>
element_ref<T> ref(const expr<T>& member) {
  const std::int32_t b = detail::expr_binding::bound(member);
  if (b < 0)
    detail::throw_trace_error(
        "qd::ref takes a member of an array element (qd::ref(p[i].m) for an array of structs "
        "p); this value is not one");
  return element_ref<T>(detail::bound_place(b));
}
template <element_type T, int K>
vec_ref<T, K> ref(const vec<T, K>& member) {
  const std::int32_t b = detail::expr_binding::bound(member[0]);
  if (b < 0)
    detail::throw_trace_error(
        "qd::ref takes a member of an array element (qd::ref(p[i].v) for an array of structs "
        "p); this vector is not one");
  detail::place element = detail::bound_place(b);
  --element.rank;  // vec_ref appends the component index
  return vec_ref<T, K>(element);
}

}  // namespace qd::inline v0
