// Generated tetrahedral meshes for the mesh tests and benchmark (SPEC §11.7), the
// neighbour-sharing-an-edge sets computed from them in plain C++, and the SPEC's
// smoothing kernel.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <vector>

#include <quadrants/quadrants.hpp>

namespace qd_test {

// An n x n x n grid of unit cubes over (n + 1)^3 vertices, each cube split into the 6
// tetrahedra of the Kuhn triangulation (one per order of the three axes), which match
// across cube faces.
inline std::vector<std::array<std::int32_t, 4>> cube_tets(int n) {
  auto vid = [n](int x, int y, int z) { return static_cast<std::int32_t>((z * (n + 1) + y) * (n + 1) + x); };
  const int orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  std::vector<std::array<std::int32_t, 4>> tets;
  for (int z = 0; z < n; ++z)
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x)
        for (const auto& order : orders) {
          int p[3] = {x, y, z};
          std::array<std::int32_t, 4> t{};
          t[0] = vid(p[0], p[1], p[2]);
          for (int s = 0; s < 3; ++s) {
            ++p[order[s]];
            t[static_cast<std::size_t>(s) + 1] = vid(p[0], p[1], p[2]);
          }
          tets.push_back(t);
        }
  return tets;
}

inline std::int32_t cube_vertices(int n) { return (n + 1) * (n + 1) * (n + 1); }

// For each vertex, the vertices sharing an edge of some tetrahedron with it, ascending.
inline std::vector<std::set<std::int32_t>> edge_neighbours(std::int32_t num_vertices,
                                                           const std::vector<std::array<std::int32_t, 4>>& tets) {
  std::vector<std::set<std::int32_t>> nb(static_cast<std::size_t>(num_vertices));
  for (const auto& t : tets)
    for (std::size_t a = 0; a < 4; ++a)
      for (std::size_t c = 0; c < 4; ++c)
        if (a != c) nb[static_cast<std::size_t>(t[a])].insert(t[c]);
  return nb;
}

// The SPEC §11.7 example: out[v] = sum over the vertices w sharing an edge with v of u[w] - u[v].
inline auto smooth_kernel() {
  return qd::kernel("smooth",
                    [](qd::types::mesh mesh, qd::types::ndarray<float, 1> u, qd::types::ndarray<float, 1> out) {
                      qd::mesh_for(mesh.verts(), [&](qd::mesh_element v) {
                        qd::var<float> acc = 0.0f;
                        qd::for_each(v.verts(), [&](qd::mesh_element w) { acc += u[w.id()] - u[v.id()]; });
                        out[v.id()] = acc;
                      });
                    });
}

}  // namespace qd_test
