// qd::mesh_for runs over all elements of a kind (mesh.verts()); a relation is visited
// with qd::for_each.
// expect: qd::mesh_for runs over all elements of a kind
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::mesh m, qd::types::ndarray<std::int32_t, 1> out) {
  qd::mesh_for(m.verts(), [&](qd::mesh_element v) {
#ifdef QD_MISUSE
    qd::mesh_for(v.verts(), [&](qd::mesh_element w) { out[w.id()] = 1; });
#else
    qd::for_each(v.verts(), [&](qd::mesh_element w) { out[w.id()] = 1; });
#endif
  });
});
