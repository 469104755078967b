// Random kernels for differential testing: well-typed IR built with ir::builder,
// in-bounds by construction and free of what C++ leaves undefined in generated code.
// The bodies under QD_FUZZ_IMPLEMENTATION are compiled once, in fuzz_support.cpp (the
// library qd_fuzz_support); other translation units see their declarations only.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <quadrants/quadrants.hpp>

#include "fuzz/fuzz_case.hpp"
#include "fuzz/struct_cases.hpp"

namespace qd_fuzz {

// splitmix64: small, fast, and the same sequence everywhere.
class rng {
 public:
  explicit rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  int below(int n) { return n <= 1 ? 0 : static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
  int range(int lo, int hi) { return lo + below(hi - lo + 1); }  // [lo, hi]
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1p-53 < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<std::size_t>(below(static_cast<int>(v.size())))];
  }

 private:
  std::uint64_t s_;
};

struct generator_options {
  int min_constructs = 1;
  int max_constructs = 12;
  int max_arrays = 4;
  int max_scalars = 3;
  double print_chance = 0.03;  // per kernel: prints are captured and compared, which costs time
  // The second wave's language (SPEC §11.1-§11.4), per kernel.
  double vector_chance = 0.3;        // vector and matrix expressions
  double vector_array_chance = 0.3;  // an array of vectors or matrices among the arrays
  double struct_chance = 0.08;       // the arguments grouped in a struct parameter
  double return_chance = 0.15;       // a returned scalar, vector, matrix or tuple
  double jump_chance = 0.35;         // qd::break_ / qd::continue_ in loop bodies
  double loop_config_chance = 0.12;  // per top-level loop
  // The third wave's language (SPEC §13.1-§13.4), per kernel. Their choices draw from a
  // second stream, so a kernel that uses none is the one the seed made before them.
  double math_chance = 0.25;           // the third wave's math, bit and division functions
  double atomics_chance = 0.25;        // atomic mul, bitwise, exchange, cas
  double narrow_types_chance = 0.2;    // arrays of f16, i8, i16, u16, u64
  double short_circuit_chance = 0.25;  // && / || with a right operand that reads memory
  // The float functions that call libm on the CPU and the reference (exp, log, sin, cos,
  // tanh, tan, asin, acos, log2, exp2, pow, atan2). Off, each is replaced as for a constant
  // argument (sqrt, *, fmod), with the same draws, so the kernel is otherwise the seed's:
  // the Vulkan batch, whose own functions are within 1-2 ulp of libm's (docs/backends.md).
  bool libm = true;
  // Every top-level loop serialized (qd::loop_config{.serialize = true}): the iterations
  // run in order on every backend, so the generator, which knows it, may draw what is a
  // race in a parallel loop. For the Vulkan batch: lavapipe runs a parallel loop's
  // iterations at once, where the reference runs them in order.
  bool serial_loops = false;
};

namespace detail {

using qd::dtype;
namespace ir = qd::ir;

// Values in a case's arrays and scalars: mostly small and exact, some at the edges.
inline std::uint64_t interesting_bits(rng& r, dtype t) {
  auto bits = [](auto v) {
    std::uint64_t b = 0;
    std::memcpy(&b, &v, sizeof v);
    return b;
  };
  switch (t) {
    case dtype::boolean: return static_cast<std::uint64_t>(r.below(2));
    case dtype::u8: return r.chance(0.7) ? static_cast<std::uint64_t>(r.below(12)) : r.next() & 0xff;
    // The third wave's types (not generated yet): small values, some at the edges.
    case dtype::i8:
      return bits(static_cast<std::int8_t>(r.chance(0.8) ? r.range(-12, 12) : static_cast<int>(r.next())));
    case dtype::i16:
      return bits(static_cast<std::int16_t>(r.chance(0.8) ? r.range(-12, 12) : static_cast<int>(r.next())));
    case dtype::u16: return bits(static_cast<std::uint16_t>(r.chance(0.8) ? r.below(12) : static_cast<int>(r.next())));
    case dtype::u64: return r.chance(0.8) ? static_cast<std::uint64_t>(r.below(20)) : r.next();
    case dtype::f16: return qd::half(static_cast<float>(r.range(-16, 16)) * 0.25f).bits;
    case dtype::i32: {
      static const std::vector<std::int32_t> edges = {0, 1, -1, 2, 31, 32, 100, -100, INT32_MAX, INT32_MIN, 0x55555555};
      std::int32_t v = r.chance(0.8) ? r.range(-12, 12) : r.pick(edges);
      return bits(v);
    }
    case dtype::u32: {
      static const std::vector<std::uint32_t> edges = {0, 1, 2, 33, 0x80000000u, 0xffffffffu, 123456};
      std::uint32_t v = r.chance(0.8) ? static_cast<std::uint32_t>(r.range(0, 20)) : r.pick(edges);
      return bits(v);
    }
    case dtype::i64: {
      static const std::vector<std::int64_t> edges = {0, -1, std::int64_t{1} << 40, INT64_MAX, INT64_MIN, 65};
      std::int64_t v = r.chance(0.8) ? r.range(-12, 12) : r.pick(edges);
      return bits(v);
    }
    case dtype::f32:
    case dtype::f64: {
      double v;
      int k = r.below(100);
      if (k < 55)
        v = r.range(-16, 16) * 0.25;
      else if (k < 72)
        v = (static_cast<double>(r.next() >> 11) * 0x1p-53 - 0.5) * 200.0;
      else if (k < 88) {
        // Also the edges of float-to-integer conversions (u8, i32, u32, i64).
        static const std::vector<double> edges = {
            0.0,   -0.0, -0.0,         1e30,          -1e-30,       3.4e38, 1e-40,  0.1,     -7.0,   255.9,
            256.0, -0.9, 2147483648.0, -2147483904.0, 4294967296.0, -1e30,  0x1p63, -0x1p63, 9.3e18, -3.4e38};
        v = r.pick(edges);
      } else if (k < 93)
        v = std::numeric_limits<double>::infinity() * (r.chance(0.5) ? 1 : -1);
      else
        v = std::numeric_limits<double>::quiet_NaN() * (r.chance(0.5) ? 1 : -1);
      return t == dtype::f32 ? bits(static_cast<float>(v)) : bits(v);
    }
  }
  return 0;
}

class kernel_generator {
 public:
  kernel_generator(std::uint64_t seed, const generator_options& options)
      : r_(seed), r3_(seed ^ 0x3a3a3a3a3a3a3a3aull), o_(options), t_("fuzz_" + std::to_string(seed), {}), b_(t_.b) {
    c_.name = "fuzz_" + std::to_string(seed);
    c_.note = "generated from seed " + std::to_string(seed);
  }

  // The generator emits through a tracer, so that the DSL's own vector, matrix,
  // loop-control and return code (lang/) writes the kernel's IR where it is used.
  fuzz_case run() {
    qd::detail::trace_scope scope(t_);
    vectors_ = r_.chance(o_.vector_chance);
    jumps_ = r_.chance(o_.jump_chance);
    math3_ = r3_.chance(o_.math_chance);
    atomics3_ = r3_.chance(o_.atomics_chance);
    narrow_ = r3_.chance(o_.narrow_types_chance);
    short_circuit_ = r3_.chance(o_.short_circuit_chance);
    if (r_.chance(o_.struct_chance))
      make_struct_parameters();
    else
      make_parameters();
    values_.emplace_back();
    vars_.emplace_back();
    prints_ = r_.chance(o_.print_chance);
    randoms_ = r_.chance(0.3);
    // Mostly small kernels (a split is more likely to be taken, so its bugs show), some large.
    const int span = o_.max_constructs - o_.min_constructs;
    const int k = r_.below(10);
    const int target = o_.min_constructs + (k < 5   ? r_.range(0, std::min(span, 2))
                                            : k < 8 ? r_.range(0, std::min(span, 6))
                                                    : r_.range(0, span));
    for (int guard = 0; constructs_ < target && guard < 4 * target + 8; ++guard) top_level_step();
    if (c_.struct_kind == 0 && r_.chance(o_.return_chance)) make_return();
    c_.fn = std::move(t_.fn);
    c_.random_seed = r_.next() & 0xffff;
    c_.launches = r_.chance(0.2) ? 2 : 1;
    return std::move(c_);
  }

