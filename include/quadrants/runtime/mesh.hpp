// qd::mesh: an unstructured mesh built on the host from tetrahedra or
// triangles, its element kinds and relations (CSR), and their upload for a launch.
//
// Element ids: vertex ids are the input's; cell ids follow the input order; edges
// (and the faces of a tetrahedral mesh) are numbered by the lexicographic order of
// their sorted vertex tuples. On a triangular mesh faces are the cells.
//
// Relation a.kind() (built on first use, kept with the mesh):
//  - to a lower-dimensional kind: the element's sub-elements; cells list their
//    vertices in the input order, every other list is in ascending id order;
//  - to a higher-dimensional kind: the elements containing it, ascending;
//  - to the same kind: the other elements sharing a sub-element one dimension
//    lower (faces of tets, edges of triangles, vertices of edges), ascending;
//    v.verts() are the vertices sharing an edge with v;
//  - faces <-> cells on a triangular mesh: the element itself.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/lang/mesh_param.hpp"
#include "quadrants/runtime/pipeline/dispatch.hpp"

namespace qd::inline v0 {

namespace detail {
struct mesh_data;
class kernel_state;
}  // namespace detail

// One relation as CSR: the elements related to element i are
// indices[offsets[i] .. offsets[i + 1]).
struct mesh_csr {
  std::vector<std::int32_t> offsets;
  std::vector<std::int32_t> indices;
};

class mesh {
 public:
  mesh() = default;  // an empty mesh: passing it to a kernel is a qd::user_error

  // Tetrahedra over vertices 0 .. num_vertices - 1 (a qd::user_error for an id out
  // of range or a tetrahedron that repeats a vertex).
  QD_FUNC static mesh tetrahedral(std::int64_t num_vertices, const std::vector<std::array<std::int32_t, 4>>& tets);
  // Triangles over vertices 0 .. n - 1; the cells (and faces) are the triangles.
  QD_FUNC static mesh triangular(std::int64_t num_vertices, const std::vector<std::array<std::int32_t, 3>>& tris);

  QD_FUNC std::int64_t num_verts() const;
  QD_FUNC std::int64_t num_edges() const;
  QD_FUNC std::int64_t num_faces() const;
  QD_FUNC std::int64_t num_cells() const;
  QD_FUNC std::int64_t count(mesh_kind k) const;

  // Relation from -> to on the host (built on first use, as a kernel's would be).
  QD_FUNC const mesh_csr& relation(mesh_kind from, mesh_kind to) const;
  // Whether relation from -> to has been built (by a kernel launch or relation()).
  QD_FUNC bool has_relation(mesh_kind from, mesh_kind to) const;

  // Internal: builds the relations in `relations` (bit mesh_layout::relation(from, to))
  // and returns the launch argument of the packed array in the running program.
  QD_FUNC detail::launch_arg bind(std::uint32_t relations, std::string_view kernel) const;

 private:
  std::shared_ptr<detail::mesh_data> data_;
};

namespace detail {

// The relations a kernel's IR reads of each parameter that is a mesh, as a bit set per
// parameter (traced on first use, then cached in the kernel state).
QD_FUNC const std::vector<std::uint32_t>& mesh_relations_used(kernel_state& k);

// The message for a bounds error at `index` (of `extent`) of kernel parameter `param`
// when it is a mesh relation's rel[k] out of range (in `construct`, or any when < 0): the
// relation and the user's lines; empty for any other bounds error.
QD_FUNC std::string mesh_index_error(const kernel_state& k, std::size_t param, std::int64_t index, std::int64_t extent,
                                     std::int32_t construct);

// fallback_detail of the `mesh` fallback: "a qd::mesh_for over the verts at sim.cpp:12 ...".
QD_FUNC std::string mesh_detail(const kernel_state& k);

// Binds each qd::mesh argument of a launch: builds and uploads what the kernel reads.
template <class F, class... Args>
void bind_meshes(kernel_state& k, launch_arg* packed, const Args&... args) {
  const std::vector<std::uint32_t>& used = mesh_relations_used(k);
  boost::hana::unpack(parameter_types<F>(), [&](auto... p) {
    std::size_t i = 0;  // the IR parameter: vector and struct parameters take several
    auto one = [&](auto type, const auto& a) {
      using P = typename decltype(type)::type;
      if constexpr (is_mesh_param<P>) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(a)>, qd::mesh>)
          packed[i] = a.bind(used[i], kernel_name(k));
      }
      i += leaf_count<P>();
    };
    (one(p, args), ...);
  });
}

template <class F>
constexpr bool has_mesh_parameter() {
  return boost::hana::unpack(parameter_types<F>(),
                             [](auto... t) { return (is_mesh_param<typename decltype(t)::type> || ...); });
}

}  // namespace detail
}  // namespace qd::inline v0

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/mesh-inl.hpp"
#endif
