// Implementation of backend/reference/interpreter.hpp.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <cstring>
#include <type_traits>
#include <unordered_map>

#include "quadrants/backend/reference/interpreter.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/float_to_int.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/ir/walk.hpp"

namespace qd::inline v0::backend::reference {
namespace detail {

// A value of any dtype: the bytes of its C++ type, low bytes first.
using cell = std::uint64_t;

template <class T>
struct type_tag {
  using type = T;
};

template <class F>
decltype(auto) with_type(dtype t, F&& f) {
  switch (t) {
    case dtype::boolean: return f(type_tag<bool>{});
    case dtype::u8: return f(type_tag<std::uint8_t>{});
    case dtype::i32: return f(type_tag<std::int32_t>{});
    case dtype::u32: return f(type_tag<std::uint32_t>{});
    case dtype::i64: return f(type_tag<std::int64_t>{});
    case dtype::f32: return f(type_tag<float>{});
    case dtype::f64: return f(type_tag<double>{});
    case dtype::i8: return f(type_tag<std::int8_t>{});
    case dtype::i16: return f(type_tag<std::int16_t>{});
    case dtype::u16: return f(type_tag<std::uint16_t>{});
    case dtype::u64: return f(type_tag<std::uint64_t>{});
    case dtype::f16: return f(type_tag<half>{});
  }
  throw internal_error("reference interpreter: unknown dtype");
}

template <class T>
T get(cell c) {
  if constexpr (std::is_same_v<T, bool>) {
    return (c & 0xff) != 0;  // any nonzero byte is true; never an invalid bool
  } else {
    T v;
    std::memcpy(&v, &c, sizeof(T));
    return v;
  }
}

template <class T>
cell put(T v) {
  cell c = 0;
  if constexpr (std::is_same_v<T, bool>) {
    c = v ? 1 : 0;
  } else {
    std::memcpy(&c, &v, sizeof(T));
  }
  return c;
}

template <class T>
inline constexpr bool is_wrapping_signed = std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>;

// C++'s conversion from From to To, as the generated code's casts and assignments perform it.
template <class To, class From>
To convert(From x) {
  if constexpr (std::is_same_v<From, half>) {
    return convert<To>(static_cast<float>(x));  // exact; then as from f32
  } else if constexpr (std::is_same_v<To, half>) {
    if constexpr (std::is_same_v<From, double>)
      return half(x);  // rounded once
    else if constexpr (std::is_same_v<From, bool>)
      return half(x ? 1.0f : 0.0f);
    else
      return half(static_cast<float>(x));  // an integer f16 does not overflow on is exact in f32
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);  // the emitter writes a bool cast as `x != 0`
  } else if constexpr (std::is_same_v<From, bool>) {
    return static_cast<To>(x ? 1 : 0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    return float_to_int<To>(x);  // saturating, NaN gives 0 (docs/dsl.md)
  } else {
    return static_cast<To>(x);  // integer narrowing is modular (C++20), float narrowing rounds
  }
}

// + - * after C++'s integral promotion; i32 and i64 wrap, as the generated code's
// casts through unsigned types make them.
template <class T>
auto wrap_add(T a, T b) {
  if constexpr (std::is_same_v<T, std::int32_t>)
    return static_cast<T>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return static_cast<T>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
  else
    return a + b;
}
template <class T>
auto wrap_sub(T a, T b) {
  if constexpr (std::is_same_v<T, std::int32_t>)
    return static_cast<T>(static_cast<std::uint32_t>(a) - static_cast<std::uint32_t>(b));
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return static_cast<T>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
  else
    return a - b;
}
template <class T>
auto wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T> && sizeof(T) < 4 && !std::is_same_v<T, bool>)  // int's product may overflow
    return static_cast<T>(static_cast<std::uint32_t>(a) * static_cast<std::uint32_t>(b));
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return static_cast<T>(static_cast<std::uint32_t>(a) * static_cast<std::uint32_t>(b));
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return static_cast<T>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
  else if constexpr (std::is_same_v<T, std::uint32_t>)
    return static_cast<T>(static_cast<std::uint64_t>(a) * b);
  else
    return a * b;
}

template <class T>
constexpr int bit_width() {
  return static_cast<int>(sizeof(T) * 8);
}

// The prelude's qd_div, qd_mod, qd_shl, qd_shr, qd_abs.
template <class T>
T int_div(T a, T b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return static_cast<T>(0ull - static_cast<std::uint64_t>(a));
  }
  return static_cast<T>(a / b);
}
template <class T>
T int_mod(T a, T b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return 0;
  }
  return static_cast<T>(a % b);
}
template <class T>
T int_shl(T a, T b) {
  return static_cast<T>(static_cast<std::uint64_t>(a) << (static_cast<std::uint64_t>(b) & (bit_width<T>() - 1)));
}
template <class T>
T int_shr(T a, T b) {
  return static_cast<T>(a >> (static_cast<std::uint64_t>(b) & (bit_width<T>() - 1)));
}
template <class T>
T abs_value(T a) {
  if constexpr (std::is_floating_point_v<T>)
    return std::fabs(a);
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return a < 0 ? static_cast<T>(0u - static_cast<std::uint32_t>(a)) : a;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return a < 0 ? static_cast<T>(0ull - static_cast<std::uint64_t>(a)) : a;
  else
    return a;
}