 private:
  struct value {
    ir::id id;
    dtype type;
  };
  struct var {
    ir::id decl;
    dtype type;
    bool top_level;
    bool locked;  // a while loop's counter: written only by its loop
  };
  struct index_range {
    ir::id id;
    std::int64_t lo, hi;  // every value the index takes lies in [lo, hi)
  };
  struct array {
    std::int32_t param;
    const buffer_spec* spec;
    int component_dims = 0;  // 1: an array of vectors (last extent), 2: of matrices (last two)
  };

  // --- parameters and buffers ------------------------------------------------------
  void make_parameters() {
    static const std::vector<dtype> element_types = {dtype::f32, dtype::f32, dtype::i32, dtype::i32,
                                                     dtype::f64, dtype::i64, dtype::u32, dtype::u8};
    static const std::vector<dtype> scalar_types = {dtype::i32, dtype::i32, dtype::f32,    dtype::i64,
                                                    dtype::f64, dtype::u32, dtype::boolean};
    const int arrays = r_.range(1, o_.max_arrays);
    const int scalars = r_.range(0, o_.max_scalars);
    std::vector<int> kinds(static_cast<std::size_t>(arrays), 1);
    kinds.resize(static_cast<std::size_t>(arrays + scalars), 0);
    for (std::size_t i = kinds.size(); i > 1; --i)
      std::swap(kinds[i - 1], kinds[static_cast<std::size_t>(r_.below(static_cast<int>(i)))]);
    // One call in five binds one buffer to two array parameters.
    int alias_from = -1, alias_to = -1;
    if (arrays >= 2 && r_.chance(0.2)) {
      alias_from = r_.below(arrays - 1);
      alias_to = r_.range(alias_from + 1, arrays - 1);
    }
    int array_no = 0;
    std::vector<std::int32_t> array_params;
    const bool vector_arrays = r_.chance(o_.vector_array_chance);
    c_.buffers.reserve(static_cast<std::size_t>(arrays));  // arrays_ points into it
    for (int kind : kinds) {
      if (kind == 1) {
        std::int32_t buffer;
        if (array_no == alias_to) {
          buffer = c_.buffer_of[static_cast<std::size_t>(array_params[static_cast<std::size_t>(alias_from)])];
        } else {
          buffer_spec s;
          int components = 0;
          if (vector_arrays && r_.chance(0.5)) {
            // An array of vectors (qd::types::ndarray<qd::vec3f, 1>: one more dimension, of extent
            // 2 to 4) or of matrices (two more, 2 or 3 each), per SPEC §11.1.
            static const std::vector<dtype> vector_types = {dtype::f32, dtype::f32, dtype::f64, dtype::i32};
            s.type = r_.pick(vector_types);
            components = r_.chance(0.75) ? 1 : 2;
            const int outer = components == 2 || r_.chance(0.7) ? 1 : 2;
            s.ndim = outer + components;
            for (int d = 0; d < outer; ++d) s.shape[static_cast<std::size_t>(d)] = r_.range(1, outer == 1 ? 8 : 4);
            if (components == 1)
              s.shape[static_cast<std::size_t>(outer)] = r_.range(2, 4);
            else
              s.shape[1] = r_.range(2, 3), s.shape[2] = r_.range(2, 3);
          } else {
            s.type = r_.pick(element_types);
            if (narrow_ && r3_.chance(0.5)) {
              static const std::vector<dtype> narrow = {dtype::f16, dtype::i8, dtype::i16, dtype::u16, dtype::u64};
              s.type = r3_.pick(narrow);
              c_.features |= feature::narrow_types;
            }
            int k = r_.below(20);
            s.ndim = k < 2 ? 0 : k < 11 ? 1 : k < 17 ? 2 : k < 19 ? 3 : 4;
            std::int64_t total = 1;
            for (int d = 0; d < s.ndim; ++d) {
              std::int64_t room = std::max<std::int64_t>(1, 48 / total);
              s.shape[static_cast<std::size_t>(d)] = std::min<std::int64_t>(room, r_.range(1, s.ndim >= 3 ? 3 : 9));
              total *= s.shape[static_cast<std::size_t>(d)];
            }
            s.grad = s.type == dtype::f32 && r_.chance(0.15);
          }
          fill(s);
          buffer = static_cast<std::int32_t>(c_.buffers.size());
          c_.buffers.push_back(std::move(s));
          buffer_components_.push_back(components);
        }
        const buffer_spec& s = c_.buffers[static_cast<std::size_t>(buffer)];
        std::int32_t p = b_.add_param({true, s.type, s.ndim, s.grad});
        c_.buffer_of.push_back(buffer);
        c_.scalar_bits.push_back(0);
        array_params.push_back(p);
        ++array_no;
      } else {
        dtype t = r_.pick(scalar_types);
        std::int32_t p = b_.add_param({false, t, 0, false});
        c_.buffer_of.push_back(-1);
        c_.scalar_bits.push_back(interesting_bits(r_, t));
        scalars_.push_back(p);
      }
    }
    for (std::int32_t p : array_params) {
      const auto b = static_cast<std::size_t>(c_.buffer_of[static_cast<std::size_t>(p)]);
      arrays_.push_back({p, &c_.buffers[b], buffer_components_[b]});
    }
  }

  // The parameters of a struct kind (struct_cases.hpp): its members, flattened, in order.
  void make_struct_parameters() {
    c_.struct_kind = r_.range(1, structs::kinds);
    c_.features |= feature::struct_args;
    for (const structs::leaf& l : structs::leaves(c_.struct_kind)) {
      std::int32_t p = t_.b.add_param(l.desc);
      if (!l.desc.is_array) {
        c_.buffer_of.push_back(-1);
        c_.scalar_bits.push_back(interesting_bits(r_, l.desc.type));
        scalars_.push_back(p);
        continue;
      }
      buffer_spec s;
      s.type = l.desc.type;
      s.ndim = l.desc.ndim;
      const int outer = s.ndim - l.component_dims;
      for (int d = 0; d < outer; ++d) s.shape[static_cast<std::size_t>(d)] = r_.range(1, outer == 1 ? 9 : 5);
      for (int d = 0; d < l.component_dims; ++d)
        s.shape[static_cast<std::size_t>(outer + d)] = l.components[static_cast<std::size_t>(d)];
      fill(s);
      c_.buffer_of.push_back(static_cast<std::int32_t>(c_.buffers.size()));
      c_.scalar_bits.push_back(0);
      c_.buffers.push_back(std::move(s));
      buffer_components_.push_back(l.component_dims);
    }
    for (std::size_t p = 0; p < c_.buffer_of.size(); ++p)
      if (c_.buffer_of[p] >= 0) {
        const auto b = static_cast<std::size_t>(c_.buffer_of[p]);
        arrays_.push_back({static_cast<std::int32_t>(p), &c_.buffers[b], buffer_components_[b]});
      }
  }

  void fill(buffer_spec& s) {
    auto fill_one = [&](std::vector<unsigned char>& bytes) {
      const auto size = static_cast<std::size_t>(qd::size_of(s.type));
      bytes.resize(static_cast<std::size_t>(s.elements()) * size);
      for (std::int64_t e = 0; e < s.elements(); ++e) {
        std::uint64_t b = interesting_bits(r_, s.type);
        std::memcpy(bytes.data() + static_cast<std::size_t>(e) * size, &b, size);
      }
    };
    fill_one(s.data);
    if (s.grad) fill_one(s.grad_data);
  }

  // --- helpers ---------------------------------------------------------------------
  void mark(ir::id i, bool opaque) {
    if (opaque_.size() <= static_cast<std::size_t>(i)) opaque_.resize(static_cast<std::size_t>(i) + 1, false);
    opaque_[static_cast<std::size_t>(i)] = opaque;
  }
  bool opaque(ir::id i) const {
    return static_cast<std::size_t>(i) < opaque_.size() && opaque_[static_cast<std::size_t>(i)];
  }
  dtype type_of(ir::id i) const { return t_.fn.at(i).type; }
  bool top_level() const { return b_.current_block() == 0; }

