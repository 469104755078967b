// A qd::types::mesh parameter takes a qd::mesh, not an array.
// expect: this parameter is a qd::types::mesh; pass a qd::mesh
#include <quadrants/quadrants.hpp>
void launch_it() {
  auto k = qd::kernel("k", [](qd::types::mesh m, qd::types::ndarray<std::int32_t, 1> out) {
    qd::mesh_for(m.verts(), [&](qd::mesh_element v) { out[v.id()] = v.verts().size(); });
  });
  qd::ndarray<std::int32_t, 1> out(4);
#ifdef QD_MISUSE
  qd::ndarray<std::int32_t, 1> not_a_mesh(4);
  k(not_a_mesh, out);
#else
  k(qd::mesh::tetrahedral(4, {{0, 1, 2, 3}}), out);
#endif
}
