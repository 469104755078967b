// qd::algorithms::reduce_by_key: each run of equal adjacent keys becomes one key and the
// sum of its values, a host call on qd::ndarray returning the number of runs.
#pragma once

#include <cstdint>
#include <type_traits>

#include "quadrants/algorithms/select.hpp"

namespace qd::inline v0::algorithms {

namespace detail {

// Whether element i starts a run (the first, or its key differs from the one before).
template <class Keys>
expr<bool> run_head(const Keys& keys, const i32& i) {
  const expr<bool> first = i == 0;
  return first || keys[qd::max(i - 1, 0)] != keys[i];
}

// counts[t] = the runs that start in tile t.
template <class Keys>
void count_heads(const Keys& keys, const types::ndarray<std::int32_t, 1>& counts, const i32& size) {
  const i32 n = keys.shape(0);
  qd::range_for(counts.shape(0), [&](i32 t) {
    const tile_range r = range_of_tile(t, size, n);
    var<std::int32_t> count = 0;
    qd::range_for(r.lo, r.hi, [&](i32 i) { count += qd::select(run_head(keys, i), 1, 0); });
    counts[t] = count;
  });
}

// Each tile sums its segments in order: a run starting in the tile is written at its
// index (the sum so far, when it goes on into the next tiles); the segment before the
// tile's first head continues a run of an earlier tile, and its sum goes to carry[t].
template <class Keys, class Values, class OutKeys, class OutValues, class Carry>
void sum_runs(const Keys& keys, const Values& values, const OutKeys& out_keys, const OutValues& out_values,
              const types::ndarray<std::int32_t, 1>& offsets, const Carry& carry, const i32& size) {
  using A = typename Carry::value_type;
  using V = typename OutValues::value_type;
  const i32 n = keys.shape(0);
  qd::range_for(offsets.shape(0), [&](i32 t) {
    const tile_range r = range_of_tile(t, size, n);
    var<std::int32_t> run = offsets[t] - 1;
    var<std::int32_t> own = 0;  // the current run started in this tile
    var<A> sum = A(0);
    carry[t] = A(0);
    qd::range_for(r.lo, r.hi, [&](i32 i) {
      qd::if_(run_head(keys, i), [&] {
        qd::if_(i > r.lo,
                [&] { qd::if_(own != 0, [&] { out_values[run] = qd::cast<V>(sum); }).else_([&] { carry[t] = sum; }); });
        run += 1;
        out_keys[run] = keys[i];
        sum = A(0);
        own = 1;
      });
      sum += values[i];
    });
    qd::if_(own != 0, [&] { out_values[run] = qd::cast<V>(sum); }).else_([&] { carry[t] = sum; });
  });
}

// In tile order, on one thread: each tile's leading segment added to the run it continues.
template <class Keys, class OutValues, class Carry>
void add_carries(const Keys& keys, const OutValues& out_values, const types::ndarray<std::int32_t, 1>& offsets,
                 const Carry& carry, const i32& size) {
  using V = typename OutValues::value_type;
  qd::range_for(offsets.shape(0), qd::loop_config{.serialize = true}, [&](i32 t) {
    const i32 lo = qd::cast<std::int32_t>(qd::cast<std::int64_t>(t) * qd::cast<std::int64_t>(size));
    qd::if_(t > 0, [&] {
      qd::if_(!run_head(keys, lo), [&] {
        const i32 at = offsets[t] - 1;
        out_values[at] = qd::cast<V>(qd::cast<typename Carry::value_type>(out_values[at]) + carry[t]);
      });
    });
  });
}

template <class K>
const auto& count_heads_kernel() {
  static const auto k = qd::kernel("qd::algorithms::reduce_by_key_count", {"keys", "counts", "size"},
                                   [](types::ndarray<K, 1> keys, types::ndarray<std::int32_t, 1> counts, i32 size) {
                                     count_heads(keys, counts, size);
                                   });
  return k;
}

template <class K, class V>
const auto& sum_runs_kernel() {
  static const auto k = qd::kernel(
      "qd::algorithms::reduce_by_key", {"keys", "values", "out_keys", "out_values", "offsets", "carry", "size"},
      [](types::ndarray<K, 1> keys, types::ndarray<V, 1> values, types::ndarray<K, 1> out_keys,
         types::ndarray<V, 1> out_values, types::ndarray<std::int32_t, 1> offsets, types::ndarray<sum_type<V>, 1> carry,
         i32 size) {
        sum_runs(keys, values, out_keys, out_values, offsets, carry, size);
        add_carries(keys, out_values, offsets, carry, size);
      });
  return k;
}

}  // namespace detail

// For each maximal run of equal adjacent keys: out_keys[r] = its key, out_values[r] = the
// sum of its values (f32 in f64; in order within a tile, then tile by tile: the same bits
// for any thread count). Returns the number of runs. Keys compare with ==, so each NaN
// key is a run of its own and -0.0 joins +0.0 (the run keeps its first key). keys and
// values need one length; the outputs room for the runs (a qd::user_error otherwise,
// before anything is written). Empty: returns 0.
template <class K, class V>
std::int64_t reduce_by_key(const ndarray<K, 1>& keys, const ndarray<V, 1>& values, ndarray<K, 1>& out_keys,
                           ndarray<V, 1>& out_values) {
  static_assert(!std::is_same_v<V, bool>, "qd::algorithms::reduce_by_key sums the values: use numbers");
  constexpr const char* what = "qd::algorithms::reduce_by_key";
  detail::check_same_length(what, "keys", keys.shape(0), "values", values.shape(0));
  const std::int64_t n = keys.shape(0);
  if (n == 0) return 0;
  if (detail::same_memory(keys, out_keys) || detail::same_memory(values, out_values))
    throw user_error(std::string(what) + ": an output is also an input; give separate arrays");
  const detail::tile_plan plan = detail::plan_tiles(n, false);
  ndarray<std::int32_t, 1> counts(plan.tiles), offsets(plan.tiles);
  detail::count_heads_kernel<K>()(keys, counts, plan.size);
  detail::exclusive_offsets(counts, offsets);
  const std::int64_t runs = detail::total_kernel()(offsets, counts);
  detail::check_room(what, "out_keys", out_keys.shape(0), runs);
  detail::check_room(what, "out_values", out_values.shape(0), runs);
  ndarray<detail::sum_type<V>, 1> carry(plan.tiles);
  detail::sum_runs_kernel<K, V>()(keys, values, out_keys, out_values, offsets, carry, plan.size);
  return runs;
}

}  // namespace qd::inline v0::algorithms