  ir::id constant(dtype t) {
    switch (t) {
      case dtype::boolean: return b_.constant_int(t, r_.below(2));
      case dtype::f32:
      case dtype::f64: {
        static const std::vector<double> nice = {0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -2.5, 0.25, 10.0, 1e-3, -0.0, 1e20};
        double v = r_.chance(0.9)   ? r_.pick(nice)
                   : r_.chance(0.7) ? std::numeric_limits<double>::infinity()
                                    : std::numeric_limits<double>::quiet_NaN();
        return b_.constant_float(t, v);
      }
      case dtype::i32: {
        static const std::vector<std::int64_t> nice = {0, 1, 2, 3, 5, 7, -1, -3, 16, 31, 33, 100, INT32_MAX, INT32_MIN};
        return b_.constant_int(t, r_.pick(nice));
      }
      case dtype::u32: {
        static const std::vector<std::int64_t> nice = {0, 1, 2, 3, 7, 31, 0xffffffffll, 0x80000000ll};
        return b_.constant_int(t, r_.pick(nice));
      }
      case dtype::i64: {
        static const std::vector<std::int64_t> nice = {0, 1, 2, -1, 63, 100, std::int64_t{1} << 35, INT64_MIN};
        return b_.constant_int(t, r_.pick(nice));
      }
      case dtype::u8: return b_.constant_int(t, r_.below(256));
      case dtype::i8:
      case dtype::i16:
      case dtype::u16:
      case dtype::u64: return b_.constant_int(t, r_.below(100));  // the third wave's types: not generated yet
      case dtype::f16: return b_.constant_float(t, 0.5);
    }
    return b_.constant_int(t, 0);
  }
  ir::id i32(std::int64_t v) { return b_.constant_int(dtype::i32, v); }

  std::vector<value> visible_values(dtype t) const {
    std::vector<value> out;
    for (const auto& scope : values_)
      for (const auto& v : scope)
        if (v.type == t) out.push_back(v);
    return out;
  }
  std::vector<var> visible_vars(dtype t, bool writable) const {
    std::vector<var> out;
    for (const auto& scope : vars_)
      for (const auto& v : scope)
        if ((t == dtype_any || v.type == t) && !(writable && v.locked)) out.push_back(v);
    return out;
  }
  static constexpr dtype dtype_any = static_cast<dtype>(255);

  // A value of type t built from a value of any type. Every conversion is defined, so
  // NaN, infinities and out-of-range floats reach float-to-integer casts as they are.
  ir::id convert(ir::id v, dtype to) {
    const dtype from = type_of(v);
    if (from == to) return v;
    if (to == dtype::boolean) return b_.cast(to, v);
    ir::id out = b_.cast(to, v);
    mark(out, opaque(v) && from != dtype::boolean);
    return out;
  }

  // ((e % n) + n) % n: an index in [0, n) for n > 0, from any integer e.
  ir::id wrap_into(ir::id e, ir::id n) {
    e = convert(e, dtype::i32);
    ir::id m = b_.binary(ir::binary_op::mod, dtype::i32, e, n);
    return b_.binary(ir::binary_op::mod, dtype::i32, b_.binary(ir::binary_op::add, dtype::i32, m, n), n);
  }

  // --- array accesses ----------------------------------------------------------------
  struct access {
    std::int32_t param;
    std::uint8_t flags;
    std::vector<ir::id> indices;
  };

  access make_access(const array& a, bool load, int dims = -1) {
    access x{a.param, 0, {}};
    const ir::param_desc& d = t_.fn.params[static_cast<std::size_t>(a.param)];
    if (d.needs_grad && r_.chance(0.5)) x.flags |= qd::ir::access::grad;
    if (load && r_.chance(0.03)) x.flags |= qd::ir::access::is_volatile;
    const bool clamp = d.ndim > 0 && r_.chance(0.15);
    if (clamp) x.flags |= qd::ir::access::clamp;
    for (int dim = 0; dim < (dims < 0 ? d.ndim : dims); ++dim) {
      const std::int64_t extent = a.spec->shape[static_cast<std::size_t>(dim)];
      ir::id index;
      if (clamp) {
        index = r_.chance(0.5) ? gen(dtype::i32, 1)
                               : b_.binary(ir::binary_op::add, dtype::i32, pick_index_or_zero(), i32(r_.range(-2, 2)));
      } else {
        std::vector<index_range> fits;
        for (const auto& ix : indices_)
          if (ix.lo >= 0 && ix.hi <= extent) fits.push_back(ix);
        int k = r_.below(10);
        if (!fits.empty() && k < 5) {
          const index_range& ix = r_.pick(fits);
          // i + c stays in range: an offset keeps [lo, hi) + c inside [0, extent).
          std::int64_t up = extent - ix.hi, down = ix.lo;
          std::int64_t c = r_.chance(0.3) ? r_.range(static_cast<int>(-down), static_cast<int>(up)) : 0;
          index = c == 0 ? ix.id
                         : b_.binary(c > 0 ? ir::binary_op::add : ir::binary_op::sub, dtype::i32, ix.id,
                                     i32(c > 0 ? c : -c));
        } else if (k < 7) {
          index = i32(r_.below(static_cast<int>(extent)));
        } else if (k < 8) {
          // n - c, c in [1, n]: an element counted from the end, a run-time bound.
          index = b_.binary(ir::binary_op::sub, dtype::i32, b_.shape(a.param, dim),
                            i32(r_.range(1, static_cast<int>(extent))));
        } else {
          index = wrap_into(gen(r_.chance(0.8) ? dtype::i32 : dtype::i64, 1), b_.shape(a.param, dim));
        }
      }
      if (r_.chance(0.1)) index = b_.cast(dtype::i64, index);
      x.indices.push_back(index);
    }
    return x;
  }

  ir::id pick_index_or_zero() {
    if (indices_.empty()) return i32(0);
    return r_.pick(indices_).id;
  }

  std::vector<array> arrays_of(dtype t) const {
    std::vector<array> out;
    for (const auto& a : arrays_)
      if (t == dtype_any || a.spec->type == t) out.push_back(a);
    return out;
  }

  ir::id load(dtype t) {
    auto same = arrays_of(t);
    const array& a = !same.empty() && r_.chance(0.7) ? r_.pick(same) : r_.pick(arrays_);
    access x = make_access(a, true);
    ir::id v = b_.global_load(x.param, x.flags, x.indices);
    mark(v, true);
    return convert(v, t);
  }

  // --- expressions -------------------------------------------------------------------
  ir::id leaf(dtype t) {
    for (int attempt = 0; attempt < 4; ++attempt) {
      switch (r_.below(8)) {
        case 0:
        case 1: {
          auto vs = visible_values(t);
          if (!vs.empty()) return r_.pick(vs).id;
          break;
        }
        case 2: {
          std::vector<std::int32_t> ps;
          for (auto p : scalars_)
            if (t_.fn.params[static_cast<std::size_t>(p)].type == t) ps.push_back(p);
          if (ps.empty()) break;
          ir::id v = b_.arg(r_.pick(ps));
          mark(v, true);
          return v;
        }
        case 3:
          if (t == dtype::i32) {
            if (!indices_.empty() && r_.chance(0.6)) return r_.pick(indices_).id;
            const array& a = r_.pick(arrays_);
            const int nd = t_.fn.params[static_cast<std::size_t>(a.param)].ndim;
            if (nd > 0) {
              ir::id v = b_.shape(a.param, r_.below(nd));
              mark(v, true);
              return v;
            }
          }
          break;
        case 4: {
          auto vs = visible_vars(t, false);
          if (!vs.empty()) return b_.local_load(r_.pick(vs).decl);
          break;
        }
        case 5:
        case 6: return load(t);
        default: return constant(t);
      }
    }
    return constant(t);
  }

