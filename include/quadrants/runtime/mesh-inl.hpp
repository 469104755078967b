// Implementation of runtime/mesh.hpp.
#pragma once

#include <algorithm>
#include <bit>
#include <mutex>
#include <numeric>
#include <string>

#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/runtime/pipeline/kernel_state.hpp"
#include "quadrants/runtime/mesh.hpp"
#include "quadrants/runtime/ndarray.hpp"
#include "quadrants/runtime/pipeline/program.hpp"

namespace qd::inline v0::detail {

struct mesh_data {
  int cell_size = 4;                               // vertices per cell: 4 (tetrahedra) or 3 (triangles)
  std::vector<std::array<std::int32_t, 4>> cells;  // input order (triangles use the first 3)
  std::vector<std::array<std::int32_t, 2>> edges;  // sorted tuples, in sorted order
  std::vector<std::array<std::int32_t, 3>> faces;  // tetrahedral meshes only; likewise
  std::int64_t verts = 0;

  std::mutex mutex;  // relation building and the upload
  std::array<mesh_csr, mesh_layout::relations> rel;
  std::uint32_t built = 0;
  buffer device;  // header and built relations, in the program of the last launch
  std::uint32_t device_relations = 0;
  std::vector<buffer> retired;  // earlier uploads: a launch still queued may read them

