// What the device algorithms share: the tiling of an array (each tile walked in order by
// one iteration of a parallel loop), the type sums accumulate in, and argument checks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "quadrants/base/error.hpp"
#include "quadrants/lang/math.hpp"
#include "quadrants/lang/statements.hpp"
#include "quadrants/runtime/config.hpp"
#include "quadrants/runtime/ndarray.hpp"

namespace qd::inline v0::algorithms::detail {

// Sums of f32 accumulate in f64 (one rounding at the end); other types in themselves
// (integer sums wrap, as C++'s unsigned arithmetic does).
template <class T>
using sum_type = std::conditional_t<std::is_same_v<T, float>, double, T>;

struct tile_plan {
  std::int32_t tiles = 1;
  std::int32_t size = 1;  // elements per tile; the last tile may be shorter
};

// The tiling of n > 0 elements. `exact`: the result does not depend on the tiling
// (integer sums, sorting), so the CPU uses one tile per thread when alone (a single
// pass) and four per thread otherwise. Floating sums use tiles whose size depends on n
// alone, so that every thread count (and the reference backend) gives the same bits.
// GPUs give each of their many threads a short tile.
inline tile_plan plan_tiles(std::int64_t n, bool exact) {
  const settings& s = current_settings();
  std::int64_t size = 0;
  if (s.arch == arch::cpu && exact) {
    const std::int64_t threads = s.cpu_max_num_threads;
    const std::int64_t tiles = threads == 1 ? 1 : 4 * threads;
    size = std::max<std::int64_t>((n + tiles - 1) / tiles, 4096);
  } else if (s.arch == arch::cpu || s.arch == arch::reference) {
    size = std::max<std::int64_t>((n + 255) / 256, 65536);
  } else {
    size = 1024;
  }
  size = std::min(size, n);
  return {static_cast<std::int32_t>((n + size - 1) / size), static_cast<std::int32_t>(size)};
}

// The element range [lo, hi) of tile t (traced), for a loop body.
struct tile_range {
  i32 lo, hi;
};
inline tile_range range_of_tile(const i32& t, const i32& size, const i32& n) {
  const i64 lo = qd::cast<std::int64_t>(t) * qd::cast<std::int64_t>(size);
  return {qd::cast<std::int32_t>(lo),
          qd::cast<std::int32_t>(qd::min(lo + qd::cast<std::int64_t>(size), qd::cast<std::int64_t>(n)))};
}

[[noreturn]] inline void throw_length_mismatch(std::string_view what, std::string_view a, std::int64_t na,
                                               std::string_view b, std::int64_t nb) {
  throw user_error(std::string(what) + ": '" + std::string(a) + "' has " + std::to_string(na) + " elements and '" +
                   std::string(b) + "' " + std::to_string(nb) + "; they need the same length");
}

inline void check_same_length(std::string_view what, std::string_view a, std::int64_t na, std::string_view b,
                              std::int64_t nb) {
  if (na != nb) throw_length_mismatch(what, a, na, b, nb);
}

// An output that must hold `needed` elements.
inline void check_room(std::string_view what, std::string_view name, std::int64_t has, std::int64_t needed) {
  if (has < needed)
    throw user_error(std::string(what) + ": '" + std::string(name) + "' has " + std::to_string(has) +
                     " elements but the result has " + std::to_string(needed) + "; give it at least that many");
}

template <class A, class B>
bool same_memory(const A& a, const B& b) {
  return a.storage().data() == b.storage().data() && a.storage().data() != nullptr;
}

// A view of an array's memory as elements of another type of the same size (the bits of
// floating keys for the radix sort; an array's own memory as its radix keys).
template <class To, class A>
qd::external_array<To, 1> view_as(const A& a, std::string_view what) {
  static_assert(sizeof(To) == sizeof(typename A::value_type), "a view keeps the element size");
  a.storage().check_alive(what);  // a view is not checked at launch
  return qd::external_array<To, 1>(static_cast<To*>(a.storage().data()), {a.shape(0)});
}

}  // namespace qd::inline v0::algorithms::detail