  ir::id gen(dtype t, int depth) {
    if (t == dtype::u8) return r_.chance(0.5) ? load(t) : convert(gen(dtype::i32, depth), t);
    // The narrow types: loads, and conversions of wider values (their arithmetic is the
    // wider type's, converted back, as the DSL does).
    if (t == dtype::f16 || t == dtype::i8 || t == dtype::i16 || t == dtype::u16 || t == dtype::u64)
      return r3_.chance(0.5) ? load(t)
                             : convert(gen(t == dtype::f16   ? dtype::f32
                                           : t == dtype::u64 ? dtype::i64
                                                             : dtype::i32,
                                           depth),
                                       t);
    if (depth <= 0 || r_.chance(0.3)) return leaf(t);
    if (t == dtype::boolean) return gen_bool(depth);
    if (vectors_ && r_.chance(0.05)) return vector_expression(t, 0);
    const bool is_float = qd::is_float(t);
    int k = r_.below(20);
    if (k < 8) {  // + - * / % min max, bit operations, shifts
      static const std::vector<ir::binary_op> int_ops = {
          ir::binary_op::add, ir::binary_op::sub, ir::binary_op::mul,     ir::binary_op::div,    ir::binary_op::mod,
          ir::binary_op::min, ir::binary_op::max, ir::binary_op::bit_and, ir::binary_op::bit_or, ir::binary_op::bit_xor,
          ir::binary_op::shl, ir::binary_op::shr, ir::binary_op::add};
      static const std::vector<ir::binary_op> float_ops = {ir::binary_op::add, ir::binary_op::sub, ir::binary_op::mul,
                                                           ir::binary_op::div, ir::binary_op::min, ir::binary_op::max,
                                                           ir::binary_op::add, ir::binary_op::pow};
      ir::binary_op o = is_float ? r_.pick(float_ops) : r_.pick(int_ops);
      if (math3_ && r3_.chance(0.3)) {
        static const std::vector<ir::binary_op> float3 = {ir::binary_op::atan2, ir::binary_op::fmod,
                                                          ir::binary_op::floordiv, ir::binary_op::floormod};
        static const std::vector<ir::binary_op> int3 = {ir::binary_op::floordiv, ir::binary_op::floormod};
        o = is_float ? r3_.pick(float3) : r3_.pick(int3);
        c_.features |= feature::math;
      }
      ir::id a = gen(t, depth - 1), b = gen(t, depth - 1);
      // atan2 only on run-time values, as pow (another libm folds constants).
      if (o == ir::binary_op::atan2 && !(opaque(a) && opaque(b) && o_.libm)) o = ir::binary_op::fmod;
      // pow only on run-time values: the compiler folds constant calls with another libm.
      if (o == ir::binary_op::pow && !(opaque(a) && opaque(b) && o_.libm)) o = ir::binary_op::mul;
      ir::id v = b_.binary(o, t, a, b);
      mark(v, opaque(a) || opaque(b));
      return v;
    }
    if (k < 11) {
      ir::id a = gen(t, depth - 1);
      ir::unary_op o;
      if (is_float) {
        static const std::vector<ir::unary_op> ops = {
            ir::unary_op::neg, ir::unary_op::abs, ir::unary_op::sqrt, ir::unary_op::floor, ir::unary_op::ceil,
            ir::unary_op::exp, ir::unary_op::log, ir::unary_op::sin,  ir::unary_op::cos,   ir::unary_op::tanh};
        o = r_.pick(ops);
        if (math3_ && r3_.chance(0.4)) {
          static const std::vector<ir::unary_op> ops3 = {ir::unary_op::tan,   ir::unary_op::asin, ir::unary_op::acos,
                                                         ir::unary_op::rsqrt, ir::unary_op::log2, ir::unary_op::exp2,
                                                         ir::unary_op::round, ir::unary_op::trunc};
          o = r3_.pick(ops3);
          c_.features |= feature::math;
        }
        const bool libm = o == ir::unary_op::exp || o == ir::unary_op::log || o == ir::unary_op::sin ||
                          o == ir::unary_op::cos || o == ir::unary_op::tanh || o == ir::unary_op::tan ||
                          o == ir::unary_op::asin || o == ir::unary_op::acos || o == ir::unary_op::log2 ||
                          o == ir::unary_op::exp2;
        if (libm && !(opaque(a) && o_.libm)) o = ir::unary_op::sqrt;
      } else {
        static const std::vector<ir::unary_op> ops = {ir::unary_op::neg, ir::unary_op::abs, ir::unary_op::bit_not};
        o = r_.pick(ops);
        if (math3_ && t == dtype::i32 && r3_.chance(0.3)) {  // bit counts of any integer, as an i32
          static const std::vector<ir::unary_op> counts = {ir::unary_op::popcnt, ir::unary_op::clz, ir::unary_op::ffs};
          static const std::vector<dtype> from = {dtype::i32, dtype::u32, dtype::i64};
          const ir::id x = convert(a, r3_.pick(from));
          ir::id v = b_.unary(r3_.pick(counts), dtype::i32, x);
          mark(v, opaque(x));
          c_.features |= feature::math;
          return v;
        }
      }
      ir::id v = b_.unary(o, t, a);
      mark(v, opaque(a));
      return v;
    }
    if (k < 13) {
      ir::id c = gen_bool(depth - 1);
      ir::id a = gen(t, depth - 1), b = gen(t, depth - 1);
      ir::id v = b_.select(t, c, a, b);
      mark(v, opaque(a) && opaque(b));
      return v;
    }
    if (k < 14 && is_float) {
      ir::id a = gen(t, depth - 1), b = gen(t, depth - 1), c = gen(t, depth - 1);
      ir::id v = b_.fma(t, a, b, c);
      mark(v, opaque(a) || opaque(b) || opaque(c));
      return v;
    }
    if (k < 17) {
      static const std::vector<dtype> from = {dtype::i32, dtype::f32, dtype::i64,
                                              dtype::f64, dtype::u32, dtype::boolean};
      return convert(gen(r_.pick(from), depth - 1), t);
    }
    if (k < 18 && random_allowed()) {
      ir::id v = b_.random(t);
      mark(v, true);
      return v;
    }
    return leaf(t);
  }

  ir::id gen_bool(int depth) {
    if (math3_ && r3_.chance(0.08)) {  // isnan, isinf, isfinite
      static const std::vector<ir::unary_op> ops = {ir::unary_op::isnan, ir::unary_op::isinf, ir::unary_op::isfinite};
      c_.features |= feature::math;
      return b_.unary(r3_.pick(ops), dtype::boolean, gen(r3_.chance(0.5) ? dtype::f32 : dtype::f64, depth - 1));
    }
    if (short_circuit_ && !in_bounds_ && depth > 0 && r3_.chance(0.15)) return short_circuit(depth);
    int k = r_.below(10);
    if (k < 5 || depth <= 0) {
      static const std::vector<dtype> types = {dtype::i32, dtype::i32, dtype::f32, dtype::i64, dtype::f64, dtype::u32};
      static const std::vector<ir::binary_op> ops = {ir::binary_op::eq, ir::binary_op::ne, ir::binary_op::lt,
                                                     ir::binary_op::le, ir::binary_op::gt, ir::binary_op::ge};
      dtype t = r_.pick(types);
      ir::id a = gen(t, depth - 1), b = gen(t, depth - 1);
      return b_.binary(r_.pick(ops), dtype::boolean, a, b);
    }
    if (k < 7) {
      ir::id a = gen_bool(depth - 1), b = gen_bool(depth - 1);
      return b_.binary(r_.chance(0.5) ? ir::binary_op::logical_and : ir::binary_op::logical_or, dtype::boolean, a, b);
    }
    if (k < 8) return b_.unary(ir::unary_op::logical_not, dtype::boolean, gen_bool(depth - 1));
    return leaf(dtype::boolean);
  }

  // `a && b` / `a || b` as the DSL traces them (lang/expr.hpp): the right operand's
  // statements in a branch taken only when needed. Its right operand reads an array here,
  // so the branch stays (pure arithmetic is evaluated unconditionally).
  ir::id short_circuit(int depth) {
    const bool is_or = r3_.chance(0.5);
    const ir::id left = gen_bool(depth - 1);
    const qd::detail::short_circuit s = qd::detail::begin_short_circuit(is_or, left);
    ++nesting_;
    open_scope();
    static const std::vector<dtype> types = {dtype::i32, dtype::f32, dtype::i64, dtype::f64};
    const dtype t = r3_.pick(types);
    static const std::vector<ir::binary_op> ops = {ir::binary_op::eq, ir::binary_op::ne, ir::binary_op::lt,
                                                   ir::binary_op::le, ir::binary_op::gt, ir::binary_op::ge};
    ir::id right = b_.binary(r3_.pick(ops), dtype::boolean, load(t), gen(t, depth - 1));
    if (r3_.chance(0.3)) right = b_.binary(ir::binary_op::logical_and, dtype::boolean, right, gen_bool(depth - 1));
    close_scope();
    --nesting_;
    c_.features |= feature::short_circuit;
    return qd::detail::end_short_circuit(s, right);
  }

  // Random draws only where a backend seeds them: not in a parallel loop's bounds.
  bool random_allowed() const { return randoms_ && !in_bounds_; }

  // --- statements --------------------------------------------------------------------
  dtype value_type() {
    static const std::vector<dtype> types = {dtype::i32, dtype::i32, dtype::i32, dtype::f32,    dtype::f32,
                                             dtype::f64, dtype::i64, dtype::u32, dtype::boolean};
    return r_.pick(types);
  }