// Python's // and % (the prelude's qd_floordiv and qd_floormod): integers from C++'s
// truncating ones, floats as CPython's float_divmod.
template <class T>
T floor_mod(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    T m = std::fmod(a, b);
    if (m != 0) {
      if ((b < 0) != (m < 0)) m += b;
    } else {
      m = std::copysign(T(0), b);
    }
    return m;
  } else {
    const T r = int_mod(a, b);
    if constexpr (std::is_signed_v<T>)
      if (r != 0 && ((r < 0) != (b < 0))) return static_cast<T>(r + b);
    return r;
  }
}
template <class T>
T floor_div(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    const T m = std::fmod(a, b);
    T d = (a - m) / b;
    if (m != 0 && (b < 0) != (m < 0)) d -= 1;
    if (d == 0) return std::copysign(T(0), a / b);
    T f = std::floor(d);
    if (d - f > T(0.5)) f += 1;
    return f;
  } else {
    const T q = int_div(a, b), r = int_mod(a, b);
    if constexpr (std::is_signed_v<T>)
      if (r != 0 && ((r < 0) != (b < 0))) return static_cast<T>(q - 1);
    return q;
  }
}

// The unsigned integer holding a T's bits.
template <class T>
using bits_of =
    std::conditional_t<sizeof(T) == 1, std::uint8_t,
                       std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                          std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;

