// qd::types::hash_grid, the kernel side of a qd::hash_grid (a struct parameter the host
// passes the grid for), and qd::for_each_neighbor, the fixed-radius query inside kernels.
#pragma once

#include <cstdint>
#include <utility>

#include "quadrants/lang/ndarray_param.hpp"
#include "quadrants/lang/source_location.hpp"
#include "quadrants/lang/statements.hpp"
#include "quadrants/lang/vec.hpp"

namespace qd::inline v0 {
namespace types {

// The grid as qd::hash_grid::build leaves it: the positions ordered by cell, and per cell
// of a dim_x * dim_y * dim_z grid whose coordinates wrap around (cell (x, y, z) is
// (x mod dim_x, ...)) the slots [cell_start[c], cell_start[c + 1]) of its positions.
struct hash_grid {
  ndarray<float, 2> points;             // (n, 3): the positions by cell
  ndarray<std::int32_t, 1> index;       // slot -> the index of its position in build()'s array
  ndarray<std::int32_t, 1> cell_start;  // per wrapped cell, and one past the last: the total
  f32 inv_cell_size;
  i32 dim_x, dim_y, dim_z;  // wrapped cells per axis, powers of two
};

}  // namespace types

namespace detail {

// The cells [lo, lo + count) of one axis that can hold a position within `radius` of x:
// the range widened by a few ulps, so that rounding in x - radius and in the division
// by the cell size never leaves a position out, and clipped to `dim` cells (which then
// cover every wrapped cell once).
inline std::pair<i32, i32> neighbor_cells(const f32& x, const f32& radius, const f32& inv_cell_size, const i32& dim) {
  const f32 margin = radius * 1.0001f + (qd::abs(x) + qd::abs(radius)) * 1e-6f;
  const i32 lo = qd::cast<std::int32_t>(qd::floor((x - margin) * inv_cell_size));
  const i32 hi = qd::cast<std::int32_t>(qd::floor((x + margin) * inv_cell_size));
  const i64 count = qd::min(qd::cast<std::int64_t>(hi) - qd::cast<std::int64_t>(lo) + 1, qd::cast<std::int64_t>(dim));
  return {lo, qd::cast<std::int32_t>(qd::max(count, std::int64_t{0}))};
}

}  // namespace detail

// Calls body(j) once for every position j given to the grid's build() with
// |positions[j] - p| <= radius (computed in f32 as a sum of squares against radius^2),
// in no particular order. Inside a qd::range_for (it loops over the cells around p);
// a negative or NaN radius, or a NaN p, finds nothing.
template <vector_like P, operand R, class F>
void for_each_neighbor(const types::hash_grid& g, const P& p, const R& radius, F&& body,
                       qd::source_location loc = qd::source_location::current()) {
  static_assert(detail::vector_size<P> == 3 && std::is_same_v<detail::vector_scalar<P>, float>,
                "qd::for_each_neighbor takes a qd::vec3f position");
  detail::at(loc);
  if (detail::current_tracer().at_top_level())
    detail::throw_trace_error(
        "qd::for_each_neighbor is a query per point: call it inside a qd::range_for (one query per iteration)");
  const vec3f q(detail::vec_value(p));
  const f32 r = radius;
  const f32 r2 = r * r;
  const auto xs = detail::neighbor_cells(q.x(), r, g.inv_cell_size, g.dim_x);
  const auto ys = detail::neighbor_cells(q.y(), r, g.inv_cell_size, g.dim_y);
  const auto zs = detail::neighbor_cells(q.z(), r, g.inv_cell_size, g.dim_z);
  const i32 x0 = xs.first, nx = xs.second, y0 = ys.first, ny = ys.second, z0 = zs.first, nz = zs.second;
  qd::range_for(nz, [&](i32 dz) {
    const i32 cz = (z0 + dz) & (g.dim_z - 1);
    qd::range_for(ny, [&](i32 dy) {
      const i32 row = g.dim_x * (((y0 + dy) & (g.dim_y - 1)) + g.dim_y * cz);
      qd::range_for(nx, [&](i32 dx) {
        const i32 cell = ((x0 + dx) & (g.dim_x - 1)) + row;
        qd::range_for(g.cell_start[cell], g.cell_start[cell + 1], [&](i32 k) {
          const f32 ex = g.points(k, 0) - q.x();
          const f32 ey = g.points(k, 1) - q.y();
          const f32 ez = g.points(k, 2) - q.z();
          qd::if_(ex * ex + ey * ey + ez * ez <= r2, [&] { body(i32(g.index[k])); });
        });
      });
    });
  });
}

}  // namespace qd::inline v0