  void define_value() {
    dtype t = value_type();
    ir::id v;
    if (top_level() && r_.chance(0.35))
      v = load(t);  // a snapshot of an array element
    else if (r_.chance(0.04) && random_allowed()) {
      v = t == dtype::boolean ? b_.cast(t, b_.random(dtype::u32)) : b_.random(t);
      mark(v, true);
    } else
      v = gen(t, 2);
    values_.back().push_back({v, t});
  }

  void declare_var() {
    dtype t = value_type();
    ir::id init = gen(t, 1);
    ir::id decl = b_.local_decl(t, init);
    vars_.back().push_back({decl, t, top_level(), false});
  }

  void write_var() {
    auto vs = visible_vars(dtype_any, true);
    if (vs.empty()) return declare_var();
    const var& v = r_.pick(vs);
    const bool racy = parallel_ && v.top_level;
    if (v.type == dtype::boolean) {
      if (!racy || r_.chance(0.2)) b_.local_store(v.decl, gen(dtype::boolean, 1));
      return;
    }
    // In a parallel loop a top-level var is a reduction (atomic); a plain store there is a race.
    if (racy ? r_.chance(0.9) : r_.chance(0.5)) {
      static const std::vector<ir::atomic_op> ops = {ir::atomic_op::add, ir::atomic_op::add, ir::atomic_op::sub,
                                                     ir::atomic_op::min, ir::atomic_op::max};
      ir::atomic_op o = r_.pick(ops);
      ir::id x = gen(v.type, 1);
      ir::id old = b_.local_atomic(o, v.decl, x);
      if (r_.chance(0.2)) values_.back().push_back({old, v.type});
    } else {
      ir::id x = r_.chance(0.5) ? gen(v.type, 2)
                                : b_.binary(ir::binary_op::add, v.type, b_.local_load(v.decl), gen(v.type, 1));
      b_.local_store(v.decl, x);
    }
  }

  void store() {
    const array& a = r_.pick(arrays_);
    access x = make_access(a, false);
    ir::id v = gen(a.spec->type, 2);
    b_.global_store(x.param, x.flags, x.indices, v);
  }

  void atomic() {
    const array& a = r_.pick(arrays_);
    access x = make_access(a, false);
    static const std::vector<ir::atomic_op> ops = {ir::atomic_op::add, ir::atomic_op::add, ir::atomic_op::sub,
                                                   ir::atomic_op::min, ir::atomic_op::max};
    ir::id v = gen(a.spec->type, 1);
    ir::atomic_op o = r_.pick(ops);
    ir::id expected = ir::none;
    const dtype at = a.spec->type;
    const bool wide = at == dtype::i32 || at == dtype::u32 || at == dtype::i64 || at == dtype::f32 || at == dtype::f64;
    if (atomics3_ && wide && r3_.chance(0.5)) {
      // Bitwise ones commute (any iteration order gives the same bits); mul, exchange and
      // cas depend on the order of updates to one element, so only outside parallel loops
      // (and mul only on integers: a float product's rounding depends on the order too).
      std::vector<ir::atomic_op> ops3;
      if (qd::is_integral(at))
        for (auto bitwise : {ir::atomic_op::bit_and, ir::atomic_op::bit_or, ir::atomic_op::bit_xor})
          ops3.push_back(bitwise);
      if (!parallel_) {
        if (qd::is_integral(at)) ops3.push_back(ir::atomic_op::mul);
        ops3.push_back(ir::atomic_op::exchange);
        ops3.push_back(ir::atomic_op::cas);
      }
      if (!ops3.empty()) {
        o = r3_.pick(ops3);
        if (o == ir::atomic_op::cas) expected = r3_.chance(0.5) ? load(at) : gen(at, 1);
        c_.features |= feature::atomics;
      }
    }
    // Half the += / -= are what the tracer makes of `x[i] += v` (old value unused):
    // demoted where each iteration owns the element (analysis/atomic_demotion.hpp),
    // which assumes, as documented, that no other parameter shares the buffer.
    bool shared = false;
    for (const array& other : arrays_) shared |= other.param != a.param && other.spec == a.spec;
    const bool compound =
        (o == ir::atomic_op::add || o == ir::atomic_op::sub) && !shared && !serialized_ && r_.chance(0.5);
    if (compound) x.flags |= qd::ir::access::compound;
    ir::id old = b_.global_atomic(o, x.param, x.flags, x.indices, v, expected);
    mark(old, true);
    if (!compound && r_.chance(0.4)) values_.back().push_back({old, a.spec->type});
  }

  void print() {
    std::vector<std::int32_t> args{b_.add_string(r_.chance(0.5) ? "v" : "at %d")};
    const int n = r_.range(1, 2);
    for (int k = 0; k < n; ++k) args.push_back(gen(value_type(), 1));
    b_.print(args);
  }

  void open_scope() {
    values_.emplace_back();
    vars_.emplace_back();
  }
  void close_scope() {
    values_.pop_back();
    vars_.pop_back();
  }

  void block(int statements, bool effects) {
    for (int s = 0; s < statements; ++s) statement(effects);
  }

  void branch(bool effects) {
    ir::id cond = gen_bool(2);
    ir::id n = b_.if_(cond);
    ++nesting_;
    b_.push_block(t_.fn.at(n).block0);
    open_scope();
    block(r_.range(1, 3), effects);
    close_scope();
    b_.pop_block();
    if (r_.chance(0.5)) {
      b_.push_block(t_.fn.at(n).block1);
      open_scope();
      block(r_.range(1, 2), effects);
      close_scope();
      b_.pop_block();
    }
    --nesting_;
  }

  // while (counter < K && cond) { counter += 1; ... }: at most K trips.
  void loop_while(bool effects) {
    const int trips = r_.range(1, 3);
    if (work_ * trips > 512) return;
    ir::id counter = b_.local_decl(dtype::i32, i32(0));
    vars_.back().push_back({counter, dtype::i32, top_level(), true});
    ir::id w = b_.while_();
    b_.push_block(t_.fn.at(w).block0);
    open_scope();
    ir::id more = b_.binary(ir::binary_op::lt, dtype::boolean, b_.local_load(counter), i32(trips));
    ir::id cond = r_.chance(0.5) ? b_.binary(ir::binary_op::logical_and, dtype::boolean, more, gen_bool(1)) : more;
    t_.fn.at(w).a = cond;
    close_scope();
    b_.pop_block();
    b_.push_block(t_.fn.at(w).block1);
    open_scope();
    b_.local_atomic(ir::atomic_op::add, counter, i32(1));
    ++nesting_;
    work_ *= trips;
    loops_.push_back({true});
    block(r_.range(1, 3), effects);
    loops_.pop_back();
    work_ /= trips;
    --nesting_;
    close_scope();
    b_.pop_block();
  }

  // A loop's bounds: [begin, end) with every index known to lie in [lo, hi).
  struct bounds {
    ir::id begin, end;
    std::int64_t lo, hi;
  };

  bounds loop_bounds(int max_trips) {
    in_bounds_ = true;
    bounds out{};
    std::vector<array> with_dims;
    for (const auto& a : arrays_)
      if (a.spec->ndim > 0) with_dims.push_back(a);
    int k = r_.below(10);
    if (!with_dims.empty() && k < 6) {
      const array& a = r_.pick(with_dims);
      const int dim = r_.below(a.spec->ndim);
      const std::int64_t extent = a.spec->shape[static_cast<std::size_t>(dim)];
      ir::id shape = b_.shape(a.param, dim);
      int form = r_.below(5);
      std::int64_t c = extent > 1 ? r_.range(1, static_cast<int>(std::min<std::int64_t>(extent - 1, 3))) : 0;
      if (form == 1 && c > 0) {
        out = {i32(c), shape, c, extent};
      } else if (form == 2 && c > 0) {
        out = {i32(0), b_.binary(ir::binary_op::sub, dtype::i32, shape, i32(c)), 0, extent - c};
      } else if (form == 3 && c > 0) {  // the last c elements: [n - c, n)
        out = {b_.binary(ir::binary_op::sub, dtype::i32, b_.shape(a.param, dim), i32(c)), shape, extent - c, extent};
      } else {
        out = {i32(0), shape, 0, extent};
      }
    } else if (k < 8) {
      std::int64_t n = r_.range(0, max_trips);
      out = {i32(0), i32(n), 0, n};
    } else {
      // A data-dependent trip count, in [0, K).
      std::int64_t n = r_.range(1, max_trips);
      ir::id e = wrap_into(gen(dtype::i32, 1), i32(n));
      out = {i32(0), e, 0, n};
    }
    in_bounds_ = false;
    if (out.hi - out.lo > max_trips) {  // keep the work small
      out.end = b_.binary(ir::binary_op::min, dtype::i32, out.end,
                          b_.binary(ir::binary_op::add, dtype::i32, out.begin, i32(max_trips)));
      out.hi = out.lo + max_trips;
    }
    if (r_.chance(0.1)) {  // bounds of a wider type, narrowed by ir::op::bound (always in range here)
      out.begin = b_.bound(b_.cast(dtype::i64, out.begin), std::numeric_limits<std::int32_t>::max());
      out.end = b_.bound(b_.cast(r_.chance(0.5) ? dtype::i64 : dtype::u32, out.end),
                         std::numeric_limits<std::int32_t>::min());
    }
    return out;
  }

