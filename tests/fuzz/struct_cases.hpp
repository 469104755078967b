// The fixed struct parameter types (SPEC §11.2) a generated kernel may take its
// arguments in: fuzz_case::struct_kind names one. The generator gives such a kernel
// exactly the struct's flattened parameters; differential.hpp then runs it through a
// typed qd::kernel whose lambda takes the struct (the body is the generated IR) and
// calls it with the matching host struct, so the reflection, the flattening of
// members, nested structs, vector and matrix members and their host packing run as a
// user's kernel would.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <quadrants/quadrants.hpp>

#include "fuzz/fuzz_case.hpp"

namespace qd_fuzz::structs {

// Kernel side and host side of each kind, member by member.
struct s1_view {
  qd::types::ndarray<float, 1> a, b;
  qd::f32 s;
};
struct s1_host {
  qd::ndarray<float, 1> a, b;
  float s;
};
struct s2_view {
  qd::types::ndarray<std::int32_t, 2> m;
  qd::types::ndarray<qd::vec3f, 1> p;
  qd::i32 k;
};
struct s2_host {
  qd::ndarray<std::int32_t, 2> m;
  qd::ndarray<qd::vec3f, 1> p;
  std::int32_t k;
};
struct s3_view {  // nested
  s1_view inner;
  qd::types::ndarray<double, 1> c;
  qd::f64 t;
};
struct s3_host {
  s1_host inner;
  qd::ndarray<double, 1> c;
  double t;
};
struct s4_view {  // a vector scalar member and an array of matrices
  qd::types::ndarray<float, 2> g;
  qd::vec3f v;
  qd::types::ndarray<qd::mat2f, 1> q;
};
struct s4_host {
  qd::ndarray<float, 2> g;
  std::array<float, 3> v;
  qd::ndarray<qd::mat2f, 1> q;
};

inline constexpr int kinds = 4;

// The kernel lambda of kind K: its parameter is the view; its body is the case's IR.
template <class View>
struct body {
  const qd::ir::function* fn;
  void operator()(View) const { qd::detail::current_tracer().fn = *fn; }
};

// One flattened parameter of a kind: what the generator declares.
struct leaf {
  qd::ir::param_desc desc;
  int component_dims;  // 1: an array of vectors, 2: of matrices (trailing extents below)
  std::array<int, 2> components;
};

inline const std::vector<leaf>& leaves(int kind) {
  static const std::vector<leaf> k1 = {{{true, qd::dtype::f32, 1, false}, 0, {0, 0}},
                                       {{true, qd::dtype::f32, 1, false}, 0, {0, 0}},
                                       {{false, qd::dtype::f32, 0, false}, 0, {0, 0}}};
  static const std::vector<leaf> k2 = {{{true, qd::dtype::i32, 2, false}, 0, {0, 0}},
                                       {{true, qd::dtype::f32, 2, false}, 1, {3, 0}},
                                       {{false, qd::dtype::i32, 0, false}, 0, {0, 0}}};
  static const std::vector<leaf> k3 = {{{true, qd::dtype::f32, 1, false}, 0, {0, 0}},
                                       {{true, qd::dtype::f32, 1, false}, 0, {0, 0}},
                                       {{false, qd::dtype::f32, 0, false}, 0, {0, 0}},
                                       {{true, qd::dtype::f64, 1, false}, 0, {0, 0}},
                                       {{false, qd::dtype::f64, 0, false}, 0, {0, 0}}};
  static const std::vector<leaf> k4 = {{{true, qd::dtype::f32, 2, false}, 0, {0, 0}},
                                       {{false, qd::dtype::f32, 0, false}, 0, {0, 0}},
                                       {{false, qd::dtype::f32, 0, false}, 0, {0, 0}},
                                       {{false, qd::dtype::f32, 0, false}, 0, {0, 0}},
                                       {{true, qd::dtype::f32, 3, false}, 2, {2, 2}}};
  switch (kind) {
    case 1: return k1;
    case 2: return k2;
    case 3: return k3;
    case 4: return k4;
    default: throw std::runtime_error("qdfuzz: unknown struct kind");
  }
}

// The descriptors qd::kernel derives from kind's lambda (the test checks they are leaves(kind)'s).
inline std::vector<qd::ir::param_desc> reflected_descs(int kind) {
  switch (kind) {
    case 1: return qd::detail::kernel_param_descs<body<s1_view>>();
    case 2: return qd::detail::kernel_param_descs<body<s2_view>>();
    case 3: return qd::detail::kernel_param_descs<body<s3_view>>();
    case 4: return qd::detail::kernel_param_descs<body<s4_view>>();
    default: throw std::runtime_error("qdfuzz: unknown struct kind");
  }
}

namespace detail {

// The host array for parameter p of c, with the buffer's contents.
template <class A>
A host_array(const fuzz_case& c, std::size_t p) {
  const buffer_spec& b = c.buffers[static_cast<std::size_t>(c.buffer_of[p])];
  std::array<std::int64_t, static_cast<std::size_t>(A::ndim)> shape{};
  for (std::size_t d = 0; d < shape.size(); ++d) shape[d] = b.shape[d];
  A a(shape);
  using H = typename decltype(a.to_host())::value_type;
  std::vector<H> values(b.bytes() / sizeof(H));
  if (!values.empty()) std::memcpy(values.data(), b.data.data(), b.bytes());
  a.from_host(values);
  return a;
}

template <class A>
std::vector<unsigned char> bytes_of(const A& a) {
  auto values = a.to_host();
  std::vector<unsigned char> out(values.size() * sizeof(values[0]));
  if (!out.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

template <class T>
T scalar(const fuzz_case& c, std::size_t p) {
  T v;
  std::memcpy(&v, &c.scalar_bits[p], sizeof v);
  return v;
}

inline s1_host make_s1(const fuzz_case& c, std::size_t first) {
  return {host_array<qd::ndarray<float, 1>>(c, first), host_array<qd::ndarray<float, 1>>(c, first + 1),
          scalar<float>(c, first + 2)};
}

}  // namespace detail

// Calls `run(kernel_body, host_struct, read_back)` with kind's typed pieces; read_back(host)
// returns each buffer's bytes in buffer order (the buffers follow the parameters).
template <class F>
void with_kind(const fuzz_case& c, F&& run) {
  using namespace detail;
  switch (c.struct_kind) {
    case 1:
      run(body<s1_view>{&c.fn}, make_s1(c, 0), [](const s1_host& h) {
        return std::vector<std::vector<unsigned char>>{bytes_of(h.a), bytes_of(h.b)};
      });
      return;
    case 2:
      run(body<s2_view>{&c.fn},
          s2_host{host_array<qd::ndarray<std::int32_t, 2>>(c, 0), host_array<qd::ndarray<qd::vec3f, 1>>(c, 1),
                  scalar<std::int32_t>(c, 2)},
          [](const s2_host& h) {
            return std::vector<std::vector<unsigned char>>{bytes_of(h.m), bytes_of(h.p)};
          });
      return;
    case 3:
      run(body<s3_view>{&c.fn}, s3_host{make_s1(c, 0), host_array<qd::ndarray<double, 1>>(c, 3), scalar<double>(c, 4)},
          [](const s3_host& h) {
            return std::vector<std::vector<unsigned char>>{bytes_of(h.inner.a), bytes_of(h.inner.b), bytes_of(h.c)};
          });
      return;
    case 4:
      run(body<s4_view>{&c.fn},
          s4_host{host_array<qd::ndarray<float, 2>>(c, 0),
                  std::array<float, 3>{scalar<float>(c, 1), scalar<float>(c, 2), scalar<float>(c, 3)},
                  host_array<qd::ndarray<qd::mat2f, 1>>(c, 4)},
          [](const s4_host& h) {
            return std::vector<std::vector<unsigned char>>{bytes_of(h.g), bytes_of(h.q)};
          });
      return;
    default: throw std::runtime_error("qdfuzz: unknown struct kind");
  }
}

}  // namespace qd_fuzz::structs