// The value an atomic leaves in memory given the old one: the prelude's qd_rmw_*.
// Integers wrap; float min and max are IEEE minNum/maxNum (a NaN operand never
// replaces a number, a stored NaN is replaced); cas compares bits; f16 computes in f32.
// A task-local variable's update and a reduction's accumulator follow the same rule.
template <class T>
T atomic_result(ir::atomic_op o, T old, T v, T expected = T()) {
  if constexpr (std::is_same_v<T, half>) {
    const float a = old, b = v;
    switch (o) {
      case ir::atomic_op::add: return half(a + b);
      case ir::atomic_op::sub: return half(a - b);
      case ir::atomic_op::mul: return half(a * b);
      case ir::atomic_op::min: return (b < a || a != a) ? v : old;
      case ir::atomic_op::max: return (b > a || a != a) ? v : old;
      case ir::atomic_op::exchange: return v;
      case ir::atomic_op::cas: return old.bits == expected.bits ? v : old;
      case ir::atomic_op::bit_and:
      case ir::atomic_op::bit_or:
      case ir::atomic_op::bit_xor: break;
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    switch (o) {
      case ir::atomic_op::add: return old + v;
      case ir::atomic_op::sub: return old - v;
      case ir::atomic_op::mul: return old * v;
      case ir::atomic_op::min: return (v < old || old != old) ? v : old;
      case ir::atomic_op::max: return (v > old || old != old) ? v : old;
      case ir::atomic_op::exchange: return v;
      case ir::atomic_op::cas: return std::bit_cast<bits_of<T>>(old) == std::bit_cast<bits_of<T>>(expected) ? v : old;
      case ir::atomic_op::bit_and:
      case ir::atomic_op::bit_or:
      case ir::atomic_op::bit_xor: break;
    }
  } else if constexpr (!std::is_same_v<T, bool>) {
    using U = std::uint64_t;
    switch (o) {
      case ir::atomic_op::add: return static_cast<T>(static_cast<U>(old) + static_cast<U>(v));
      case ir::atomic_op::sub: return static_cast<T>(static_cast<U>(old) - static_cast<U>(v));
      case ir::atomic_op::mul: return static_cast<T>(static_cast<U>(old) * static_cast<U>(v));
      case ir::atomic_op::min: return v < old ? v : old;
      case ir::atomic_op::max: return v > old ? v : old;
      case ir::atomic_op::bit_and: return static_cast<T>(old & v);
      case ir::atomic_op::bit_or: return static_cast<T>(old | v);
      case ir::atomic_op::bit_xor: return static_cast<T>(old ^ v);
      case ir::atomic_op::exchange: return v;
      case ir::atomic_op::cas: return old == expected ? v : old;
    }
  }
  throw internal_error(fmt::format("reference interpreter: atomic {} on a type without it", ir::name(o)));
}

// A reduction's accumulator starts here. Of floats' min and max: NaN, minNum's identity.
template <class T>
T reduction_identity(ir::atomic_op o) {
  const bool extremum = o == ir::atomic_op::min || o == ir::atomic_op::max;  // else add or sub: 0
  if constexpr (std::is_same_v<T, half>)
    return extremum ? std::numeric_limits<half>::quiet_NaN() : half(0.0f);
  else if constexpr (std::is_floating_point_v<T>)
    return extremum ? std::numeric_limits<T>::quiet_NaN() : T(0);
  else if (extremum)
    return o == ir::atomic_op::min ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest();
  else
    return T(0);
}

// The prelude's counter-based generator.
QD_FUNC std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
QD_FUNC std::uint64_t rng_init(std::uint64_t stream, std::uint64_t index) {
  return mix64(stream ^ mix64(index + 0x9e3779b97f4a7c15ull));
}

// One run of a task: the values of its nodes (local variables live in their
// declaration's cell) and the random state.
class machine {
 public:
  machine(const ir::function& fn, const launch_context& ctx, const std::vector<std::int32_t>& reduction_of,
          const std::vector<task_interpreter::reduction>& reductions)
      : fn_(fn), ctx_(ctx), reduction_of_(reduction_of), reductions_(reductions), values_(fn.nodes.size(), 0) {}

  void run_serial(bool uses_random) {
    if (uses_random) rng_ = rng_init(ctx_.rng_stream, 0);
    exec_block(0, 0);
  }

  void run_parallel(ir::id loop, bool uses_random) {
    const auto& top = fn_.block(0);
    const std::size_t prologue = top.size() - 1;
    auto run_prologue = [&] {
      for (std::size_t k = 0; k < prologue; ++k) exec(top[k]);
    };
    run_prologue();
    const ir::node& ln = fn_.at(loop);
    const auto rank = static_cast<std::int32_t>(ln.imm);
    std::int64_t base = 0;
    std::int64_t dims[4] = {0, 0, 0, 0};
    if (rank == 1) {
      base = get<std::int32_t>(values_[static_cast<std::size_t>(ln.a)]);
      dims[0] = static_cast<std::int64_t>(get<std::int32_t>(values_[static_cast<std::size_t>(ln.b)])) - base;
    } else {
      for (std::int32_t d = 0; d < rank; ++d)
        dims[d] = get<std::int32_t>(values_[static_cast<std::size_t>(fn_.list(ln, d))]);
    }
    std::int64_t count = 1;
    for (std::int32_t d = 0; d < rank; ++d)
      if (__builtin_mul_overflow(count, dims[d] > 0 ? dims[d] : 0, &count))
        throw user_error("reference backend: a parallel loop's iteration space does not fit in 64 bits");
    if (count <= 0) return;  // as on the CPU: no iteration, no reduction flush
    // The CPU's chunks (codegen/reductions.hpp): each accumulated in order, then combined
    // in the same pairwise tree, so that sums agree bitwise with the CPU.
    const std::int64_t chunk = codegen::reduction_chunk_size(
        count, codegen::cpu_reduction_chunks,
        codegen::has_nested_loop(fn_, ln.block0) ? codegen::nested_reduction_chunk_min : codegen::reduction_chunk_min);
    std::vector<std::vector<cell>> partials;
    const auto& body = fn_.block(ln.block0);
    owners_.clear();
    // A rank-1 chunk's lanes (codegen/reductions.hpp): iteration chunk_start + j goes to
    // lane j % 4 while j < the chunk's length rounded down to 4, the rest to lane 0.
    const bool lanes = rank == 1 && !reductions_.empty();
    std::array<std::vector<cell>, codegen::reduction_lanes> lane;
    std::int64_t chunk_start = 0, laned_end = 0;
    auto identities = [&] {
      std::vector<cell> out;
      for (const auto& r : reductions_)
        out.push_back(with_type(codegen::accumulator_type(r),
                                [&](auto tag) { return put(reduction_identity<typename decltype(tag)::type>(r.op)); }));
      return out;
    };
    // (l0 + l1) + (l2 + l3), into accumulators_.
    auto combine_lanes = [&] {
      for (std::size_t r = 0; r < reductions_.size(); ++r) {
        const cell a = merge(reductions_[r], accumulators_[r], lane[1][r]);
        const cell b = merge(reductions_[r], lane[2][r], lane[3][r]);
        accumulators_[r] = merge(reductions_[r], a, b);
      }
    };
    for (std::int64_t k = 0; k < count; ++k) {
      if (k % chunk == 0 && !reductions_.empty()) {
        if (k > 0) {
          if (lanes) combine_lanes();
          partials.push_back(accumulators_);
        }
        accumulators_ = identities();
        if (lanes) {
          for (auto& l : lane) l = identities();
          chunk_start = k;
          const std::int64_t length = std::min(chunk, count - k);
          laned_end = k + length / codegen::reduction_lanes * codegen::reduction_lanes;
        }
      }
      // Lanes 1-3 take their turn in accumulators_ (lane 0 lives there).
      const std::size_t l =
          lanes && k < laned_end ? static_cast<std::size_t>((k - chunk_start) % codegen::reduction_lanes) : 0;
      if (l != 0) std::swap(accumulators_, lane[l]);
      iteration_ = k;
      if (k > 0) run_prologue();  // each GPU thread evaluates the prologue itself
      std::int32_t ix[4] = {0, 0, 0, 0};
      if (rank == 1) {
        ix[0] = static_cast<std::int32_t>(base + k);
      } else {
        std::int64_t rest = k;
        for (std::int32_t d = rank - 1; d >= 0; --d) {
          ix[d] = static_cast<std::int32_t>(rest % dims[d]);
          rest /= dims[d];
        }
      }
      for (std::int32_t d = 0; d < rank; ++d)
        values_[static_cast<std::size_t>(body[static_cast<std::size_t>(d)])] = put(ix[d]);
      if (uses_random) {
        // The emitter's seed: (i0 - base) * P + i1 * 0x9e37 + i2 * 0x85eb + i3.
        std::uint64_t index = static_cast<std::uint64_t>(static_cast<std::int64_t>(ix[0]) - base) * 0x100000001b3ull +
                              static_cast<std::uint64_t>(static_cast<std::int64_t>(ix[1])) * 0x9e37ull +
                              static_cast<std::uint64_t>(static_cast<std::int64_t>(ix[2])) * 0x85ebull +
                              static_cast<std::uint64_t>(static_cast<std::int64_t>(ix[3]));
        rng_ = rng_init(ctx_.rng_stream, index);
      }
      in_body_ = true;
      exec_block(ln.block0, static_cast<std::size_t>(rank));
      in_body_ = false;
      jump_ = ir::none;  // a continue_ of the parallel loop ends just this iteration
      if (l != 0) std::swap(accumulators_, lane[l]);
    }
    if (reductions_.empty()) return;
    if (lanes) combine_lanes();
    partials.push_back(accumulators_);
    const auto n = partials.size();
    for (std::size_t w = 1; w < n; w *= 2)
      for (std::size_t i = 0; i + w < n; i += 2 * w)
        for (std::size_t r = 0; r < reductions_.size(); ++r)
          partials[i][r] = merge(reductions_[r], partials[i][r], partials[i + w][r]);
    for (std::size_t r = 0; r < reductions_.size(); ++r) {
      const auto& red = reductions_[r];
      const cell total = with_type(red.type, [&](auto tag) {
        return with_type(codegen::accumulator_type(red), [&](auto acc) {
          return put(convert<typename decltype(tag)::type>(get<typename decltype(acc)::type>(partials[0][r])));
        });
      });
      atomic_update(temp(red.slot), red.type, red.op, total, 0);
    }
  }

  // acc (op) v in the accumulator's type, as the generated code's accumulate and merge.
  static cell merge(const task_interpreter::reduction& r, cell acc, cell v) {
    return with_type(codegen::accumulator_type(r), [&](auto tag) -> cell {
      using A = typename decltype(tag)::type;
      // A sub's accumulator adds (the flush subtracts the sum).
      const ir::atomic_op o = r.op == ir::atomic_op::sub ? ir::atomic_op::add : r.op;
      if constexpr (std::is_same_v<A, bool>)
        return acc;
      else
        return put(atomic_result(o, get<A>(acc), get<A>(v)));
    });
  }

 private:
  cell& value(ir::id i) { return values_[static_cast<std::size_t>(i)]; }
  std::vector<cell>& array(ir::id i) {  // a local_array's elements (this thread's)
    if (arrays_.size() <= static_cast<std::size_t>(i)) arrays_.resize(static_cast<std::size_t>(i) + 1);
    return arrays_[static_cast<std::size_t>(i)];
  }
  cell operand_or_zero(ir::id i) { return i == ir::none ? cell{0} : value(i); }

  void exec_block(std::int32_t block, std::size_t skip) {
    const auto& stmts = fn_.block(block);
    for (std::size_t k = skip; k < stmts.size() && jump_ == ir::none; ++k) exec(stmts[k]);
  }

  // After a loop body ran: whether the loop `loop` goes on (a pending continue_ of it
  // is consumed; a break_ of it is consumed and ends it).
  bool next_iteration(ir::id loop) {
    if (jump_ == ir::none) return true;
    if (fn_.at(jump_).a != loop) return false;  // an outer loop's jump unwinds this one too
    const bool go_on = fn_.at(jump_).code == ir::op::continue_;
    jump_ = ir::none;
    return go_on;
  }

  unsigned char* temp(std::int64_t slot) const {
    if (ctx_.temps == nullptr)
      throw internal_error("reference interpreter: a task uses global temporaries but the launch has none");
    return ctx_.temps + slot * 8;
  }

  // An atomic read-modify-write of the element of `type` at p (an array element or a
  // global temporary); the old value. Atomic for real (a compare-and-swap loop on the
  // element's bits): other host threads and concurrent branches update the same memory.
  static cell atomic_update(unsigned char* p, dtype type, ir::atomic_op op, cell v, cell expected) {
    return with_type(type, [&](auto tag) -> cell {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool>) {
        throw internal_error("reference interpreter: an atomic update of a boolean");
      } else {
        using U = bits_of<T>;
        std::atomic_ref<U> element(*reinterpret_cast<U*>(p));
        U seen = element.load(std::memory_order_relaxed);
        for (;;) {
          const T old = std::bit_cast<T>(seen);
          const U now = std::bit_cast<U>(atomic_result(op, old, get<T>(v), get<T>(expected)));
          if (now == seen || element.compare_exchange_weak(seen, now, std::memory_order_relaxed)) return put(old);
        }
      }
    });
  }

  // A loop bound that does not fit in i32: the launch fails as compiled code's does.
  void report_bound(std::int64_t value) {
    if (ctx_.error) {
      if (ctx_.error[0] == 0) {
        ctx_.error[0] = 2;
        ctx_.error[3] = value;
      }
      return;
    }
    throw user_error(fmt::format("reference backend: a range_for bound is {}, which does not fit in qd::i32", value));
  }

  void report(std::int32_t param, std::int32_t dim, std::int64_t index, std::int64_t extent) {
    if (ctx_.check_errors && ctx_.error) {
      if (ctx_.error[0] == 0) {
        ctx_.error[0] = 1;
        ctx_.error[1] = param;
        ctx_.error[2] = dim;
        ctx_.error[3] = index;
        ctx_.error[4] = extent;
      }
      return;
    }
    throw user_error(
        fmt::format("reference backend: index {} is out of range for dimension {} (extent {}) of task "
                    "parameter #{}; launched through a qd::kernel the error names the kernel's parameter",
                    index, dim, extent, param));
  }

  // The element an access names, or null when an index is out of range (reported; the access is skipped).
  unsigned char* element(const ir::node& n) {
    if (static_cast<std::size_t>(n.param) >= ctx_.param_count)
      throw internal_error("reference interpreter: an access names a parameter the launch does not pass");
    const array_abi& a = ctx_.arrays[n.param];
    std::uint64_t linear = 0;
    bool ok = true;
    for (std::int32_t d = 0; d < n.list_size; ++d) {
      ir::id index_node = fn_.list(n, d);
      cell c = value(index_node);
      std::int64_t index = fn_.at(index_node).type == dtype::i64 ? get<std::int64_t>(c) : get<std::int32_t>(c);
      const std::int64_t extent = a.shape[d];
      if (n.flags & ir::access::clamp) index = index < 0 ? 0 : (index >= extent ? extent - 1 : index);
      if (static_cast<std::uint64_t>(index) >= static_cast<std::uint64_t>(extent)) {
        report(n.param, d, index, extent);
        ok = false;
      }
      linear = linear * static_cast<std::uint64_t>(extent) + static_cast<std::uint64_t>(index);
    }
    if (!ok) return nullptr;
    void* base = (n.flags & ir::access::grad) ? a.grad : a.data;
    if (base == nullptr) throw internal_error("reference interpreter: an access to an array without memory");
    return static_cast<unsigned char*>(base) + linear * static_cast<std::uint64_t>(size_of(n.type));
  }

  static cell read(dtype t, const unsigned char* p) {
    cell c = 0;
    std::memcpy(&c, p, static_cast<std::size_t>(size_of(t)));
    if (t == dtype::boolean) c = (c & 0xff) ? 1 : 0;
    return c;
  }
  static void write(dtype t, unsigned char* p, cell c) { std::memcpy(p, &c, static_cast<std::size_t>(size_of(t))); }

  cell unary(const ir::node& n) {
    auto o = static_cast<ir::unary_op>(n.sub);
    cell a = value(n.a);
    if (o == ir::unary_op::bit_cast) return a;  // the same bytes, low first, read as the result type
    const dtype result = n.type;
    return with_type(fn_.at(n.a).type, [&](auto tag) -> cell {
      using T = typename decltype(tag)::type;
      T x = get<T>(a);
      auto out = [&](auto r) {
        return with_type(result, [&](auto rt) { return put(convert<typename decltype(rt)::type>(r)); });
      };
      if constexpr (std::is_same_v<T, half>) {
        // f16 is storage: the tracer computes in f32 (the verifier refuses this)
      } else if constexpr (std::is_floating_point_v<T>) {
        switch (o) {
          case ir::unary_op::neg: return out(-x);
          case ir::unary_op::logical_not: return out(!static_cast<bool>(x));
          case ir::unary_op::abs: return out(std::fabs(x));
          case ir::unary_op::sqrt: return out(std::sqrt(x));
          case ir::unary_op::exp: return out(std::exp(x));
          case ir::unary_op::log: return out(std::log(x));
          case ir::unary_op::sin: return out(std::sin(x));
          case ir::unary_op::cos: return out(std::cos(x));
          case ir::unary_op::tanh: return out(std::tanh(x));
          case ir::unary_op::floor: return out(std::floor(x));
          case ir::unary_op::ceil: return out(std::ceil(x));
          case ir::unary_op::tan: return out(std::tan(x));
          case ir::unary_op::asin: return out(std::asin(x));
          case ir::unary_op::acos: return out(std::acos(x));
          case ir::unary_op::rsqrt: return out(T(1) / std::sqrt(x));
          case ir::unary_op::log2: return out(std::log2(x));
          case ir::unary_op::exp2: return out(std::exp2(x));
          case ir::unary_op::round: return out(std::round(x));
          case ir::unary_op::trunc: return out(std::trunc(x));
          case ir::unary_op::isnan: return out(std::isnan(x));
          case ir::unary_op::isinf: return out(std::isinf(x));
          case ir::unary_op::isfinite: return out(std::isfinite(x));
          case ir::unary_op::bit_not:
          case ir::unary_op::popcnt:
          case ir::unary_op::clz:
          case ir::unary_op::ffs:
          case ir::unary_op::bit_cast: break;
        }
      } else if constexpr (std::is_same_v<T, bool>) {
        if (o == ir::unary_op::neg) return out(-static_cast<int>(x));
        if (o == ir::unary_op::logical_not) return out(!x);
        if (o == ir::unary_op::bit_not) return out(~static_cast<int>(x));
      } else {
        using U = std::make_unsigned_t<T>;
        if (o == ir::unary_op::neg) {
          if constexpr (is_wrapping_signed<T>)
            return out(wrap_sub(T(0), x));
          else
            return out(-x);
        }
        if (o == ir::unary_op::logical_not) return out(!static_cast<bool>(x));
        if (o == ir::unary_op::bit_not) return out(~x);
        if (o == ir::unary_op::abs) return out(abs_value(x));
        if (o == ir::unary_op::popcnt) return out(std::popcount(static_cast<U>(x)));
        if (o == ir::unary_op::clz) return out(std::countl_zero(static_cast<U>(x)));
        if (o == ir::unary_op::ffs) return out(x == 0 ? 0 : std::countr_zero(static_cast<U>(x)) + 1);
      }
      throw internal_error(fmt::format("reference interpreter: unary {} on {}", ir::name(o), name(fn_.at(n.a).type)));
    });
  }

  cell binary(const ir::node& n) {
    auto o = static_cast<ir::binary_op>(n.sub);
    cell ca = value(n.a), cb = value(n.b);
    const dtype result = n.type;
    return with_type(fn_.at(n.a).type, [&](auto tag) -> cell {
      using T = typename decltype(tag)::type;
      auto out = [&](auto r) {
        return with_type(result, [&](auto rt) { return put(convert<typename decltype(rt)::type>(r)); });
      };
      if constexpr (!std::is_same_v<T, half>) {  // f16 is storage: the verifier refuses arithmetic on it
        T a = get<T>(ca), b = get<T>(cb);
        using o_ = ir::binary_op;
        if (o == o_::add) return out(wrap_add(a, b));
        if (o == o_::sub) return out(wrap_sub(a, b));
        if (o == o_::mul) return out(wrap_mul(a, b));
        if (o == o_::min) return out(a < b ? a : b);
        if (o == o_::max) return out(a > b ? a : b);
        if (o == o_::logical_and) return out(static_cast<bool>(a) && static_cast<bool>(b));
        if (o == o_::logical_or) return out(static_cast<bool>(a) || static_cast<bool>(b));
        if (o == o_::eq) return out(a == b);
        if (o == o_::ne) return out(a != b);
        if (o == o_::lt) return out(a < b);
        if (o == o_::le) return out(a <= b);
        if (o == o_::gt) return out(a > b);
        if (o == o_::ge) return out(a >= b);
        if constexpr (std::is_floating_point_v<T>) {
          if (o == o_::div) return out(a / b);
          if (o == o_::pow) return out(std::pow(a, b));
          if (o == o_::atan2) return out(std::atan2(a, b));
          if (o == o_::fmod) return out(std::fmod(a, b));
          if (o == o_::floordiv) return out(floor_div(a, b));
          if (o == o_::floormod) return out(floor_mod(a, b));
        } else if constexpr (std::is_same_v<T, bool>) {
          if (o == o_::bit_and) return out(static_cast<int>(a) & static_cast<int>(b));
          if (o == o_::bit_or) return out(static_cast<int>(a) | static_cast<int>(b));
          if (o == o_::bit_xor) return out(static_cast<int>(a) ^ static_cast<int>(b));
        } else {
          if (o == o_::div) return out(int_div(a, b));
          if (o == o_::mod) return out(int_mod(a, b));
          if (o == o_::bit_and) return out(a & b);
          if (o == o_::bit_or) return out(a | b);
          if (o == o_::bit_xor) return out(a ^ b);
          if (o == o_::shl) return out(int_shl(a, b));
          if (o == o_::shr) return out(int_shr(a, b));
          if (o == o_::floordiv) return out(floor_div(a, b));
          if (o == o_::floormod) return out(floor_mod(a, b));
        }
      }
      throw internal_error(fmt::format("reference interpreter: binary {} on {}", ir::name(o), name(fn_.at(n.a).type)));
    });
  }

  cell constant(const ir::node& n) const {
    return with_type(n.type, [&](auto tag) -> cell {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float>)
        return put(std::bit_cast<float>(static_cast<std::uint32_t>(n.imm)));
      else if constexpr (std::is_same_v<T, double>)
        return put(std::bit_cast<double>(n.imm));
      else if constexpr (std::is_same_v<T, half>)
        return put(half::from_bits(static_cast<std::uint16_t>(n.imm)));
      else if constexpr (std::is_same_v<T, bool>)
        return put(n.imm != 0);
      else
        return put(static_cast<T>(n.imm));
    });
  }

  cell random(dtype t) {
    rng_ += 0x9e3779b97f4a7c15ull;
    const std::uint64_t r = mix64(rng_);
    switch (t) {
      case dtype::f32: return put(static_cast<float>(r >> 40) * 0x1p-24f);
      case dtype::f64: return put(static_cast<double>(r >> 11) * 0x1p-53);
      case dtype::i32: return put(static_cast<std::int32_t>(static_cast<std::uint32_t>(r)));
      case dtype::u32: return put(static_cast<std::uint32_t>(r));
      case dtype::i64: return put(static_cast<std::int64_t>(r));
      case dtype::u8: return put(static_cast<std::uint8_t>(r));
      case dtype::i8: return put(static_cast<std::int8_t>(static_cast<std::uint8_t>(r)));
      case dtype::i16: return put(static_cast<std::int16_t>(static_cast<std::uint16_t>(r)));
      case dtype::u16: return put(static_cast<std::uint16_t>(r));
      case dtype::u64: return put(r);
      case dtype::f16: return put(half(static_cast<float>(r >> 53) * 0x1p-11f));
      case dtype::boolean: break;
    }
    throw internal_error("reference interpreter: a random boolean");
  }

  void print(const ir::node& n) {
    if (n.flags & ir::print_flags::assertion) {  // a failed qd::assert_, reported as compiled code does
      report(-1, -1, n.imm, 0);
      return;
    }
    std::string line;
    for (std::int32_t k = 0; k < n.list_size; ++k) {
      std::int32_t item = fn_.list(n, k);
      if (k) line += ' ';
      if (ir::is_text(item)) {
        const std::string& text = fn_.strings[static_cast<std::size_t>(ir::text_index(item))];
        std::size_t nul = text.find('\0');
        if (nul != std::string::npos) {  // printf's format ends there, newline included
          line.append(text, 0, nul);
          std::fwrite(line.data(), 1, line.size(), stdout);
          return;
        }
        line += text;
        continue;
      }
      char buf[64];
      cell c = value(item);
      switch (fn_.at(item).type) {
        case dtype::f32: std::snprintf(buf, sizeof buf, "%g", static_cast<double>(get<float>(c))); break;
        case dtype::f64: std::snprintf(buf, sizeof buf, "%g", get<double>(c)); break;
        case dtype::i64: std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(get<std::int64_t>(c))); break;
        case dtype::u32: std::snprintf(buf, sizeof buf, "%u", static_cast<unsigned>(get<std::uint32_t>(c))); break;
        case dtype::i32: std::snprintf(buf, sizeof buf, "%d", get<std::int32_t>(c)); break;
        case dtype::u8: std::snprintf(buf, sizeof buf, "%d", static_cast<int>(get<std::uint8_t>(c))); break;
        case dtype::boolean: std::snprintf(buf, sizeof buf, "%d", get<bool>(c) ? 1 : 0); break;
        case dtype::f16:
          std::snprintf(buf, sizeof buf, "%g", static_cast<double>(static_cast<float>(get<half>(c))));
          break;
        case dtype::u64:
          std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(get<std::uint64_t>(c)));
          break;
        case dtype::i8: std::snprintf(buf, sizeof buf, "%d", static_cast<int>(get<std::int8_t>(c))); break;
        case dtype::i16: std::snprintf(buf, sizeof buf, "%d", static_cast<int>(get<std::int16_t>(c))); break;
        case dtype::u16: std::snprintf(buf, sizeof buf, "%d", static_cast<int>(get<std::uint16_t>(c))); break;
      }
      line += buf;
    }
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stdout);
  }

  void serial_loop(ir::id i, const ir::node& n) {
    const auto rank = static_cast<std::int32_t>(n.imm);
    const auto& body = fn_.block(n.block0);
    std::int64_t begin[4] = {0, 0, 0, 0}, end[4] = {0, 0, 0, 0};
    if (rank == 1) {
      begin[0] = get<std::int32_t>(value(n.a));
      end[0] = get<std::int32_t>(value(n.b));
    } else {
      for (std::int32_t d = 0; d < rank; ++d) end[d] = get<std::int32_t>(value(fn_.list(n, d)));
    }
    for (std::int32_t d = 0; d < rank; ++d)
      if (begin[d] >= end[d]) return;
    std::int64_t ix[4] = {begin[0], begin[1], begin[2], begin[3]};
    for (;;) {
      for (std::int32_t d = 0; d < rank; ++d)
        value(body[static_cast<std::size_t>(d)]) = put(static_cast<std::int32_t>(ix[d]));
      exec_block(n.block0, static_cast<std::size_t>(rank));
      if (!next_iteration(i)) break;
      std::int32_t d = rank - 1;  // row-major: the last index moves fastest
      while (d >= 0 && ++ix[d] >= end[d]) {
        ix[d] = begin[d];
        --d;
      }
      if (d < 0) break;
    }
  }

  void exec(ir::id i) {
    const ir::node& n = fn_.at(i);
    switch (n.code) {
      case ir::op::constant: value(i) = constant(n); break;
      case ir::op::arg: {
        if (static_cast<std::size_t>(n.param) >= ctx_.param_count)
          throw internal_error("reference interpreter: a scalar the launch does not pass");
        cell c = 0;
        std::memcpy(&c, &ctx_.scalars[n.param], static_cast<std::size_t>(size_of(n.type)));
        value(i) = n.type == dtype::boolean ? put(c != 0) : c;
        break;
      }
      case ir::op::shape:
        if (static_cast<std::size_t>(n.param) >= ctx_.param_count)
          throw internal_error("reference interpreter: a shape of an array the launch does not pass");
        value(i) = put(static_cast<std::int32_t>(ctx_.arrays[n.param].shape[n.imm]));
        break;
      case ir::op::loop_index: break;  // set by its loop
      case ir::op::unary: value(i) = unary(n); break;
      case ir::op::binary: value(i) = binary(n); break;
      case ir::op::select: value(i) = get<bool>(value(n.a)) ? value(n.b) : value(n.c); break;
      case ir::op::fma:
        value(i) = n.type == dtype::f32
                       ? put(std::fma(get<float>(value(n.a)), get<float>(value(n.b)), get<float>(value(n.c))))
                       : put(std::fma(get<double>(value(n.a)), get<double>(value(n.b)), get<double>(value(n.c))));
        break;
      case ir::op::cast: {
        cell a = value(n.a);
        value(i) = with_type(fn_.at(n.a).type, [&](auto from) {
          auto x = get<typename decltype(from)::type>(a);
          return with_type(n.type, [&](auto to) { return put(convert<typename decltype(to)::type>(x)); });
        });
        break;
      }
      case ir::op::bound: {
        cell a = value(n.a);
        std::int64_t x = with_type(fn_.at(n.a).type, [&](auto from) {
          return static_cast<std::int64_t>(get<typename decltype(from)::type>(a));
        });
        if (x >= std::numeric_limits<std::int32_t>::min() && x <= std::numeric_limits<std::int32_t>::max()) {
          value(i) = put(static_cast<std::int32_t>(x));
        } else {
          report_bound(x);
          value(i) = put(static_cast<std::int32_t>(n.imm));
        }
        break;
      }
      case ir::op::global_load: {
        unsigned char* p = element(n);
        value(i) = p ? read(n.type, p) : 0;
        break;
      }
      case ir::op::global_store: {
        if (unsigned char* p = element(n)) write(n.type, p, value(n.a));
        break;
      }
      case ir::op::global_atomic: {
        unsigned char* p = element(n);
        if (!p) {
          value(i) = 0;
          break;
        }
        if (n.flags & ir::access::owned) check_owner(n, p);
        value(i) = atomic_update(p, n.type, static_cast<ir::atomic_op>(n.sub), value(n.a), operand_or_zero(n.c));
        break;
      }
      case ir::op::local_decl: value(i) = value(n.a); break;
      case ir::op::local_load: value(i) = value(n.a); break;
      case ir::op::local_store: value(n.a) = value(n.b); break;
      case ir::op::local_array: array(i).assign(static_cast<std::size_t>(n.imm), cell{}); break;
      case ir::op::array_load: value(i) = array(n.a).at(static_cast<std::size_t>(get<std::int32_t>(value(n.b)))); break;
      case ir::op::array_store:
        array(n.a).at(static_cast<std::size_t>(get<std::int32_t>(value(n.b)))) = value(n.c);
        break;
      case ir::op::local_atomic: {
        cell old = value(n.a), v = value(n.b), e = operand_or_zero(n.c);
        value(n.a) = with_type(n.type, [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (std::is_same_v<T, bool>)
            return old;  // the verifier refuses boolean atomics
          else
            return put(atomic_result(static_cast<ir::atomic_op>(n.sub), get<T>(old), get<T>(v), get<T>(e)));
        });
        value(i) = old;
        break;
      }
      case ir::op::temp_load: value(i) = read(n.type, temp(n.imm)); break;
      case ir::op::temp_store: write(n.type, temp(n.imm), value(n.a)); break;
      case ir::op::temp_atomic: {
        const std::int32_t r = reduction_of_[static_cast<std::size_t>(i)];
        cell v = value(n.a);
        if (r >= 0 && in_body_) {  // a chunk accumulator, flushed at the end
          const auto& red = reductions_[static_cast<std::size_t>(r)];
          cell& acc = accumulators_[static_cast<std::size_t>(r)];
          const cell widened = with_type(n.type, [&](auto tag) {
            return with_type(codegen::accumulator_type(red), [&](auto to) {
              return put(convert<typename decltype(to)::type>(get<typename decltype(tag)::type>(v)));
            });
          });
          acc = merge(red, acc, widened);
          value(i) = 0;
          break;
        }
        value(i) = atomic_update(temp(n.imm), n.type, static_cast<ir::atomic_op>(n.sub), v, operand_or_zero(n.c));
        break;
      }
      case ir::op::range_for: serial_loop(i, n); break;
      case ir::op::if_: exec_block(get<bool>(value(n.a)) ? n.block0 : n.block1, 0); break;
      case ir::op::while_:
        for (;;) {
          exec_block(n.block0, 0);
          if (!get<bool>(value(n.a))) break;
          exec_block(n.block1, 0);
          if (!next_iteration(i)) break;
        }
        break;
      case ir::op::break_:
      case ir::op::continue_: jump_ = i; break;  // unwinds to its loop (exec_block stops)
      case ir::op::random: value(i) = random(n.type); break;
      case ir::op::print: print(n); break;
      case ir::op::graph_mark: throw internal_error("reference interpreter: a graph mark inside a task");
    }
  }

  const ir::function& fn_;
  const launch_context& ctx_;
  const std::vector<std::int32_t>& reduction_of_;
  const std::vector<task_interpreter::reduction>& reductions_;
  std::vector<cell> values_;
  std::vector<std::vector<cell>> arrays_;  // by local_array node
  std::vector<cell> accumulators_;
  std::uint64_t rng_ = 0;
  bool in_body_ = false;
  std::int64_t iteration_ = -1;                                    // of the parallel loop, while in it
  std::unordered_map<const unsigned char*, std::int64_t> owners_;  // element -> iteration updating it

  // A demoted update (access::owned) runs as the plain read-modify-write it compiles
  // to; here each one also checks the analysis' claim that no other iteration of the
  // loop updates the same element.
  void check_owner(const ir::node& n, const unsigned char* p) {
    if (!in_body_) return;
    auto [it, fresh] = owners_.try_emplace(p, iteration_);
    if (!fresh && it->second != iteration_)
      throw internal_error(
          fmt::format("reference interpreter: an update of parameter #{} was demoted from atomic "
                      "(analysis/atomic_demotion.hpp), but iterations {} and {} both update one "
                      "element",
                      n.param, it->second, iteration_));
  }
  ir::id jump_ = ir::none;  // a break_ or continue_ taken, until its loop consumes it
};

}  // namespace detail