  int dim(mesh_kind k) const {
    switch (k) {
      case mesh_kind::verts: return 0;
      case mesh_kind::edges: return 1;
      case mesh_kind::faces: return 2;
      case mesh_kind::cells: return cell_size - 1;
    }
    return 0;
  }
  std::int64_t count(mesh_kind k) const {
    switch (k) {
      case mesh_kind::verts: return verts;
      case mesh_kind::edges: return static_cast<std::int64_t>(edges.size());
      case mesh_kind::faces:
        return cell_size == 4 ? static_cast<std::int64_t>(faces.size()) : static_cast<std::int64_t>(cells.size());
      case mesh_kind::cells: return static_cast<std::int64_t>(cells.size());
    }
    return 0;
  }
  // The kind one dimension below `d` (d >= 1).
  mesh_kind kind_of_dim(int d) const {
    return d == 1 ? mesh_kind::verts : d == 2 ? mesh_kind::edges : mesh_kind::faces;
  }
};

namespace mesh_build {

template <std::size_t N>
std::int32_t position_of(const std::vector<std::array<std::int32_t, N>>& sorted, const std::array<std::int32_t, N>& t) {
  auto it = std::lower_bound(sorted.begin(), sorted.end(), t);
  return static_cast<std::int32_t>(it - sorted.begin());
}

// The sorted vertex tuple of element i of kind k (size dim + 1).
QD_FUNC std::vector<std::int32_t> vertices_of(const mesh_data& m, mesh_kind k, std::int32_t i) {
  const auto u = static_cast<std::size_t>(i);
  switch (k) {
    case mesh_kind::verts: return {i};
    case mesh_kind::edges: return {m.edges[u][0], m.edges[u][1]};
    case mesh_kind::faces:
      if (m.cell_size == 4) return {m.faces[u][0], m.faces[u][1], m.faces[u][2]};
      [[fallthrough]];
    case mesh_kind::cells: {
      std::vector<std::int32_t> v(m.cells[u].begin(), m.cells[u].begin() + m.cell_size);
      std::sort(v.begin(), v.end());
      return v;
    }
  }
  return {};
}

QD_FUNC void finish_offsets(mesh_csr& r) {
  for (std::size_t i = 1; i < r.offsets.size(); ++i) r.offsets[i] += r.offsets[i - 1];
}

QD_FUNC const mesh_csr& build_relation(mesh_data& m, mesh_kind from, mesh_kind to);

// Sub-elements of kind `to` (lower dimension) of each element of `from`.
QD_FUNC void build_down(mesh_data& m, mesh_kind from, mesh_kind to, mesh_csr& r) {
  const std::int64_t n = m.count(from);
  const int size = m.dim(to) + 1;
  r.offsets.assign(static_cast<std::size_t>(n) + 1, 0);
  for (std::int32_t i = 0; i < n; ++i) {
    std::vector<std::int32_t> v = vertices_of(m, from, i);
    const std::size_t before = r.indices.size();
    if (to == mesh_kind::verts && from == mesh_kind::cells) {
      const auto& c = m.cells[static_cast<std::size_t>(i)];
      r.indices.insert(r.indices.end(), c.begin(), c.begin() + m.cell_size);
    } else if (to == mesh_kind::verts) {
      r.indices.insert(r.indices.end(), v.begin(), v.end());
    } else {
      // Every sub-tuple of `size` vertices of the sorted tuple v (sorted itself).
      const int k = static_cast<int>(v.size());
      for (int mask = 0; mask < (1 << k); ++mask) {
        if (std::popcount(static_cast<unsigned>(mask)) != size) continue;
        std::vector<std::int32_t> t;
        for (int b = 0; b < k; ++b)
          if (mask & (1 << b)) t.push_back(v[static_cast<std::size_t>(b)]);
        r.indices.push_back(size == 2 ? position_of(m.edges, {t[0], t[1]}) : position_of(m.faces, {t[0], t[1], t[2]}));
      }
      std::sort(r.indices.begin() + static_cast<std::ptrdiff_t>(before), r.indices.end());
    }
    r.offsets[static_cast<std::size_t>(i) + 1] = static_cast<std::int32_t>(r.indices.size() - before);
  }
  finish_offsets(r);
}

// The transpose of `down` (from the higher kind to `to`): for each element of `to`,
// the elements containing it, ascending.
QD_FUNC void transpose(const mesh_csr& down, std::int64_t n, mesh_csr& r) {
  r.offsets.assign(static_cast<std::size_t>(n) + 1, 0);
  for (std::int32_t x : down.indices) ++r.offsets[static_cast<std::size_t>(x) + 1];
  finish_offsets(r);
  r.indices.assign(down.indices.size(), 0);
  std::vector<std::int32_t> fill(r.offsets.begin(), r.offsets.end() - 1);
  const std::size_t rows = down.offsets.size() - 1;
  for (std::size_t i = 0; i < rows; ++i)
    for (std::int32_t j = down.offsets[i]; j < down.offsets[i + 1]; ++j)
      r.indices[static_cast<std::size_t>(fill[static_cast<std::size_t>(down.indices[static_cast<std::size_t>(j)])]++)] =
          static_cast<std::int32_t>(i);
}

// Elements of `k` sharing a sub-element one dimension lower (vertices: sharing an edge).
QD_FUNC void build_adjacent(mesh_data& m, mesh_kind k, mesh_csr& r) {
  const std::int64_t n = m.count(k);
  r.offsets.assign(static_cast<std::size_t>(n) + 1, 0);
  const mesh_kind via = k == mesh_kind::verts ? mesh_kind::edges : m.kind_of_dim(m.dim(k));
  const mesh_csr& down = build_relation(m, k, via);
  const mesh_csr& up = build_relation(m, via, k);
  std::vector<std::int32_t> list;
  for (std::int32_t i = 0; i < n; ++i) {
    list.clear();
    const auto u = static_cast<std::size_t>(i);
    for (std::int32_t a = down.offsets[u]; a < down.offsets[u + 1]; ++a) {
      const auto s = static_cast<std::size_t>(down.indices[static_cast<std::size_t>(a)]);
      for (std::int32_t b = up.offsets[s]; b < up.offsets[s + 1]; ++b)
        if (up.indices[static_cast<std::size_t>(b)] != i) list.push_back(up.indices[static_cast<std::size_t>(b)]);
    }
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
    r.indices.insert(r.indices.end(), list.begin(), list.end());
    r.offsets[u + 1] = static_cast<std::int32_t>(list.size());
  }
  finish_offsets(r);
}

// Builds relation from -> to unless built; the caller holds m.mutex.
QD_FUNC const mesh_csr& build_relation(mesh_data& m, mesh_kind from, mesh_kind to) {
  const int index = mesh_layout::relation(from, to);
  mesh_csr& r = m.rel[static_cast<std::size_t>(index)];
  if (m.built & (1u << index)) return r;
  mesh_csr made;
  if (from == to) {
    build_adjacent(m, from, made);
  } else if (m.dim(from) > m.dim(to)) {
    build_down(m, from, to, made);
  } else if (m.dim(from) < m.dim(to)) {
    const mesh_csr& down = build_relation(m, to, from);
    transpose(down, m.count(from), made);
  } else {  // faces and cells of a triangular mesh: the same elements
    made.offsets.resize(static_cast<std::size_t>(m.count(from)) + 1);
    std::iota(made.offsets.begin(), made.offsets.end(), 0);
    made.indices.resize(static_cast<std::size_t>(m.count(from)));
    std::iota(made.indices.begin(), made.indices.end(), 0);
  }
  r = std::move(made);
  m.built |= 1u << index;
  return r;
}

template <std::size_t K>
std::shared_ptr<mesh_data> make_mesh(std::string_view what, std::int64_t num_vertices,
                                     const std::vector<std::array<std::int32_t, K>>& cells) {
  if (num_vertices < 0 || num_vertices > std::int64_t{2147483647})
    throw user_error(fmt::format("{}: num_vertices is {}; it must be in 0..2147483647", what, num_vertices));
  if (cells.size() > std::size_t{2147483647})
    throw user_error(fmt::format("{}: {} cells; at most 2147483647 are supported", what, cells.size()));
  auto m = std::make_shared<mesh_data>();
  m->cell_size = static_cast<int>(K);
  m->verts = num_vertices;
  m->cells.reserve(cells.size());
  for (std::size_t c = 0; c < cells.size(); ++c) {
    std::array<std::int32_t, 4> cell{-1, -1, -1, -1};
    for (std::size_t j = 0; j < K; ++j) {
      const std::int32_t v = cells[c][j];
      if (v < 0 || v >= num_vertices)
        throw user_error(
            fmt::format("{}: cell {} has vertex id {}, outside 0..{} (num_vertices is {}); vertex ids "
                        "index the vertices, so fix the cell or pass a larger num_vertices",
                        what, c, v, num_vertices - 1, num_vertices));
      for (std::size_t i = 0; i < j; ++i)
        if (cell[i] == v)
          throw user_error(
              fmt::format("{}: cell {} repeats vertex {} (a degenerate cell with no volume or area); "
                          "remove it or fix its vertices",
                          what, c, v));
      cell[j] = v;
    }
    m->cells.push_back(cell);
  }
  for (const auto& cell : m->cells) {
    std::array<std::int32_t, 4> s = cell;
    std::sort(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(K));
    for (std::size_t a = 0; a < K; ++a)
      for (std::size_t b = a + 1; b < K; ++b) m->edges.push_back({s[a], s[b]});
    if constexpr (K == 4)
      for (std::size_t skip = 0; skip < 4; ++skip) {
        std::array<std::int32_t, 3> f{};
        for (std::size_t a = 0, j = 0; a < 4; ++a)
          if (a != skip) f[j++] = s[a];
        m->faces.push_back(f);
      }
  }
  std::sort(m->edges.begin(), m->edges.end());
  m->edges.erase(std::unique(m->edges.begin(), m->edges.end()), m->edges.end());
  std::sort(m->faces.begin(), m->faces.end());
  m->faces.erase(std::unique(m->faces.begin(), m->faces.end()), m->faces.end());
  return m;
}

}  // namespace mesh_build
}  // namespace qd::inline v0::detail