  void serial_loop(bool effects) {
    const int max_trips = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(6, 512 / work_)));
    bounds bd = loop_bounds(max_trips);
    // At the top level this loop is a construct: parallel unless a loop_config serializes it.
    const bool top = top_level();
    const bool configured = top && pick_loop_config();
    ir::id loop = b_.range_for(bd.begin, bd.end);
    const bool serialized = configured && qd::detail::configure_loop(t_, loop);
    b_.push_block(t_.fn.at(loop).block0);
    open_scope();
    indices_.push_back({b_.loop_index_of(loop), bd.lo, std::max(bd.hi, bd.lo)});
    ++nesting_;
    work_ *= std::max<std::int64_t>(1, bd.hi - bd.lo);
    loops_.push_back({!top || serialized});
    block(r_.range(1, 3), effects);
    loops_.pop_back();
    work_ /= std::max<std::int64_t>(1, bd.hi - bd.lo);
    --nesting_;
    indices_.pop_back();
    close_scope();
    b_.pop_block();
  }

  void statement(bool effects) {
    const bool deep = nesting_ >= 3;
    int k = r_.below(100);
    if (k < 18) return define_value();
    if (k < 28) return declare_var();
    if (k < 40) return write_var();
    if (effects && k < 62) return store();
    if (effects && k < 70) return atomic();
    if (effects && prints_ && k < 72) return print();
    if (!deep && k < 80) return branch(effects);
    if (!deep && k < 86) return serial_loop(effects);
    if (!deep && k < 90) return loop_while(effects);
    if (jumps_ && !loops_.empty() && k < 95) return jump();
    if (effects && k < 98 && has_component_arrays()) return vector_array_statement();
    if (vectors_ && k >= 98) return vector_var_statement();
    define_value();
  }

  // --- vectors and matrices (SPEC §11.1), traced by the DSL ----------------------------
  // Values built from generated scalars, reduced back to one with dot, norm, cross,
  // components, products, transpose, determinant, trace, inverse...; arrays of vectors
  // and matrices read and written per component. The DSL unrolls them into the IR.
  template <class T>
  qd::expr<T> scalar_operand(int depth) {
    return qd::expr<T>::from_id(convert(gen(qd::dtype_of<T>, depth), qd::dtype_of<T>));
  }

  std::vector<array> component_arrays(dtype t, int dims, int rows, int cols) const {
    std::vector<array> out;
    for (const auto& a : arrays_) {
      if (a.component_dims != dims || a.spec->type != t) continue;
      const auto& s = a.spec->shape;
      const auto last = static_cast<std::size_t>(a.spec->ndim - 1);
      if (dims == 1 ? s[last] == rows : s[last - 1] == rows && s[last] == cols) out.push_back(a);
    }
    return out;
  }

  // The element of an array of vectors or matrices: indices of its outer dimensions.
  qd::detail::place element_place(const array& a) {
    access x = make_access(a, false, a.spec->ndim - a.component_dims);
    qd::detail::place p;
    p.param = x.param;
    p.flags = x.flags;
    p.rank = static_cast<std::uint8_t>(x.indices.size());
    for (std::size_t d = 0; d < x.indices.size(); ++d) p.indices[d] = x.indices[d];
    c_.features |= feature::vector_arrays;
    return p;
  }

  template <class T, int N>
  qd::vec<T, N> vector_operand(int depth) {
    const int k = r_.below(10);
    if (k < 3) {
      auto vs = component_arrays(qd::dtype_of<T>, 1, N, 0);
      if (!vs.empty()) return qd::vec_ref<T, N>(element_place(r_.pick(vs))).value();
    }
    if (k < 4) return qd::vec<T, N>(scalar_operand<T>(depth));  // every component alike
    return qd::detail::generate_vec<N>([&](int) { return scalar_operand<T>(depth); });
  }

  template <class T, int R, int C>
  qd::mat<T, R, C> matrix_operand() {
    const int k = r_.below(10);
    if (k < 3) {
      auto ms = component_arrays(qd::dtype_of<T>, 2, R, C);
      if (!ms.empty()) return qd::mat_ref<T, R, C>(element_place(r_.pick(ms))).value();
    }
    if constexpr (R == C)
      if (k < 4) {
        const auto s = scalar_operand<T>(0);
        return s * qd::mat<T, R, C>::identity() + qd::mat<T, R, C>::zero();
      }
    if (k < 6) {
      const auto a = vector_operand<T, R>(0);
      const auto b = vector_operand<T, C>(0);
      return qd::outer(a, b);
    }
    return qd::detail::generate_mat<R, C>([&](int, int) { return scalar_operand<T>(0); });
  }

  template <class T, int N>
  ir::id matrix_reduction(int depth) {
    c_.features |= feature::matrices;
    const auto m = matrix_operand<T, N, N>();
    const int i = r_.below(N), j = r_.below(N);
    switch (r_.below(11)) {
      case 0: return qd::determinant(m).id();
      case 1: return qd::trace(m).id();
      case 2: return qd::transpose(m)(i, j).id();
      case 3: {
        const auto n = matrix_operand<T, N, N>();
        return (m * n)(i, j).id();
      }
      case 4: {
        const auto v = vector_operand<T, N>(depth);
        return (m * v)[i].id();
      }
      case 5: {
        const auto n = matrix_operand<T, N, N>();
        return (r_.chance(0.5) ? m + n : m - n)(i, j).id();
      }
      case 6: {
        const auto s = scalar_operand<T>(depth);
        return (r_.chance(0.5) ? s * m : m * s)(i, j).id();
      }
      case 7:
        if constexpr (std::is_floating_point_v<T>) {
          // Well conditioned: a matrix plus a dominant diagonal (the results still compare bitwise).
          const auto d = qd::mat<T, N, N>::identity() * T(8);
          return qd::inverse(m + d)(i, j).id();
        } else {
          return (-m)(i, j).id();
        }
      case 8: return r_.chance(0.5) ? m.row(i)[j].id() : m.col(j)[i].id();
      case 9: {  // a non-square product: (N x 2) * (2 x N)
        const auto a = matrix_operand<T, N, 2>();
        const auto b = matrix_operand<T, 2, N>();
        return (a * b)(i, j).id();
      }
      default: {
        const auto n = matrix_operand<T, N, N>();
        return qd::trace(qd::transpose(m) * n).id();
      }
    }
  }

  template <class T, int N>
  ir::id vector_reduction(int depth) {
    c_.features |= feature::vectors;
    const auto a = vector_operand<T, N>(depth);
    const auto b = vector_operand<T, N>(depth);
    const int i = r_.below(N);
    switch (r_.below(16)) {
      case 0: return qd::dot(a, b).id();
      case 1: return (a + b)[i].id();
      case 2: return (a - b)[i].id();
      case 3: return (a * b)[i].id();
      case 4: return qd::min(a, b)[i].id();
      case 5: return qd::max(a, b)[i].id();
      case 6: return qd::abs(a)[i].id();
      case 7: return (-a)[i].id();
      case 8: {
        const auto s = scalar_operand<T>(depth);
        return (s * a + b * s - a / s)[i].id();
      }
      case 9:
        if constexpr (N == 3)
          return qd::cross(a, b)[i].id();
        else
          return qd::norm_sqr(a).id();
      case 10: return qd::norm(a).id();
      case 11:
        if constexpr (std::is_floating_point_v<T>)
          return qd::normalize(a)[i].id();
        else
          return qd::norm_sqr(b).id();
      case 12: return (a / b)[i].id();
      case 13: {
        const auto o = qd::outer(a, b);
        return o(i, r_.below(N)).id();
      }
      default:  // matrices up to 3 x 3 (a 4 x 4 product or inverse is hundreds of nodes)
        if constexpr (N <= 3)
          return matrix_reduction<T, N>(depth);
        else
          return qd::dot(a, b).id();
    }
  }

  template <class T>
  ir::id vector_expression_of(int depth) {
    switch (r_.below(5)) {
      case 0:
      case 1: return vector_reduction<T, 2>(depth);
      case 2:
      case 3: return vector_reduction<T, 3>(depth);
      default: return vector_reduction<T, 4>(depth);
    }
  }

  // A value of type t computed through vectors or matrices of floats, doubles or i32.
  ir::id vector_expression(dtype t, int depth) {
    ir::id v;
    if (t == dtype::f64 || (qd::is_float(t) && r_.chance(0.2)))
      v = vector_expression_of<double>(depth);
    else if (t == dtype::f32 || r_.chance(0.3))
      v = vector_expression_of<float>(depth);
    else
      v = vector_expression_of<std::int32_t>(depth);
    return convert(v, t);
  }

  // Writes an element of an array of vectors or matrices: assignment, += / -= (an
  // atomic per component in a parallel construct, unless demoted), per-component
  // updates, atomics returning the old vector.
  template <class T, int N>
  void vector_update(const array& a, bool shared) {
    qd::vec_ref<T, N> target(element_place(a));
    const auto v = vector_operand<T, N>(1);
    const int i = r_.below(N);
    // A compound update in a parallel loop is assumed (as documented) to own its buffer.
    const bool compound_ok = !shared || !parallel_;
    switch (r_.below(8)) {
      case 0: target = v; return;
      case 1:
        if (compound_ok)
          target += v;
        else
          target = v;
        return;
      case 2:
        if (compound_ok)
          target -= v;
        else
          target = v;
        return;
      case 3:
        if (compound_ok)
          target[i] += scalar_operand<T>(1);
        else
          target[i] = scalar_operand<T>(1);
        return;
      case 4: {
        const auto old = r_.chance(0.5)   ? qd::atomic_add(target, v)
                         : r_.chance(0.5) ? qd::atomic_min(target, v)
                                          : qd::atomic_max(target, v);
        if (r_.chance(0.4)) {
          ir::id o = old[r_.below(N)].id();
          mark(o, true);
          values_.back().push_back({o, qd::dtype_of<T>});
        }
        return;
      }
      case 5:
        if (!parallel_) {
          target *= scalar_operand<T>(1);
          return;
        }
        [[fallthrough]];
      default: target[i] = scalar_operand<T>(1); return;
    }
  }

  template <class T, int R, int C>
  void matrix_update(const array& a, bool shared) {
    qd::mat_ref<T, R, C> target(element_place(a));
    const auto m = matrix_operand<T, R, C>();
    const bool compound_ok = !shared || !parallel_;
    switch (r_.below(5)) {
      case 0: target = m; return;
      case 1:
        if (compound_ok)
          target += m;
        else
          target = m;
        return;
      case 2: target(r_.below(R), r_.below(C)) = scalar_operand<T>(1); return;
      case 3: {
        auto row = target.row(r_.below(R));
        row = vector_operand<T, C>(1);
        return;
      }
      default: {
        const auto e = qd::determinant(qd::mat<T, 2, 2>(m(0, 0), m(0, 1), m(1, 0), m(1, 1)));
        target(r_.below(R), r_.below(C)) = e;
        return;
      }
    }
  }

  template <class T>
  void component_update(const array& a, bool shared) {
    const auto& s = a.spec->shape;
    const auto last = static_cast<std::size_t>(a.spec->ndim - 1);
    if (a.component_dims == 1) {
      switch (s[last]) {
        case 2: return vector_update<T, 2>(a, shared);
        case 3: return vector_update<T, 3>(a, shared);
        default: return vector_update<T, 4>(a, shared);
      }
    }
    const auto rows = s[last - 1], cols = s[last];
    if (rows == 2 && cols == 2) return matrix_update<T, 2, 2>(a, shared);
    if (rows == 2) return matrix_update<T, 2, 3>(a, shared);
    if (cols == 2) return matrix_update<T, 3, 2>(a, shared);
    return matrix_update<T, 3, 3>(a, shared);
  }

  bool has_component_arrays() const {
    for (const auto& a : arrays_)
      if (a.component_dims > 0) return true;
    return false;
  }

  void vector_array_statement() {
    std::vector<array> cands;
    for (const auto& a : arrays_)
      if (a.component_dims > 0) cands.push_back(a);
    if (cands.empty()) return store();
    const array& a = r_.pick(cands);
    bool shared = false;
    for (const array& other : arrays_) shared |= other.param != a.param && other.spec == a.spec;
    if (a.spec->type == dtype::f64) return component_update<double>(a, shared);
    if (a.spec->type == dtype::i32) return component_update<std::int32_t>(a, shared);
    return component_update<float>(a, shared);
  }

  // qd::var<qd::vec3f>: top-level ones persist across constructs (+= in a parallel loop is
  // an atomic reduction per component); one inside a block is used where declared.
  void vector_var_statement() {
    c_.features |= feature::vector_vars;
    if (vec_vars_.empty() || r_.chance(0.25)) {
      if (top_level()) {
        const auto init = vector_operand<float, 3>(1);
        vec_vars_.push_back(std::make_unique<qd::var<qd::vec3f>>(init));
        return;
      }
      const auto init = vector_operand<float, 3>(1);
      qd::var<qd::vec3f> local(init);
      const auto v = vector_operand<float, 3>(1);
      local += v;
      local[r_.below(3)] = scalar_operand<float>(1);
      values_.back().push_back({qd::dot(local.value(), v).id(), dtype::f32});
      return;
    }
    qd::var<qd::vec3f>& acc = *vec_vars_[static_cast<std::size_t>(r_.below(static_cast<int>(vec_vars_.size())))];
    const int i = r_.below(3);
    switch (r_.below(6)) {
      case 0: {
        const auto v = vector_operand<float, 3>(1);
        acc += v;
        return;
      }
      case 1: {
        const auto v = vector_operand<float, 3>(1);
        acc -= v;
        return;
      }
      case 2: {  // a plain assignment races in a parallel loop
        const auto v = vector_operand<float, 3>(1);
        if (parallel_)
          acc += v;
        else
          acc = v;
        return;
      }
      case 3: {
        const auto s = scalar_operand<float>(1);
        if (parallel_)
          acc[i] += s;
        else
          acc[i] = s;
        return;
      }
      case 4:
        if (!parallel_) {
          acc *= scalar_operand<float>(1);
          return;
        }
        [[fallthrough]];
      default: {
        const auto v = vector_operand<float, 3>(1);
        values_.back().push_back({qd::dot(acc.value(), v).id(), dtype::f32});
        return;
      }
    }
  }

  // --- return values (SPEC §11.3) -----------------------------------------------------
  // Hidden 0-d arrays, one per returned element, written at the end by the DSL.
  template <class R>
  void emit_return(const R& value) {
    const auto first = static_cast<std::int32_t>(t_.fn.params.size());
    std::vector<ir::param_desc> descs;
    qd::detail::append_return_descs<R>(descs);
    for (const auto& d : descs) {
      t_.b.add_param(d);
      buffer_spec s;
      s.type = d.type;
      s.ndim = 0;
      fill(s);
      c_.buffer_of.push_back(static_cast<std::int32_t>(c_.buffers.size()));
      c_.scalar_bits.push_back(0);
      c_.buffers.push_back(std::move(s));  // arrays_ is not used after this
    }
    qd::detail::store_return_value<R>(value, first);
    c_.features |= feature::returns;
  }

  void make_return() {
    switch (r_.below(9)) {
      case 0: return emit_return(scalar_operand<float>(2));
      case 1: return emit_return(scalar_operand<std::int32_t>(2));
      case 2: return emit_return(scalar_operand<double>(2));
      case 3: return emit_return(qd::expr<bool>::from_id(gen_bool(2)));
      case 4: return emit_return(vector_operand<float, 3>(1));
      case 5: return emit_return(vector_operand<std::int32_t, 2>(1));
      case 6: return emit_return(matrix_operand<float, 2, 2>());
      case 7: {
        const auto a = scalar_operand<std::int64_t>(2);
        const auto b = vector_operand<float, 2>(1);
        return emit_return(std::make_tuple(a, b));
      }
      default: {
        const auto a = scalar_operand<std::int32_t>(2);
        const auto b = scalar_operand<double>(2);
        const auto c = qd::expr<bool>::from_id(gen_bool(1));
        return emit_return(std::make_tuple(a, b, c));
      }
    }
  }

  // --- loop control (SPEC §11.4) -------------------------------------------------------
  // qd::break_ / qd::continue_ of the innermost loop, mostly under a random condition.
  // A break_ never leaves a parallel loop (the DSL refuses it).
  void jump(double break_chance = 0.5) {
    const bool brk = loops_.back().breakable && r_.chance(break_chance);
    c_.features |= brk ? feature::break_ : feature::continue_;
    auto emit = [&] { brk ? qd::break_() : qd::continue_(); };
    if (r_.chance(0.15)) return emit();  // what follows in the block is never reached
    ir::id n = b_.if_(gen_bool(1));
    b_.push_block(t_.fn.at(n).block0);
    emit();
    b_.pop_block();
  }

  // A qd::loop_config for the top-level loop about to be emitted, maybe; whether it serializes.
  bool pick_loop_config() {
    if (o_.serial_loops) {
      qd::detail::set_loop_config(qd::loop_config{.serialize = true});
      c_.features |= feature::loop_config | feature::serialized;
      return true;
    }
    if (!r_.chance(o_.loop_config_chance)) return false;
    static const std::vector<int> dims = {0, 1, 32, 64, 128, 256, 1024};
    const bool serialize = r_.chance(0.4);
    qd::detail::set_loop_config(qd::loop_config{.block_dim = r_.pick(dims), .serialize = serialize});
    c_.features |= feature::loop_config | (serialize ? feature::serialized : 0);
    return true;
  }

  // --- the kernel body -----------------------------------------------------------------
  void parallel_loop() {
    ir::id loop;
    std::vector<index_range> ranges;
    std::int64_t trips = 1;
    std::vector<array> nd;
    for (const auto& a : arrays_)
      if (a.spec->ndim >= 2) nd.push_back(a);
    if (!nd.empty() && r_.chance(0.3)) {
      const array& a = r_.pick(nd);
      std::vector<ir::id> extents;
      for (int d = 0; d < a.spec->ndim; ++d) {
        const std::int64_t e = a.spec->shape[static_cast<std::size_t>(d)];
        if (r_.chance(0.8)) {
          extents.push_back(b_.shape(a.param, d));
          ranges.push_back({ir::none, 0, e});
          trips *= e;
        } else {
          std::int64_t n = r_.range(0, 3);
          extents.push_back(i32(n));
          ranges.push_back({ir::none, 0, n});
          trips *= n;
        }
      }
      const bool configured = pick_loop_config();
      loop = b_.range_for_nd(extents);
      if (configured) serialized_ = qd::detail::configure_loop(t_, loop);
    } else {
      bounds bd = loop_bounds(64);
      const bool configured = pick_loop_config();
      loop = b_.range_for(bd.begin, bd.end);
      if (configured) serialized_ = qd::detail::configure_loop(t_, loop);
      ranges.push_back({ir::none, bd.lo, std::max(bd.hi, bd.lo)});
      trips = std::max<std::int64_t>(0, bd.hi - bd.lo);
    }
    b_.push_block(t_.fn.at(loop).block0);
    open_scope();
    for (std::size_t d = 0; d < ranges.size(); ++d) {
      ranges[d].id = b_.loop_index_of(loop, static_cast<std::int32_t>(d));
      indices_.push_back(ranges[d]);
    }
    // A serialized loop runs in order: its top-level variable updates and += are plain.
    parallel_ = !serialized_;
    t_.parallel_depth = parallel_ ? 1 : 0;
    nesting_ = 1;
    work_ = std::max<std::int64_t>(1, trips);
    loops_.push_back({serialized_});
    block(r_.range(1, 5), true);
    // A serialized loop is the one top-level loop a break_ may leave: often give it one.
    if (serialized_ && r_.chance(0.6)) jump(0.75);
    loops_.pop_back();
    work_ = 1;
    nesting_ = 0;
    parallel_ = false;
    serialized_ = false;
    t_.parallel_depth = 0;
    indices_.clear();
    close_scope();
    b_.pop_block();
    ++constructs_;
  }

  void top_level_step() {
    int k = r_.below(100);
    if (k < 30) {  // top-level values and variables
      const int n = r_.range(1, 3);
      for (int s = 0; s < n; ++s) {
        int j = r_.below(10);
        if (vectors_ && j == 0 && r_.chance(0.5))
          vector_var_statement();
        else if (j < 5)
          define_value();
        else if (j < 8)
          declare_var();
        else
          write_var();
      }
      return;
    }
    if (k < 70) return parallel_loop();
    if (k < 85) {  // a serial construct
      int j = r_.below(10);
      nesting_ = 0;
      if (j < 4)
        store();
      else if (j < 6)
        atomic();
      else if (j < 8)
        branch(true);
      else if (j < 9)
        loop_while(true);
      else if (prints_)
        print();
      else
        store();
      ++constructs_;
      return;
    }
    // Pure control flow at the top level: it computes top-level variables.
    if (r_.chance(0.5))
      branch(false);
    else if (r_.chance(0.5))
      loop_while(false);
    else
      serial_loop(false);
  }

  rng r_;
  rng r3_;  // the third wave's choices (generator_options::math_chance ...)
  generator_options o_;
  fuzz_case c_;
  qd::detail::tracer t_;
  ir::builder& b_;
  std::vector<array> arrays_;
  std::vector<std::int32_t> scalars_;
  std::vector<std::vector<value>> values_;  // per open block, innermost last
  std::vector<std::vector<var>> vars_;
  std::vector<index_range> indices_;  // the loop indices in scope
  std::vector<bool> opaque_;          // per node: a run-time value the compiler cannot fold
  bool parallel_ = false;             // inside a top-level loop's body
  bool in_bounds_ = false;            // generating a loop's bounds
  bool prints_ = false;
  bool randoms_ = false;
  int nesting_ = 0;
  std::int64_t work_ = 1;       // trips of the enclosing loops
  bool vectors_ = false;        // this kernel uses vector and matrix expressions
  bool math3_ = false;          // ... the third wave's math
  bool atomics3_ = false;       // ... its atomics
  bool narrow_ = false;         // ... arrays of its narrow types
  bool short_circuit_ = false;  // ... short-circuit && / ||
  bool jumps_ = false;          // ... break_ and continue_
  bool serialized_ = false;     // inside a top-level loop with .serialize = true
  struct open_loop {
    bool breakable;  // not a parallel loop (a top-level range_for without .serialize)
  };
  std::vector<open_loop> loops_;
  std::vector<int> buffer_components_;
  std::vector<std::unique_ptr<qd::var<qd::vec3f>>>
      vec_vars_;  // top-level qd::var<qd::vec3f>  // per buffer: component dimensions (vectors 1, matrices 2)      // the loops around the current block, innermost last
  int constructs_ = 0;
};

}  // namespace detail

