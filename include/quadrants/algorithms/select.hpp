// qd::algorithms::select: stable compaction of the elements whose flag is not 0, a host call
// on qd::ndarray returning how many were kept.
#pragma once

#include <cstdint>
#include <type_traits>

#include "quadrants/algorithms/scan.hpp"

namespace qd::inline v0::algorithms {

namespace detail {

// counts[t] = how many flags of tile t are not 0.
template <class Flags>
void count_flags(const Flags& flags, const types::ndarray<std::int32_t, 1>& counts, const i32& size) {
  const i32 n = flags.shape(0);
  qd::range_for(counts.shape(0), [&](i32 t) {
    const tile_range r = range_of_tile(t, size, n);
    var<std::int32_t> count = 0;
    qd::range_for(r.lo, r.hi, [&](i32 i) { count += qd::select(flags[i] != 0, 1, 0); });
    counts[t] = count;
  });
}

// Each tile copies its flagged elements, in order, from its offset on.
template <class In, class Flags, class Out>
void compact_tiles(const In& in, const Flags& flags, const Out& out, const types::ndarray<std::int32_t, 1>& offsets,
                   const i32& size) {
  const i32 n = in.shape(0);
  qd::range_for(offsets.shape(0), [&](i32 t) {
    const tile_range r = range_of_tile(t, size, n);
    var<std::int32_t> at = offsets[t];
    qd::range_for(r.lo, r.hi, [&](i32 i) {
      qd::if_(flags[i] != 0, [&] {
        out[at] = in[i];
        at += 1;
      });
    });
  });
}

template <class F>
const auto& count_flags_kernel() {
  static const auto k = qd::kernel("qd::algorithms::select_count", {"flags", "counts", "size"},
                                   [](types::ndarray<F, 1> flags, types::ndarray<std::int32_t, 1> counts, i32 size) {
                                     count_flags(flags, counts, size);
                                   });
  return k;
}

template <class T, class F>
const auto& compact_kernel() {
  static const auto k = qd::kernel(
      "qd::algorithms::select", {"in", "flags", "out", "offsets", "size"},
      [](types::ndarray<T, 1> in, types::ndarray<F, 1> flags, types::ndarray<T, 1> out,
         types::ndarray<std::int32_t, 1> offsets, i32 size) { compact_tiles(in, flags, out, offsets, size); });
  return k;
}

// The sum of the last tile's offset and count: the total, read back.
inline const auto& total_kernel() {
  static const auto k =
      qd::kernel("qd::algorithms::total", {"offsets", "counts"},
                 [](types::ndarray<std::int32_t, 1> offsets, types::ndarray<std::int32_t, 1> counts) -> i32 {
                   const i32 last = offsets.shape(0) - 1;
                   return offsets[last] + counts[last];
                 });
  return k;
}

// The flags' counts and offsets per tile; returns the total. Works on qd::ndarray and
// external views alike.
template <class F, class Flags>
std::int64_t count_and_offsets(const Flags& flags, const tile_plan& plan, ndarray<std::int32_t, 1>& counts,
                               ndarray<std::int32_t, 1>& offsets) {
  count_flags_kernel<F>()(flags, counts, plan.size);
  exclusive_offsets(counts, offsets);
  return total_kernel()(offsets, counts);
}

// select on arrays or views of element type T: the count, after checking that `out` has room.
template <class T, class F, class In, class Flags, class Out>
std::int64_t select(const In& in, const Flags& flags, Out& out, std::int64_t n, std::int64_t out_size) {
  if (n == 0) return 0;
  const tile_plan plan = plan_tiles(n, true);
  ndarray<std::int32_t, 1> counts(plan.tiles), offsets(plan.tiles);
  const std::int64_t total = count_and_offsets<F>(flags, plan, counts, offsets);
  check_room("qd::algorithms::select", "out", out_size, total);
  compact_kernel<T, F>()(in, flags, out, offsets, plan.size);
  return total;
}

}  // namespace detail

// Copies the elements in[i] with flags[i] != 0 to out[0 ..), in order; returns how many.
// `flags` may have any integer type; out needs room for the result (a qd::user_error
// otherwise, before anything is written) and must not be `in`. Empty: returns 0.
template <class T, class F>
std::int64_t select(const ndarray<T, 1>& in, const ndarray<F, 1>& flags, ndarray<T, 1>& out) {
  static_assert(std::is_integral_v<F> && !std::is_same_v<F, bool>,
                "qd::algorithms::select: flags are integers (0: drop)");
  detail::check_same_length("qd::algorithms::select", "in", in.shape(0), "flags", flags.shape(0));
  if (detail::same_memory(in, out))
    throw user_error("qd::algorithms::select: 'out' is 'in'; compaction in place is not supported, give another array");
  return detail::select<T, F>(in, flags, out, in.shape(0), out.shape(0));
}

}  // namespace qd::inline v0::algorithms