namespace qd::inline v0 {

QD_FUNC mesh mesh::tetrahedral(std::int64_t num_vertices, const std::vector<std::array<std::int32_t, 4>>& tets) {
  mesh m;
  m.data_ = detail::mesh_build::make_mesh("qd::mesh::tetrahedral", num_vertices, tets);
  return m;
}

QD_FUNC mesh mesh::triangular(std::int64_t num_vertices, const std::vector<std::array<std::int32_t, 3>>& tris) {
  mesh m;
  m.data_ = detail::mesh_build::make_mesh("qd::mesh::triangular", num_vertices, tris);
  return m;
}

QD_FUNC std::int64_t mesh::count(mesh_kind k) const { return data_ ? data_->count(k) : 0; }
QD_FUNC std::int64_t mesh::num_verts() const { return count(mesh_kind::verts); }
QD_FUNC std::int64_t mesh::num_edges() const { return count(mesh_kind::edges); }
QD_FUNC std::int64_t mesh::num_faces() const { return count(mesh_kind::faces); }
QD_FUNC std::int64_t mesh::num_cells() const { return count(mesh_kind::cells); }

QD_FUNC const mesh_csr& mesh::relation(mesh_kind from, mesh_kind to) const {
  if (!data_)
    throw user_error(
        "qd::mesh::relation: the mesh is empty; build it with qd::mesh::tetrahedral or "
        "qd::mesh::triangular");
  std::lock_guard lock(data_->mutex);
  return detail::mesh_build::build_relation(*data_, from, to);
}

QD_FUNC bool mesh::has_relation(mesh_kind from, mesh_kind to) const {
  if (!data_) return false;
  std::lock_guard lock(data_->mutex);
  return (data_->built >> detail::mesh_layout::relation(from, to)) & 1u;
}

QD_FUNC detail::launch_arg mesh::bind(std::uint32_t relations, std::string_view kernel) const {
  namespace layout = detail::mesh_layout;
  if (!data_)
    throw user_error(
        fmt::format("kernel '{}': the qd::mesh argument is empty (default-constructed or moved from); "
                    "build it with qd::mesh::tetrahedral or qd::mesh::triangular",
                    kernel));
  detail::mesh_data& m = *data_;
  std::lock_guard lock(m.mutex);
  detail::program_use use("launching a kernel with a qd::mesh");
  for (int r = 0; r < layout::relations; ++r)
    if (relations & (1u << r))
      detail::mesh_build::build_relation(m, static_cast<mesh_kind>(r / layout::kinds),
                                         static_cast<mesh_kind>(r % layout::kinds));
  if (m.device.program_id() != use->id() || (relations & ~m.device_relations) != 0) {
    std::vector<std::int32_t> packed(layout::header_size, -1);
    for (int k = 0; k < layout::kinds; ++k)
      packed[static_cast<std::size_t>(k)] = static_cast<std::int32_t>(m.count(static_cast<mesh_kind>(k)));
    std::size_t total = packed.size();
    for (int r = 0; r < layout::relations; ++r)
      if (m.built & (1u << r))
        total += m.rel[static_cast<std::size_t>(r)].offsets.size() + m.rel[static_cast<std::size_t>(r)].indices.size();
    if (total + layout::relations > std::size_t{2147483647})
      throw user_error(
          fmt::format("kernel '{}': the qd::mesh's relations hold {} entries; at most 2147483647 fit in "
                      "one mesh parameter",
                      kernel, total));
    packed.reserve(total);
    for (int r = 0; r < layout::relations; ++r) {
      if (!(m.built & (1u << r))) continue;
      const mesh_csr& c = m.rel[static_cast<std::size_t>(r)];
      packed[static_cast<std::size_t>(layout::offsets_slot(r))] = static_cast<std::int32_t>(packed.size());
      packed.insert(packed.end(), c.offsets.begin(), c.offsets.end());
      packed[static_cast<std::size_t>(layout::indices_slot(r))] = static_cast<std::int32_t>(packed.size());
      packed.insert(packed.end(), c.indices.begin(), c.indices.end());
    }
    // Past the extent: the slots rel[k] out of range reads (element 0, or a bounds error).
    packed.insert(packed.end(), layout::relations, 0);
    detail::buffer b(packed.size() * sizeof(std::int32_t));
    b.upload(packed.data(), packed.size() * sizeof(std::int32_t));
    if (m.device.program_id() == use->id())
      m.retired.push_back(std::move(m.device));
    else
      m.retired.clear();  // buffers of an ended program
    m.device = std::move(b);
    m.device_relations = m.built;
  }
  detail::launch_arg a;
  a.data = m.device.data();
  a.program_id = m.device.program_id();
  a.bytes = m.device.bytes();
  a.shape[0] = static_cast<std::int64_t>(m.device.bytes() / sizeof(std::int32_t)) - layout::relations;
  return a;
}

}  // namespace qd::inline v0

