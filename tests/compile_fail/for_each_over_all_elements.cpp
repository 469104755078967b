// qd::for_each visits a relation of one element; all elements of a kind are a qd::mesh_for.
// expect: qd::for_each visits a relation of one element
#include <quadrants/quadrants.hpp>
auto k = qd::kernel("k", [](qd::types::mesh m, qd::types::ndarray<std::int32_t, 1> out) {
#ifdef QD_MISUSE
  qd::for_each(m.verts(), [&](qd::mesh_element v) { out[v.id()] = 1; });
#else
  qd::mesh_for(m.verts(), [&](qd::mesh_element v) { out[v.id()] = 1; });
#endif
});
