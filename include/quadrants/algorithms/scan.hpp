// qd::algorithms::exclusive_scan and inclusive_scan: prefix sums of a 1-d array, as host
// calls on qd::ndarray and as constructs inside a kernel (graph kernels included).
#pragma once

#include <cstdint>
#include <type_traits>

#include "quadrants/algorithms/tiles.hpp"
#include "quadrants/runtime/kernel.hpp"

namespace qd::inline v0::algorithms {

namespace detail {

// sums[t] = the sum of tile t of `in` (tiles of `size`; as many as sums has elements).
template <class In, class Sums>
void tile_sums(const In& in, const Sums& sums, const i32& size) {
  using A = typename Sums::value_type;
  const i32 n = in.shape(0);
  qd::range_for(sums.shape(0), [&](i32 t) {
    const tile_range r = range_of_tile(t, size, n);
    var<A> sum = A(0);
    qd::range_for(r.lo, r.hi, [&](i32 i) { sum += in[i]; });
    sums[t] = sum;
  });
}

// offsets = the exclusive prefix sums of `sums`, in order on one thread.
template <class Sums, class Offsets>
void serial_exclusive_scan(const Sums& sums, const Offsets& offsets) {
  using A = typename Offsets::value_type;
  var<A> run = A(0);
  qd::range_for(sums.shape(0), qd::loop_config{.serialize = true}, [&](i32 t) {
    const expr<A> v = sums[t];
    offsets[t] = run;
    run += v;
  });
}

// Each tile of `in` scanned from its offset into `out` (which may be `in`: each element
// is read before it is written).
template <bool Inclusive, class In, class Out, class Offsets>
void scan_tiles(const In& in, const Out& out, const Offsets& offsets, const i32& size) {
  using A = typename Offsets::value_type;
  using T = typename Out::value_type;
  const i32 n = in.shape(0);
  qd::range_for(offsets.shape(0), [&](i32 t) {
    const tile_range r = range_of_tile(t, size, n);
    var<A> run = offsets[t];
    qd::range_for(r.lo, r.hi, [&](i32 i) {
      const expr<A> v = in[i];
      if constexpr (Inclusive) run += v;
      out[i] = qd::cast<T>(run);
      if constexpr (!Inclusive) run += v;
    });
  });
}

template <class T>
const auto& tile_sums_kernel() {
  static const auto k = qd::kernel(
      "qd::algorithms::tile_sums", {"in", "sums", "size"},
      [](types::ndarray<T, 1> in, types::ndarray<sum_type<T>, 1> sums, i32 size) { tile_sums(in, sums, size); });
  return k;
}

template <class A>
const auto& serial_scan_kernel() {
  static const auto k =
      qd::kernel("qd::algorithms::serial_scan", {"sums", "offsets"},
                 [](types::ndarray<A, 1> sums, types::ndarray<A, 1> offsets) { serial_exclusive_scan(sums, offsets); });
  return k;
}

template <class T, bool Inclusive>
const auto& scan_tiles_kernel() {
  static const auto k = qd::kernel(
      Inclusive ? "qd::algorithms::inclusive_scan" : "qd::algorithms::exclusive_scan", {"in", "out", "offsets", "size"},
      [](types::ndarray<T, 1> in, types::ndarray<T, 1> out, types::ndarray<sum_type<T>, 1> offsets, i32 size) {
        scan_tiles<Inclusive>(in, out, offsets, size);
      });
  return k;
}

// The same with one array read and written (in == out: no aliasing for the runtime to check).
template <class T, bool Inclusive>
const auto& scan_tiles_in_place_kernel() {
  static const auto k = qd::kernel(
      Inclusive ? "qd::algorithms::inclusive_scan_in_place" : "qd::algorithms::exclusive_scan_in_place",
      {"data", "offsets", "size"}, [](types::ndarray<T, 1> data, types::ndarray<sum_type<T>, 1> offsets, i32 size) {
        scan_tiles<Inclusive>(data, data, offsets, size);
      });
  return k;
}

// offsets[t] = the sum of sums[0 .. t): in one pass on one thread while there are few
// tiles, else by the tiled scan again (deterministic: the tiling depends on the size).
template <class A>
void exclusive_offsets(const ndarray<A, 1>& sums, ndarray<A, 1>& offsets);

template <class T, bool Inclusive, class In, class Out>
void scan(const In& in, Out& out) {
  const std::int64_t n = in.shape(0);
  if (n == 0) return;
  using A = sum_type<T>;
  const tile_plan plan = plan_tiles(n, std::is_integral_v<T>);
  ndarray<A, 1> offsets(plan.tiles);  // zeroed: one tile starts from 0
  if (plan.tiles > 1) {
    ndarray<A, 1> sums(plan.tiles);
    tile_sums_kernel<T>()(in, sums, plan.size);
    exclusive_offsets(sums, offsets);
  }
  if (same_memory(in, out))
    scan_tiles_in_place_kernel<T, Inclusive>()(out, offsets, plan.size);
  else
    scan_tiles_kernel<T, Inclusive>()(in, out, offsets, plan.size);
}

template <class A>
void exclusive_offsets(const ndarray<A, 1>& sums, ndarray<A, 1>& offsets) {
  if (sums.shape(0) <= 4096)
    serial_scan_kernel<A>()(sums, offsets);
  else
    scan<A, false>(sums, offsets);
}

template <bool Inclusive, class T, class S>
void scan_constructs(const types::ndarray<T, 1>& in, const types::ndarray<T, 1>& out,
                     const types::ndarray<S, 1>& scratch) {
  static_assert(std::is_same_v<S, sum_type<T>>, "the scan's scratch holds sums: f64 for f32, else T");
  const i32 tiles = qd::max(scratch.shape(0), 1);
  const i32 size = (in.shape(0) + tiles - 1) / tiles;
  tile_sums(in, scratch, size);
  serial_exclusive_scan(scratch, scratch);
  scan_tiles<Inclusive>(in, out, scratch, size);
}

template <class T>
constexpr void check_scan_type() {
  static_assert(!std::is_same_v<T, bool> && element_type<T>, "a scan sums numbers: use an integer or floating array");
}

}  // namespace detail

// out[i] = in[0] + ... + in[i - 1] (out[0] = 0). `in` and `out` may be one array. Integer
// sums wrap; f32 sums accumulate in f64 and round once per element. An empty array is
// left as it is.
template <class T>
void exclusive_scan(const ndarray<T, 1>& in, ndarray<T, 1>& out) {
  detail::check_scan_type<T>();
  detail::check_same_length("qd::algorithms::exclusive_scan", "in", in.shape(0), "out", out.shape(0));
  detail::scan<T, false>(in, out);
}

// out[i] = in[0] + ... + in[i]; otherwise as exclusive_scan.
template <class T>
void inclusive_scan(const ndarray<T, 1>& in, ndarray<T, 1>& out) {
  detail::check_scan_type<T>();
  detail::check_same_length("qd::algorithms::inclusive_scan", "in", in.shape(0), "out", out.shape(0));
  detail::scan<T, true>(in, out);
}

template <class T, class U>
requires(!std::is_same_v<T, U>) void exclusive_scan(const ndarray<T, 1>&, ndarray<U, 1>&) {
  static_assert(std::is_same_v<T, U>, "qd::algorithms::exclusive_scan: in and out need the same element type");
}
template <class T, class U>
requires(!std::is_same_v<T, U>) void inclusive_scan(const ndarray<T, 1>&, ndarray<U, 1>&) {
  static_assert(std::is_same_v<T, U>, "qd::algorithms::inclusive_scan: in and out need the same element type");
}

// Inside a kernel (a graph kernel too): the scan as three top-level constructs (partial
// sums, their prefix on one thread, the tiles scanned from it), with `scratch` holding one
// partial sum per tile, of the sum type (f64 for f32, else T). The tiles are
// scratch.shape(0) equal parts of `in`; scratch needs at least one element (with none,
// `out` is not written). `in` and `out` may be one parameter.
template <class T, class S>
void exclusive_scan(const types::ndarray<T, 1>& in, const types::ndarray<T, 1>& out,
                    const types::ndarray<S, 1>& scratch) {
  detail::scan_constructs<false>(in, out, scratch);
}
template <class T, class S>
void inclusive_scan(const types::ndarray<T, 1>& in, const types::ndarray<T, 1>& out,
                    const types::ndarray<S, 1>& scratch) {
  detail::scan_constructs<true>(in, out, scratch);
}

}  // namespace qd::inline v0::algorithms