namespace qd::inline v0::detail {

QD_FUNC const std::vector<std::uint32_t>& mesh_relations_used(kernel_state& k) {
  std::call_once(k.mesh_once, [&] {
    std::lock_guard lock(k.mutex);
    ensure_traced(k);
    std::vector<std::uint32_t> used(k.params.size(), 0);
    // A relation's header slot read at a constant position marks the relation used.
    for (const ir::node& n : k.ir.nodes) {
      if (n.code != ir::op::global_load || n.list_size != 1 || n.param < 0) continue;
      const ir::node& index = k.ir.at(k.ir.lists[static_cast<std::size_t>(n.list_begin)]);
      if (index.code != ir::op::constant) continue;
      const std::int64_t slot = index.imm - mesh_layout::kinds;
      if (slot < 0 || slot >= 2 * mesh_layout::relations) continue;
      used[static_cast<std::size_t>(n.param)] |= 1u << (slot / 2);
    }
    k.mesh_relations = std::move(used);
  });
  return k.mesh_relations;
}

QD_FUNC std::string mesh_index_error(const kernel_state& k, std::size_t param, std::int64_t index, std::int64_t extent,
                                     std::int32_t construct) {
  if (param >= k.mesh_relations.size() || k.mesh_relations[param] == 0) return {};
  const std::int64_t relation = index - extent;
  if (relation < 0 || relation >= mesh_layout::relations) return {};
  // The rel[k] of this relation: loads of the mesh at a select whose out-of-range side is
  // the extent plus the relation's slot.
  std::vector<std::string> sites;
  for (std::size_t i = 0; i < k.ir.nodes.size(); ++i) {
    const ir::node& n = k.ir.nodes[i];
    if (n.code != ir::op::global_load || n.param != static_cast<std::int32_t>(param) || n.list_size != 1) continue;
    const ir::node& position = k.ir.at(k.ir.lists[static_cast<std::size_t>(n.list_begin)]);
    if (position.code != ir::op::select || position.c == ir::none) continue;
    const ir::node& past = k.ir.at(position.c);
    if (past.code != ir::op::binary || past.b == ir::none || k.ir.at(past.b).code != ir::op::constant ||
        k.ir.at(past.b).imm != relation)
      continue;
    const std::int32_t st = k.structure.statement_of[i];
    if (st < 0 || (construct >= 0 && k.structure.construct_of[static_cast<std::size_t>(st)] != construct)) continue;
    const std::string where = ir::to_text(k.ir.location(static_cast<ir::id>(i)));
    if (!where.empty() && std::find(sites.begin(), sites.end(), where) == sites.end()) sites.push_back(where);
  }
  std::string at;
  for (std::size_t j = 0; j < sites.size(); ++j) at += (j ? ", " : " at ") + sites[j];
  const auto from = static_cast<mesh_kind>(relation / mesh_layout::kinds),
             to = static_cast<mesh_kind>(relation % mesh_layout::kinds);
  return fmt::format(
      "kernel '{}': an index into the mesh relation {} -> {} (element.{}()[k] of one of the {}) of "
      "parameter '{}' is out of range{}: k must be at least 0 and less than element.{}().size(), the "
      "length of that element's own list; out-of-range accesses were skipped (check_out_of_bound is on)",
      k.name, name(from), name(to), name(to), name(from), param_name(k, param), at, name(to));
}

QD_FUNC std::string mesh_detail(const kernel_state& k) {
  // The first top-level loop bounded by an element count of a mesh header: a qd::mesh_for.
  for (ir::id i : k.ir.block(0)) {
    const ir::node& loop = k.ir.at(i);
    if (loop.code != ir::op::range_for || loop.imm != 1 || loop.b == ir::none) continue;
    const ir::node& bound = k.ir.at(loop.b);
    if (bound.code != ir::op::global_load || bound.list_size != 1) continue;
    const ir::node& index = k.ir.at(k.ir.lists[static_cast<std::size_t>(bound.list_begin)]);
    if (index.code != ir::op::constant || index.imm < 0 || index.imm >= mesh_layout::kinds) continue;
    const ir::source_loc where = k.ir.location(i);
    return fmt::format(
        "a qd::mesh_for over the {}{} reads through the mesh's relations, which the split does not "
        "follow, so the kernel stays one unit",
        name(static_cast<mesh_kind>(index.imm)), where.known() ? " at " + ir::to_text(where) : "");
  }
  return std::string(describe(fallback_reason::mesh));
}

}  // namespace qd::inline v0::detail
