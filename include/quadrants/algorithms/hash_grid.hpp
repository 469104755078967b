// qd::hash_grid: positions binned by cell (a radix sort by cell, then each cell's range),
// for fixed-radius neighbour queries in kernels (qd::for_each_neighbor, qd::types::hash_grid).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "quadrants/algorithms/sort.hpp"
#include "quadrants/lang/hash_grid_param.hpp"
#include "quadrants/runtime/vec_ndarray.hpp"

namespace qd::inline v0 {

namespace detail {

// What a kernel's qd::types::hash_grid parameter is bound to, member by member.
struct hash_grid_arguments {
  const ndarray<float, 2>& points;
  const ndarray<std::int32_t, 1>& index;
  const ndarray<std::int32_t, 1>& cell_begin;
  const ndarray<std::int32_t, 1>& cell_end;
  float inv_cell_size;
  std::int32_t dim;
};

// keys[i] = the wrapped cell of positions[i]; index[i] = i.
inline const auto& hash_grid_keys_kernel() {
  static const auto k = qd::kernel("qd::hash_grid::build_keys", {"positions", "keys", "index", "inv_cell_size", "dim"},
                                   [](types::ndarray<vec3f, 1> positions, types::ndarray<std::int32_t, 1> keys,
                                      types::ndarray<std::int32_t, 1> index, f32 inv_cell_size, i32 dim) {
                                     qd::range_for(positions.shape(0), [&](i32 i) {
                                       const vec3f p = positions[i];
                                       const i32 mask = dim - 1;
                                       auto cell = [&](const f32& x) {
                                         return qd::cast<std::int32_t>(qd::floor(x * inv_cell_size)) & mask;
                                       };
                                       keys[i] = cell(p.x()) + dim * (cell(p.y()) + dim * cell(p.z()));
                                       index[i] = i;
                                     });
                                   });
  return k;
}

// Each cell's slots [begin, end) from the sorted keys, and the positions in slot order.
inline const auto& hash_grid_cells_kernel() {
  static const auto k =
      qd::kernel("qd::hash_grid::build_cells", {"positions", "keys", "index", "points", "cell_begin", "cell_end"},
                 [](types::ndarray<vec3f, 1> positions, types::ndarray<std::int32_t, 1> keys,
                    types::ndarray<std::int32_t, 1> index, types::ndarray<float, 2> points,
                    types::ndarray<std::int32_t, 1> cell_begin, types::ndarray<std::int32_t, 1> cell_end) {
                   const i32 n = keys.shape(0);
                   qd::range_for(n, [&](i32 s) {
                     const i32 key = keys[s];
                     const expr<bool> first = s == 0;
                     const expr<bool> last = s == n - 1;
                     qd::if_(first || keys[qd::max(s - 1, 0)] != key, [&] { cell_begin[key] = s; });
                     qd::if_(last || keys[qd::min(s + 1, n - 1)] != key, [&] { cell_end[key] = s + 1; });
                     const vec3f p = positions[index[s]];
                     for (int c = 0; c < 3; ++c) points(s, c) = p[c];
                   });
                 });
  return k;
}

}  // namespace detail

// Positions binned by cells of `cell_size` (a grid of dim^3 cells whose coordinates wrap
// around, dim a power of two from 8 to 128 chosen by the number of positions), rebuilt by
// build(); kernels take it as a qd::types::hash_grid parameter and query it with
// qd::for_each_neighbor. The grid keeps its own copy of the positions of the last build.
class hash_grid {
 public:
  // A cell_size that is not a positive finite number is a qd::user_error.
  explicit hash_grid(float cell_size) : cell_size_(cell_size) {
    if (!(cell_size > 0.0f) || !std::isfinite(cell_size) || !std::isfinite(1.0f / cell_size))
      throw user_error("qd::hash_grid(cell_size = " + std::to_string(cell_size) +
                       "): the cell size must be a positive finite number (typically the query radius)");
  }

  // Bins `positions` (a cell per position: floor(p / cell_size), wrapped). Positions may
  // be anywhere, NaN included (a NaN coordinate bins as 0 and is never within a radius).
  void build(const ndarray<vec3f, 1>& positions) {
    const std::int64_t n = positions.size();
    int dim = 8;
    while (dim < 128 && static_cast<std::int64_t>(dim) * dim * dim < n) dim *= 2;
    const std::int64_t cells = static_cast<std::int64_t>(dim) * dim * dim;
    points_.emplace(std::array<std::int64_t, 2>{n, 3});
    cell_begin_.emplace(cells);  // zero-filled: an empty cell is [0, 0)
    cell_end_.emplace(cells);
    index_.emplace(std::max<std::int64_t>(n, 1));  // one placeholder slot when there is nothing to bin
    if (n > 0) {
      ndarray<std::int32_t, 1> keys(n);
      detail::hash_grid_keys_kernel()(positions, keys, *index_, 1.0f / cell_size_, dim);
      // Keys are below dim^3 <= 2^21: sorting their low bits is enough.
      int bits = 0;
      while ((std::int64_t{1} << bits) < cells) ++bits;
      algorithms::detail::radix_sort<std::int32_t, std::int32_t, true>(keys, *index_, bits);
      detail::hash_grid_cells_kernel()(positions, keys, *index_, *points_, *cell_begin_, *cell_end_);
    }
    dim_ = dim;
  }

  float cell_size() const { return cell_size_; }
  // Positions binned by the last build (0 before the first).
  std::int64_t size() const { return points_ ? points_->shape(0) : 0; }

  // The kernel argument; a qd::user_error before the first build.
  detail::hash_grid_arguments kernel_argument() const {
    if (!points_)
      throw user_error("a kernel was given a qd::hash_grid that was never built; call grid.build(positions) first");
    return {*points_, *index_, *cell_begin_, *cell_end_, 1.0f / cell_size_, dim_};
  }

 private:
  float cell_size_;
  std::int32_t dim_ = 0;
  std::optional<ndarray<float, 2>> points_;
  std::optional<ndarray<std::int32_t, 1>> index_;
  std::optional<ndarray<std::int32_t, 1>> cell_begin_, cell_end_;
};

}  // namespace qd::inline v0