QD_FUNC task_interpreter::task_interpreter(codegen::lowered_task task) : task_(std::move(task)) {
  const ir::function& fn = task_.fn;
  codegen::verify(task_);  // the interpreter relies on well-formed IR, in every build
  reduction_of_.assign(fn.nodes.size(), -1);
  auto draws = [&](std::int32_t block) {
    bool found = false;
    ir::walk(fn, block, [&](ir::id i, int) { found |= fn.at(i).code == ir::op::random; });
    return found;
  };
  if (!task_.parallel) {
    uses_random_ = draws(0);
    return;
  }
  loop_ = fn.block(0).back();
  const std::int32_t body = fn.at(loop_).block0;
  uses_random_ = draws(body);
  // The same accumulators as the compiled backends.
  reductions_ = codegen::find_chunk_reductions(fn, body);
  ir::walk(fn, body, [&](ir::id i, int) {
    reduction_of_[static_cast<std::size_t>(i)] = codegen::reduction_index(reductions_, fn.at(i));
  });
}

QD_FUNC void task_interpreter::run(const launch_context& ctx) const {
  detail::machine m(task_.fn, ctx, reduction_of_, reductions_);
  if (task_.parallel)
    m.run_parallel(loop_, uses_random_);
  else
    m.run_serial(uses_random_);
}

}  // namespace qd::inline v0::backend::reference
