// qd::algorithms::sort and sort_by_key: stable least-significant-digit radix sort of 1-d
// arrays (host calls on qd::ndarray), 8 bits per pass, keys of i32 u32 i64 u64 f32 f64.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

#include "quadrants/algorithms/select.hpp"

namespace qd::inline v0::algorithms {

namespace detail {

enum class key_kind { unsigned_int, signed_int, floating };

// How a key type sorts: the radix key R (an unsigned order of R's bits: u32, or i64 whose
// bits are read as unsigned) and the type of the view the kernels read the keys through
// (floats through their bits).
template <class K>
struct radix_traits {
  static constexpr bool valid = false;
};
template <>
struct radix_traits<std::uint32_t> {
  static constexpr bool valid = true;
  using radix = std::uint32_t;
  using view = std::uint32_t;
  static constexpr key_kind kind = key_kind::unsigned_int;
};
template <>
struct radix_traits<std::int32_t> {
  static constexpr bool valid = true;
  using radix = std::uint32_t;
  using view = std::int32_t;
  static constexpr key_kind kind = key_kind::signed_int;
};
template <>
struct radix_traits<float> {
  static constexpr bool valid = true;
  using radix = std::uint32_t;
  using view = std::uint32_t;
  static constexpr key_kind kind = key_kind::floating;
};
template <>
struct radix_traits<std::int64_t> {
  static constexpr bool valid = true;
  using radix = std::int64_t;
  using view = std::int64_t;
  static constexpr key_kind kind = key_kind::signed_int;
};
template <>
struct radix_traits<double> {
  static constexpr bool valid = true;
  using radix = std::int64_t;
  using view = std::int64_t;
  static constexpr key_kind kind = key_kind::floating;
};
// u64 keys sort as the bits of an i64 read unsigned, where the language has u64 arrays.
template <class K>
requires(std::is_same_v<K, std::uint64_t>&& element_type<std::uint64_t>) struct radix_traits<K> {
  static constexpr bool valid = true;
  using radix = std::int64_t;
  using view = std::int64_t;
  static constexpr key_kind kind = key_kind::unsigned_int;
};

// The key as R, whose unsigned order is the key's order: signed integers with the sign
// bit flipped; floats by value (-0.0 before +0.0; negatives with every bit flipped), every
// NaN as the largest key (the NaNs go last, in their order; their bits are put back after).
template <key_kind Kind, class V>
auto to_radix(const expr<V>& k) {
  if constexpr (std::is_same_v<V, std::uint32_t> || std::is_same_v<V, std::int32_t>) {
    const expr<std::uint32_t> b = qd::cast<std::uint32_t>(k);
    if constexpr (Kind == key_kind::unsigned_int)
      return b;
    else if constexpr (Kind == key_kind::signed_int)
      return b ^ 0x80000000u;
    else {
      const expr<std::uint32_t> flipped = qd::select((b >> 31u) != 0u, ~b, b ^ 0x80000000u);
      return qd::select((b & 0x7fffffffu) > 0x7f800000u, expr<std::uint32_t>(0xffffffffu), flipped);
    }
  } else {
    constexpr std::int64_t sign = std::numeric_limits<std::int64_t>::min();
    if constexpr (Kind == key_kind::unsigned_int)
      return k;
    else if constexpr (Kind == key_kind::signed_int)
      return k ^ sign;
    else {
      const expr<std::int64_t> flipped = qd::select(k < 0, ~k, k ^ sign);
      return qd::select((k & std::numeric_limits<std::int64_t>::max()) > std::int64_t{0x7ff0000000000000},
                        expr<std::int64_t>(-1), flipped);
    }
  }
}

// The inverse of to_radix (a NaN comes back as the NaN of all-ones bits).
template <key_kind Kind, class V, class R>
expr<V> from_radix(const expr<R>& r) {
  if constexpr (std::is_same_v<R, std::uint32_t>) {
    if constexpr (Kind == key_kind::unsigned_int)
      return qd::cast<V>(r);
    else if constexpr (Kind == key_kind::signed_int)
      return qd::cast<V>(r ^ 0x80000000u);
    else
      return qd::cast<V>(qd::select((r >> 31u) != 0u, r ^ 0x80000000u, ~r));
  } else {
    constexpr std::int64_t sign = std::numeric_limits<std::int64_t>::min();
    if constexpr (Kind == key_kind::unsigned_int)
      return r;
    else if constexpr (Kind == key_kind::signed_int)
      return r ^ sign;
    else
      return qd::select(r < 0, r ^ sign, ~r);
  }
}

template <class R>
i32 digit_of(const expr<R>& r, const i32& shift) {
  return qd::cast<std::int32_t>((r >> qd::cast<R>(shift)) & R(255));
}

// hist(t, d) = how many keys of tile t have digit d (at `shift`). First pass: `src` holds
// the keys themselves, else radix keys.
template <key_kind Kind, bool First, class Src, class R>
void histogram(const Src& src, const types::ndarray<std::int32_t, 2>& hist, const i32& size, const i32& shift) {
  const i32 n = src.shape(0);
  qd::range_for(hist.shape(0), [&](i32 t) {
    qd::range_for(256, [&](i32 d) { hist(t, d) = 0; });
    const tile_range r = range_of_tile(t, size, n);
    qd::range_for(r.lo, r.hi, [&](i32 i) {
      const expr<typename Src::value_type> key = src[i];
      expr<R> radix = R(0);
      if constexpr (First)
        radix = to_radix<Kind>(key);
      else
        radix = key;
      hist(t, digit_of(radix, shift)) += 1;
    });
  });
}

// hist(t, d) becomes where tile t's first key of digit d goes, less base[d]; base[d] the
// place of digit d's first key: digits in order, tiles in order within a digit.
inline void digit_offsets(const types::ndarray<std::int32_t, 2>& hist, const types::ndarray<std::int32_t, 1>& base) {
  qd::range_for(256, [&](i32 d) {
    var<std::int32_t> run = 0;
    qd::range_for(hist.shape(0), [&](i32 t) {
      const i32 count = hist(t, d);
      hist(t, d) = run;
      run += count;
    });
    base[d] = run;
  });
  var<std::int32_t> total = 0;
  qd::range_for(256, qd::loop_config{.serialize = true}, [&](i32 d) {
    const i32 count = base[d];
    base[d] = total;
    total += count;
  });
}

// Each tile moves its keys (and values), in order, to their places by digit: stable.
// Last pass: the keys go back to their own type.
template <key_kind Kind, bool First, bool Last, bool Values, class Src, class Dst, class VSrc, class VDst, class R>
void scatter(const Src& src, const Dst& dst, const VSrc& vsrc, const VDst& vdst,
             const types::ndarray<std::int32_t, 2>& hist, const types::ndarray<std::int32_t, 1>& base, const i32& size,
             const i32& shift) {
  const i32 n = src.shape(0);
  qd::range_for(hist.shape(0), [&](i32 t) {
    const tile_range r = range_of_tile(t, size, n);
    qd::range_for(r.lo, r.hi, [&](i32 i) {
      const expr<typename Src::value_type> key = src[i];
      expr<R> radix = R(0);
      if constexpr (First)
        radix = to_radix<Kind>(key);
      else
        radix = key;
      const i32 d = digit_of(radix, shift);
      const i32 at = hist(t, d) + base[d];
      hist(t, d) += 1;
      if constexpr (Last)
        dst[at] = from_radix<Kind, typename Dst::value_type>(radix);
      else
        dst[at] = radix;
      if constexpr (Values) vdst[at] = vsrc[i];
    });
  });
}

template <class K>
using radix_of = typename radix_traits<K>::radix;
template <class K>
using view_of = typename radix_traits<K>::view;

template <class K, bool First>
const auto& histogram_kernel() {
  using Src = std::conditional_t<First, view_of<K>, radix_of<K>>;
  static const auto k =
      qd::kernel("qd::algorithms::sort_histogram", {"keys", "hist", "size", "shift"},
                 [](types::ndarray<Src, 1> src, types::ndarray<std::int32_t, 2> hist, i32 size, i32 shift) {
                   histogram<radix_traits<K>::kind, First, types::ndarray<Src, 1>, radix_of<K>>(src, hist, size, shift);
                 });
  return k;
}

inline const auto& digit_offsets_kernel() {
  static const auto k = qd::kernel(
      "qd::algorithms::sort_offsets", {"hist", "base"},
      [](types::ndarray<std::int32_t, 2> hist, types::ndarray<std::int32_t, 1> base) { digit_offsets(hist, base); });
  return k;
}

// V: the values' type (sort without values passes a dummy array that is never touched).
template <class K, class V, bool Values, bool First, bool Last>
const auto& scatter_kernel() {
  using Src = std::conditional_t<First, view_of<K>, radix_of<K>>;
  using Dst = std::conditional_t<Last, view_of<K>, radix_of<K>>;
  static const auto k = qd::kernel(
      "qd::algorithms::sort_scatter", {"keys", "out_keys", "values", "out_values", "hist", "base", "size", "shift"},
      [](types::ndarray<Src, 1> src, types::ndarray<Dst, 1> dst, types::ndarray<V, 1> vsrc, types::ndarray<V, 1> vdst,
         types::ndarray<std::int32_t, 2> hist, types::ndarray<std::int32_t, 1> base, i32 size, i32 shift) {
        scatter<radix_traits<K>::kind, First, Last, Values, types::ndarray<Src, 1>, types::ndarray<Dst, 1>,
                types::ndarray<V, 1>, types::ndarray<V, 1>, radix_of<K>>(src, dst, vsrc, vdst, hist, base, size, shift);
      });
  return k;
}

template <class T>
const auto& copy_kernel() {
  static const auto k = qd::kernel("qd::algorithms::copy", {"from", "to", "at"},
                                   [](types::ndarray<T, 1> from, types::ndarray<T, 1> to, i32 at) {
                                     qd::range_for(from.shape(0), [&](i32 i) { to[at + i] = from[i]; });
                                   });
  return k;
}

// flags[i] = whether bits[i] are a NaN's; returns how many.
template <class B>
const auto& nan_flags_kernel() {
  static const auto k =
      qd::kernel("qd::algorithms::sort_nans", {"bits", "flags"},
                 [](types::ndarray<B, 1> bits, types::ndarray<std::int32_t, 1> flags) -> i32 {
                   var<std::int32_t> count = 0;
                   qd::range_for(bits.shape(0), [&](i32 i) {
                     const expr<B> b = bits[i];
                     expr<bool> nan = false;
                     if constexpr (std::is_same_v<B, std::uint32_t>)
                       nan = (b & 0x7fffffffu) > 0x7f800000u;
                     else
                       nan = (b & std::numeric_limits<std::int64_t>::max()) > std::int64_t{0x7ff0000000000000};
                     flags[i] = qd::select(nan, 1, 0);
                     count += qd::select(nan, 1, 0);
                   });
                   return count;
                 });
  return k;
}

// After an odd number of passes the keys are radix keys in the scratch array: back they go.
template <class K, class V, bool Values>
const auto& from_radix_kernel() {
  static const auto k = qd::kernel("qd::algorithms::sort_copy_back", {"radix", "keys", "scratch_values", "values"},
                                   [](types::ndarray<radix_of<K>, 1> radix, types::ndarray<view_of<K>, 1> keys,
                                      types::ndarray<V, 1> vsrc, types::ndarray<V, 1> vdst) {
                                     qd::range_for(radix.shape(0), [&](i32 i) {
                                       keys[i] =
                                           from_radix<radix_traits<K>::kind, view_of<K>>(expr<radix_of<K>>(radix[i]));
                                       if constexpr (Values) vdst[i] = vsrc[i];
                                     });
                                   });
  return k;
}

// The radix sort of `keys` (and `values`, moved with them) over the low `bits` bits of
// the radix keys. Pass p reads the arrays (p even; the first reads the keys themselves)
// or one scratch array each (p odd) and writes the other; the last pass of an even count
// writes the keys back in their own type, an odd count ends with a copy back.
template <class K, class V, bool Values>
void radix_sort(ndarray<K, 1>& keys, ndarray<V, 1>& values, int bits) {
  using R = radix_of<K>;
  using W = view_of<K>;
  const std::int64_t n = keys.shape(0);
  if (n <= 1) return;
  constexpr const char* what = "qd::algorithms::sort";
  const auto key_view = view_as<W>(keys, what);
  const auto key_radix = view_as<R>(keys, what);
  const auto value_view = view_as<V>(values, what);
  // NaN keys' bits in order, put back at the end (the sort carries every NaN as the one
  // all-ones radix key, so the NaNs end last in their order).
  std::int64_t nans = 0;
  std::optional<ndarray<W, 1>> nan_bits;
  if constexpr (radix_traits<K>::kind == key_kind::floating) {
    ndarray<std::int32_t, 1> flags(n);
    nans = nan_flags_kernel<W>()(key_view, flags);
    if (nans > 0) {
      nan_bits.emplace(nans);
      auto out = view_as<W>(*nan_bits, what);
      select<W, std::int32_t>(key_view, flags, out, n, nans);
    }
  }
  const tile_plan plan = plan_tiles(n, true);
  ndarray<std::int32_t, 2> hist({plan.tiles, 256});
  ndarray<std::int32_t, 1> base(256);
  ndarray<R, 1> scratch(n);
  std::optional<ndarray<V, 1>> value_scratch;
  if constexpr (Values) value_scratch.emplace(n);
  const auto value_other = Values ? view_as<V>(*value_scratch, what) : value_view;
  const int passes = (bits + 7) / 8;
  for (int p = 0; p < passes; ++p) {
    const std::int32_t shift = 8 * p;
    const bool first = p == 0, from_arrays = p % 2 == 0;
    const bool last = p == passes - 1 && !from_arrays;  // writes the keys in their own type
    if (first)
      histogram_kernel<K, true>()(key_view, hist, plan.size, shift);
    else if (from_arrays)
      histogram_kernel<K, false>()(key_radix, hist, plan.size, shift);
    else
      histogram_kernel<K, false>()(scratch, hist, plan.size, shift);
    digit_offsets_kernel()(hist, base);
    const auto& vin = from_arrays ? value_view : value_other;
    const auto& vout = from_arrays ? value_other : value_view;
    if (first)
      scatter_kernel<K, V, Values, true, false>()(key_view, scratch, vin, vout, hist, base, plan.size, shift);
    else if (last)
      scatter_kernel<K, V, Values, false, true>()(scratch, key_view, vin, vout, hist, base, plan.size, shift);
    else if (from_arrays)
      scatter_kernel<K, V, Values, false, false>()(key_radix, scratch, vin, vout, hist, base, plan.size, shift);
    else
      scatter_kernel<K, V, Values, false, false>()(scratch, key_radix, vin, vout, hist, base, plan.size, shift);
  }
  if (passes % 2 == 1) from_radix_kernel<K, V, Values>()(scratch, key_view, value_other, value_view);
  if (nans > 0) copy_kernel<W>()(view_as<W>(*nan_bits, what), key_view, static_cast<std::int32_t>(n - nans));
}

template <class K>
constexpr void check_key_type() {
  static_assert(radix_traits<K>::valid,
                "qd::algorithms::sort sorts keys of std::int32_t, std::uint32_t, std::int64_t, std::uint64_t, float "
                "or double");
}

constexpr int key_bits(std::size_t bytes) { return static_cast<int>(bytes) * 8; }

}  // namespace detail

// Sorts the keys in place, ascending and stable: integers by value, floats by value with
// -0.0 before +0.0 and every NaN last (in their original order, bits unchanged).
template <class K>
void sort(ndarray<K, 1>& keys) {
  detail::check_key_type<K>();
  ndarray<std::int32_t, 1> none(1);  // no values: a placeholder the kernels never touch
  detail::radix_sort<K, std::int32_t, false>(keys, none, detail::key_bits(sizeof(K)));
}

// Sorts keys as sort() does and moves each value with its key (values of any element
// type, one per key: a qd::user_error otherwise).
template <class K, class V>
void sort_by_key(ndarray<K, 1>& keys, ndarray<V, 1>& values) {
  detail::check_key_type<K>();
  detail::check_same_length("qd::algorithms::sort_by_key", "keys", keys.shape(0), "values", values.shape(0));
  if (detail::same_memory(keys, values))
    throw user_error("qd::algorithms::sort_by_key: 'keys' and 'values' are one array; give two");
  detail::radix_sort<K, V, true>(keys, values, detail::key_bits(sizeof(K)));
}

}  // namespace qd::inline v0::algorithms
