// qd::hash_grid: positions binned by cell (a radix sort by cell, then each cell's range),
// for fixed-radius neighbour queries in kernels (qd::for_each_neighbor, qd::types::hash_grid).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "quadrants/algorithms/sort.hpp"
#include "quadrants/lang/hash_grid_param.hpp"
#include "quadrants/runtime/vec_ndarray.hpp"

namespace qd::inline v0 {

namespace detail {

// What a kernel's qd::types::hash_grid parameter is bound to, member by member.
struct hash_grid_arguments {
  const ndarray<float, 2>& points;
  const ndarray<std::int32_t, 1>& index;
  const ndarray<std::int32_t, 1>& cell_start;
  float inv_cell_size;
  std::int32_t dim_x, dim_y, dim_z;
};

// bounds = {min x, min y, min z, max x, max y, max z} of the positions' numbers (NaN
// coordinates are left out; with none, +inf and -inf).
inline const auto& hash_grid_bounds_kernel() {
  static const auto k = qd::kernel("qd::hash_grid::bounds", {"positions", "bounds"},
                                   [](types::ndarray<vec3f, 1> positions, types::ndarray<float, 1> bounds) {
                                     constexpr float inf = std::numeric_limits<float>::infinity();
                                     qd::var<float> lo[3] = {inf, inf, inf}, hi[3] = {-inf, -inf, -inf};
                                     qd::range_for(positions.shape(0), [&](i32 i) {
                                       const vec3f p = positions[i];
                                       for (int a = 0; a < 3; ++a) {
                                         qd::atomic_min(lo[a], p[a]);
                                         qd::atomic_max(hi[a], p[a]);
                                       }
                                     });
                                     qd::range_for(1, [&](i32) {
                                       for (int a = 0; a < 3; ++a) {
                                         bounds[a] = lo[a];
                                         bounds[a + 3] = hi[a];
                                       }
                                     });
                                   });
  return k;
}

// The wrapped cells per axis: powers of two that hold the positions' cells without
// wrapping where the table allows, at most `cap` cells in all (the largest axis halved
// first). `bounds` as hash_grid_bounds_kernel leaves them.
inline std::array<std::int32_t, 3> hash_grid_dims(const std::vector<float>& bounds, float inv_cell_size,
                                                  std::int64_t cap) {
  std::array<std::int64_t, 3> dims{};
  for (std::size_t a = 0; a < 3; ++a) {
    const double lo = std::floor(static_cast<double>(bounds[a]) * inv_cell_size);
    const double hi = std::floor(static_cast<double>(bounds[a + 3]) * inv_cell_size);
    const double need = hi >= lo ? hi - lo + 1 : 1;  // no number on this axis: one cell
    std::int64_t d = 1;
    while (d < cap && !(static_cast<double>(d) >= need)) d *= 2;  // a NaN or inf need: the cap
    dims[a] = d;
  }
  while (dims[0] * dims[1] * dims[2] > cap) *std::max_element(dims.begin(), dims.end()) /= 2;
  return {static_cast<std::int32_t>(dims[0]), static_cast<std::int32_t>(dims[1]), static_cast<std::int32_t>(dims[2])};
}

// keys[i] = the wrapped cell of positions[i]; index[i] = i.
inline const auto& hash_grid_keys_kernel() {
  static const auto k = qd::kernel(
      "qd::hash_grid::build_keys", {"positions", "keys", "index", "inv_cell_size", "dim_x", "dim_y", "dim_z"},
      [](types::ndarray<vec3f, 1> positions, types::ndarray<std::int32_t, 1> keys,
         types::ndarray<std::int32_t, 1> index, f32 inv_cell_size, i32 dim_x, i32 dim_y, i32 dim_z) {
        qd::range_for(positions.shape(0), [&](i32 i) {
          const vec3f p = positions[i];
          auto cell = [&](const f32& x, const i32& dim) {
            return qd::cast<std::int32_t>(qd::floor(x * inv_cell_size)) & (dim - 1);
          };
          keys[i] = cell(p.x(), dim_x) + dim_x * (cell(p.y(), dim_y) + dim_y * cell(p.z(), dim_z));
          index[i] = i;
        });
      });
  return k;
}

// Each cell's first slot from the sorted keys (cell_start: cells + 1 entries, the last n), and
// the positions in slot order.
inline const auto& hash_grid_cells_kernel() {
  static const auto k =
      qd::kernel("qd::hash_grid::build_cells", {"positions", "keys", "index", "points", "cell_start"},
                 [](types::ndarray<vec3f, 1> positions, types::ndarray<std::int32_t, 1> keys,
                    types::ndarray<std::int32_t, 1> index, types::ndarray<float, 2> points,
                    types::ndarray<std::int32_t, 1> cell_start) {
                   const i32 n = keys.shape(0);
                   const i32 cells = cell_start.shape(0) - 1;
                   qd::range_for(n, [&](i32 s) {
                     const i32 key = keys[s];
                     // The cells after the previous slot's, up to this one's, start here.
                     const i32 previous = qd::select(s == 0, -1, keys[qd::max(s - 1, 0)]);
                     qd::range_for(previous + 1, key + 1, [&](i32 c) { cell_start[c] = s; });
                     qd::if_(s == n - 1, [&] { qd::range_for(key + 1, cells + 1, [&](i32 c) { cell_start[c] = n; }); });
                     const vec3f p = positions[index[s]];
                     for (int c = 0; c < 3; ++c) points(s, c) = p[c];
                   });
                 });
  return k;
}

}  // namespace detail

// Positions binned by cells of `cell_size` (a grid of dim_x * dim_y * dim_z cells whose
// coordinates wrap around, each dim a power of two: enough for the positions' extent where
// the table allows, the table at most 512 to 2^21 cells by the number of positions),
// rebuilt by build(); kernels take it as a qd::types::hash_grid parameter and query it
// with qd::for_each_neighbor. The grid keeps its own copy of the positions of the last build.
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
    // The table's size: dim^3 >= n where possible, dim a power of two from 8 to 128.
    std::int64_t side = 8;
    while (side < 128 && side * side * side < n) side *= 2;
    dims_ = {1, 1, 1};
    if (n > 0) {
      ndarray<float, 1> bounds(6);
      detail::hash_grid_bounds_kernel()(positions, bounds);
      dims_ = detail::hash_grid_dims(bounds.to_host(), 1.0f / cell_size_, side * side * side);
    }
    const std::int64_t cells = static_cast<std::int64_t>(dims_[0]) * dims_[1] * dims_[2];
    points_.emplace(std::array<std::int64_t, 2>{n, 3});
    cell_start_.emplace(cells + 1);                // zero-filled: with no position, every cell is [0, 0)
    index_.emplace(std::max<std::int64_t>(n, 1));  // one placeholder slot when there is nothing to bin
    if (n > 0) {
      ndarray<std::int32_t, 1> keys(n);
      detail::hash_grid_keys_kernel()(positions, keys, *index_, 1.0f / cell_size_, dims_[0], dims_[1], dims_[2]);
      // Keys are below the cell count <= 2^21: sorting their low bits is enough.
      int bits = 0;
      while ((std::int64_t{1} << bits) < cells) ++bits;
      algorithms::detail::radix_sort<std::int32_t, std::int32_t, true>(keys, *index_, bits);
      detail::hash_grid_cells_kernel()(positions, keys, *index_, *points_, *cell_start_);
    }
  }

  float cell_size() const { return cell_size_; }
  // Positions binned by the last build (0 before the first).
  std::int64_t size() const { return points_ ? points_->shape(0) : 0; }

  // The kernel argument; a qd::user_error before the first build.
  detail::hash_grid_arguments kernel_argument() const {
    if (!points_)
      throw user_error("a kernel was given a qd::hash_grid that was never built; call grid.build(positions) first");
    return {*points_, *index_, *cell_start_, 1.0f / cell_size_, dims_[0], dims_[1], dims_[2]};
  }

 private:
  float cell_size_;
  std::array<std::int32_t, 3> dims_{1, 1, 1};
  std::optional<ndarray<float, 2>> points_;
  std::optional<ndarray<std::int32_t, 1>> index_;
  std::optional<ndarray<std::int32_t, 1>> cell_start_;
};

}  // namespace qd::inline v0