fuzz_case generate(std::uint64_t seed, const generator_options& options = {});
#if defined(QD_FUZZ_IMPLEMENTATION)
fuzz_case generate(std::uint64_t seed, const generator_options& options) {
  return detail::kernel_generator(seed, options).run();
}
#endif

// The same kernel and call with other array contents and scalar values (still valid:
// indices and trip counts never depend on data beyond what the kernel bounds itself).
fuzz_case with_other_inputs(const fuzz_case& c, std::uint64_t seed);
#if defined(QD_FUZZ_IMPLEMENTATION)
fuzz_case with_other_inputs(const fuzz_case& c, std::uint64_t seed) {
  fuzz_case out = c;
  rng r(seed);
  auto refill = [&](qd::dtype t, std::vector<unsigned char>& bytes) {
    const auto size = static_cast<std::size_t>(qd::size_of(t));
    for (std::size_t e = 0; e * size < bytes.size(); ++e) {
      std::uint64_t b = detail::interesting_bits(r, t);
      std::memcpy(bytes.data() + e * size, &b, size);
    }
  };
  for (auto& b : out.buffers) {
    refill(b.type, b.data);
    refill(b.type, b.grad_data);
  }
  for (std::size_t p = 0; p < out.fn.params.size(); ++p)
    if (!out.fn.params[p].is_array) out.scalar_bits[p] = detail::interesting_bits(r, out.fn.params[p].type);
  return out;
}
#endif

}  // namespace qd_fuzz
