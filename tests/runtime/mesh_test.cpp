// Meshes (SPEC §11.7, issue 14): the relations of a generated tetrahedral mesh on the
// host and inside kernels against relations computed by brute force from vertex sets,
// a Laplacian smoothing step against plain C++, the `mesh` fallback and the errors.
// Cases below check source lines by number (__LINE__ + n), so their layout stays as written:
// clang-format off
#include <doctest/doctest.h>

#include <quadrants/quadrants.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "runtime/runtime_test_support.hpp"
#include "support/tet_mesh.hpp"

namespace {

using doctest::Contains;
using qd::mesh_kind;
using qd_test::cube_tets;

constexpr int width = 32;  // a row of the dumped relations: the relation's size, then its elements

// The elements of each kind as sorted vertex sets, numbered as SPEC'd: vertices by id,
// cells in input order, edges and faces by their sorted tuples.
struct brute_mesh {
  std::vector<std::vector<std::int32_t>> elems[4];
  std::vector<std::vector<std::int32_t>> cells_in_order;
  int dims[4];
};

brute_mesh brute(std::int32_t num_vertices, const std::vector<std::vector<std::int32_t>>& cells) {
  brute_mesh b;
  const int cell_dim = static_cast<int>(cells.front().size()) - 1;
  b.dims[0] = 0;
  b.dims[1] = 1;
  b.dims[2] = 2;
  b.dims[3] = cell_dim;
  for (std::int32_t v = 0; v < num_vertices; ++v) b.elems[0].push_back({v});
  std::set<std::vector<std::int32_t>> edges, faces;
  for (const auto& c : cells) {
    std::vector<std::int32_t> s = c;
    std::sort(s.begin(), s.end());
    for (std::size_t i = 0; i < s.size(); ++i)
      for (std::size_t j = i + 1; j < s.size(); ++j) {
        edges.insert({s[i], s[j]});
        for (std::size_t k = j + 1; k < s.size(); ++k) faces.insert({s[i], s[j], s[k]});
      }
    b.elems[3].push_back(s);
  }
  b.elems[1].assign(edges.begin(), edges.end());
  b.elems[2] = cell_dim == 3 ? std::vector<std::vector<std::int32_t>>(faces.begin(), faces.end()) : b.elems[3];
  b.cells_in_order = cells;
  return b;
}

bool subset(const std::vector<std::int32_t>& a, const std::vector<std::int32_t>& b) {
  return std::includes(b.begin(), b.end(), a.begin(), a.end());
}
std::size_t shared(const std::vector<std::int32_t>& a, const std::vector<std::int32_t>& b) {
  std::vector<std::int32_t> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out.size();
}

// Relation from -> to by definition, pair by pair.
std::vector<std::vector<std::int32_t>> brute_relation(const brute_mesh& b, int from, int to) {
  std::vector<std::vector<std::int32_t>> out(b.elems[from].size());
  for (std::size_t i = 0; i < b.elems[from].size(); ++i) {
    const auto& a = b.elems[from][i];
    if (from == 3 && to == 0) {  // cells list their vertices in the input order
      out[i] = b.cells_in_order[i];
      continue;
    }
    for (std::size_t j = 0; j < b.elems[to].size(); ++j) {
      const auto& c = b.elems[to][j];
      bool related = false;
      if (from == to) {
        const int d = b.dims[from];
        related = i != j && (d == 0 ? std::binary_search(b.elems[1].begin(), b.elems[1].end(),
                                                         std::vector<std::int32_t>{std::min(a[0], c[0]), std::max(a[0], c[0])})
                                    : shared(a, c) == static_cast<std::size_t>(d));
      } else if (b.dims[from] == b.dims[to]) {
        related = a == c;  // faces and cells of a triangular mesh
      } else {
        related = b.dims[from] > b.dims[to] ? subset(c, a) : subset(a, c);
      }
      if (related) out[i].push_back(static_cast<std::int32_t>(j));
    }
  }
  return out;
}

std::vector<std::vector<std::int32_t>> rows(const qd::mesh_csr& r) {
  std::vector<std::vector<std::int32_t>> out(r.offsets.size() - 1);
  for (std::size_t i = 0; i + 1 < r.offsets.size(); ++i)
    out[i].assign(r.indices.begin() + r.offsets[i], r.indices.begin() + r.offsets[i + 1]);
  return out;
}

// All 16 relations of `m` on the host against brute force.
void check_every_relation(const qd::mesh& m, const brute_mesh& b) {
  for (int from = 0; from < 4; ++from)
    for (int to = 0; to < 4; ++to) {
      CAPTURE(from);
      CAPTURE(to);
      CHECK(rows(m.relation(static_cast<mesh_kind>(from), static_cast<mesh_kind>(to))) == brute_relation(b, from, to));
    }
}

std::vector<std::vector<std::int32_t>> as_vectors(const std::vector<std::array<std::int32_t, 4>>& tets) {
  std::vector<std::vector<std::int32_t>> out;
  for (const auto& t : tets) out.push_back({t.begin(), t.end()});
  return out;
}

// A 3 x 3 grid of vertices, each square split into two triangles.
std::vector<std::array<std::int32_t, 3>> grid_triangles() {
  std::vector<std::array<std::int32_t, 3>> tris;
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 2; ++x) {
      const std::int32_t a = y * 3 + x;
      tris.push_back({a, a + 1, a + 4});
      tris.push_back({a, a + 4, a + 3});
    }
  return tris;
}

struct setup {
  const char* name;
  qd::arch arch;
  qd::per_offload_mode mode;
};
const setup setups[] = {{"cpu", qd::arch::cpu, qd::per_offload_mode::on},
                        {"reference", qd::arch::reference, qd::per_offload_mode::on}};

template <class F>
void in_every_setup(F&& f, qd::config extra = {}) {
  for (const setup& s : setups) {
    CAPTURE(s.name);
    qd::config c = extra;
    c.arch = s.arch;
    c.per_offload = s.mode;
    qd::init(c);
    f(s);
    qd::reset();
  }
}

}  // namespace

TEST_CASE("a tetrahedral mesh's element counts and every relation match brute force") {
  const int n = 2;
  const auto tets = cube_tets(n);
  const std::int32_t nv = qd_test::cube_vertices(n);
  qd::mesh m = qd::mesh::tetrahedral(nv, tets);
  const brute_mesh b = brute(nv, as_vectors(tets));
  CHECK(m.num_verts() == nv);
  CHECK(m.num_cells() == 6 * n * n * n);
  CHECK(m.num_edges() == static_cast<std::int64_t>(b.elems[1].size()));
  CHECK(m.num_faces() == static_cast<std::int64_t>(b.elems[2].size()));
  // Euler characteristic of a ball: V - E + F - C = 1.
  CHECK(m.num_verts() - m.num_edges() + m.num_faces() - m.num_cells() == 1);
  check_every_relation(m, b);
}

TEST_CASE("a triangular mesh's faces are its cells and cells neighbour across edges") {
  const auto tris = grid_triangles();
  qd::mesh m = qd::mesh::triangular(9, tris);
  std::vector<std::vector<std::int32_t>> cells;
  for (const auto& t : tris) cells.push_back({t.begin(), t.end()});
  const brute_mesh b = brute(9, cells);
  CHECK(m.num_verts() == 9);
  CHECK(m.num_cells() == 8);
  CHECK(m.num_faces() == 8);
  CHECK(m.num_edges() == 16);
  check_every_relation(m, b);
}

TEST_CASE("kernels read relations with qd::for_each as brute force computes them") {
  const int n = 2;
  const auto tets = cube_tets(n);
  const std::int32_t nv = qd_test::cube_vertices(n);
  const brute_mesh b = brute(nv, as_vectors(tets));
  // One kernel, four relations: v.verts(), v.cells(), c.cells(), e.verts().
  auto dump = qd::kernel("dump_relations", [](qd::types::mesh mesh, qd::types::ndarray<std::int32_t, 1> vv,
                                              qd::types::ndarray<std::int32_t, 1> vc,
                                              qd::types::ndarray<std::int32_t, 1> cc,
                                              qd::types::ndarray<std::int32_t, 1> ev) {
    auto write = [](qd::mesh_element a, qd::mesh_relation rel, qd::types::ndarray<std::int32_t, 1> out) {
      out[a.id() * width] = rel.size();
      qd::var<std::int32_t> k = 1;
      qd::for_each(rel, [&](qd::mesh_element w) {
        out[a.id() * width + k] = w.id();
        k += 1;
      });
    };
    qd::mesh_for(mesh.verts(), [&](qd::mesh_element v) {
      write(v, v.verts(), vv);
      write(v, v.cells(), vc);
    });
    qd::mesh_for(mesh.cells(), [&](qd::mesh_element c) { write(c, c.cells(), cc); });
    qd::mesh_for(mesh.edges(), [&](qd::mesh_element e) { write(e, e.verts(), ev); });
  });
  in_every_setup([&](const setup&) {
    qd::mesh m = qd::mesh::tetrahedral(nv, tets);
    CHECK_FALSE(m.has_relation(mesh_kind::verts, mesh_kind::verts));
    qd::ndarray<std::int32_t, 1> vv(nv * width), vc(nv * width), cc(m.num_cells() * width), ev(m.num_edges() * width);
    dump(m, vv, vc, cc, ev);
    // Built on first use, only what the kernel reads (and what those were built from).
    CHECK(m.has_relation(mesh_kind::verts, mesh_kind::verts));
    CHECK(m.has_relation(mesh_kind::cells, mesh_kind::cells));
    CHECK_FALSE(m.has_relation(mesh_kind::edges, mesh_kind::edges));
    CHECK_FALSE(m.has_relation(mesh_kind::faces, mesh_kind::verts));
    auto check = [&](const qd::ndarray<std::int32_t, 1>& out, int from, int to) {
      CAPTURE(from);
      CAPTURE(to);
      const auto expected = brute_relation(b, from, to);
      const std::vector<std::int32_t> got = out.to_host();
      std::vector<std::vector<std::int32_t>> rows_got(expected.size());
      for (std::size_t i = 0; i < expected.size(); ++i) {
        const std::int32_t size = got[i * width];
        REQUIRE(size < width);
        rows_got[i].assign(got.begin() + static_cast<std::ptrdiff_t>(i * width + 1),
                           got.begin() + static_cast<std::ptrdiff_t>(i * width + 1 + static_cast<std::size_t>(size)));
      }
      CHECK(rows_got == expected);
    };
    check(vv, 0, 0);
    check(vc, 0, 3);
    check(cc, 3, 3);
    check(ev, 1, 0);
    // A second launch reuses the uploaded relations.
    vv.fill(0);
    dump(m, vv, vc, cc, ev);
    check(vv, 0, 0);
  });
}

TEST_CASE("on a triangular mesh kernels see cells neighbouring across edges, and rel[k] indexes a relation") {
  const auto tris = grid_triangles();
  std::vector<std::vector<std::int32_t>> cells;
  for (const auto& t : tris) cells.push_back({t.begin(), t.end()});
  const brute_mesh b = brute(9, cells);
  const auto cc = brute_relation(b, 3, 3);
  // Per cell: its neighbour count, the sum of its neighbours' ids, its vertices through
  // c.verts()[k], and the cell its face is (f.cells()[0] of face c: c itself).
  auto k = qd::kernel("triangles", [](qd::types::mesh mesh, qd::types::ndarray<std::int32_t, 2> out) {
    qd::mesh_for(mesh.cells(), [&](qd::mesh_element c) {
      qd::var<std::int32_t> sum = 0;
      qd::for_each(c.cells(), [&](qd::mesh_element d) { sum += d.id(); });
      out(c.id(), 0) = c.cells().size();
      out(c.id(), 1) = sum;
      for (int j = 0; j < 3; ++j) out(c.id(), 2 + j) = c.verts()[j].id();
    });
    qd::mesh_for(mesh.faces(), [&](qd::mesh_element f) { out(f.id(), 5) = f.cells()[0].id(); });
  });
  in_every_setup([&](const setup&) {
    qd::mesh m = qd::mesh::triangular(9, tris);
    qd::ndarray<std::int32_t, 2> out({8, 6});
    k(m, out);
    std::vector<std::int32_t> want;
    for (std::size_t c = 0; c < tris.size(); ++c) {
      std::int32_t sum = 0;
      for (std::int32_t d : cc[c]) sum += d;
      want.insert(want.end(), {static_cast<std::int32_t>(cc[c].size()), sum, tris[c][0], tris[c][1], tris[c][2],
                               static_cast<std::int32_t>(c)});
    }
    CHECK(out.to_host() == want);
  });
}

TEST_CASE("a mesh after vector and struct parameters is bound at its own IR parameter") {
  const int n = 1;
  const auto tets = cube_tets(n);
  const std::int32_t nv = qd_test::cube_vertices(n);
  const brute_mesh b = brute(nv, as_vectors(tets));
  struct scale_view {
    qd::f32 a;
    qd::types::ndarray<float, 1> out;
  };
  struct scale_host {
    float a;
    qd::ndarray<float, 1> out;
  };
  // Four IR parameters (3 components, then a scalar) come before the mesh's.
  auto degree = qd::kernel("degree_after_vec", [](qd::vec3f offset, scale_view s, qd::types::mesh mesh) {
    qd::mesh_for(mesh.verts(), [&](qd::mesh_element v) {
      s.out[v.id()] = offset.z() + s.a * qd::cast<float>(v.verts().size());
    });
  });
  const auto expected = brute_relation(b, 0, 0);
  in_every_setup([&](const setup&) {
    qd::mesh m = qd::mesh::tetrahedral(nv, tets);
    scale_host h{2.0f, qd::ndarray<float, 1>(nv)};
    degree(std::array<float, 3>{0.0f, 0.0f, 0.5f}, h, m);
    const std::vector<float> got = h.out.to_host();
    for (std::size_t i = 0; i < expected.size(); ++i)
      CHECK(got[i] == 0.5f + 2.0f * static_cast<float>(expected[i].size()));
  });
}

TEST_CASE("a Laplacian smoothing step matches plain C++ on the CPU and the reference backend") {
  const int n = 3;
  const auto tets = cube_tets(n);
  const std::int32_t nv = qd_test::cube_vertices(n);
  auto smooth = qd_test::smooth_kernel();  // the SPEC §11.7 example
  std::vector<float> u(static_cast<std::size_t>(nv));
  for (std::int32_t i = 0; i < nv; ++i) u[static_cast<std::size_t>(i)] = static_cast<float>((i * 37) % 11) * 0.25f;
  // Plain C++: neighbours are the vertices sharing an edge of some tetrahedron.
  const auto nb = qd_test::edge_neighbours(nv, tets);
  std::vector<float> expected(static_cast<std::size_t>(nv));
  for (std::size_t v = 0; v < expected.size(); ++v) {
    float acc = 0.0f;
    for (std::int32_t w : nb[v]) acc += u[static_cast<std::size_t>(w)] - u[v];
    expected[v] = acc;
  }
  in_every_setup([&](const setup&) {
    qd::mesh m = qd::mesh::tetrahedral(nv, tets);
    qd::ndarray<float, 1> du(nv), out(nv);
    du.from_host(u);
    smooth(m, du, out);
    CHECK(out.to_host() == expected);
  });
}

TEST_CASE("one qd::mesh serves several programs: its relations are uploaded again after qd::reset") {
  const int n = 2;
  const auto tets = cube_tets(n);
  const std::int32_t nv = qd_test::cube_vertices(n);
  const auto nb = qd_test::edge_neighbours(nv, tets);
  std::vector<std::int32_t> degree;
  for (const auto& s : nb) degree.push_back(static_cast<std::int32_t>(s.size()));
  auto count = qd::kernel("degree", [](qd::types::mesh mesh, qd::types::ndarray<std::int32_t, 1> out) {
    qd::mesh_for(mesh.verts(), [&](qd::mesh_element v) { out[v.id()] = v.verts().size(); });
  });
  qd::mesh m = qd::mesh::tetrahedral(nv, tets);  // before any qd::init
  const qd::mesh copy = m;                       // a handle sharing the relations
  in_every_setup([&](const setup&) {
    qd::ndarray<std::int32_t, 1> out(nv);
    count(m, out);
    CHECK(out.to_host() == degree);
    out.fill(0);
    count(copy, out);
    CHECK(out.to_host() == degree);
  });
}

TEST_CASE("a kernel with a qd::mesh_for stays whole with fallback reason mesh") {
  const auto tets = cube_tets(1);
  auto count = qd::kernel("count_cells", [](qd::types::mesh mesh, qd::types::ndarray<std::int32_t, 1> out) {
    qd::range_for(1, [&](qd::i32) { out[0] = 0; });
    qd::mesh_for(mesh.cells(), [&](qd::mesh_element c) { out[c.id() + 1] = c.verts().size(); });
  });
  const int mesh_for_line = __LINE__ - 2;
  in_every_setup([&](const setup&) {
    qd_test::log_capture logs;
    qd::mesh m = qd::mesh::tetrahedral(8, tets);
    qd::ndarray<std::int32_t, 1> out(7);
    count(m, out);
    CHECK(out.to_host() == std::vector<std::int32_t>{0, 4, 4, 4, 4, 4, 4});
    auto obs = count.per_offload_cache_observations();
    CHECK(obs.fallback == qd::fallback_reason::mesh);
    CHECK(obs.frontend_constructs_total == -1);
    // Named by the user's line: the qd::mesh_for of count_cells.
    const std::string where = std::string(__FILE__) + ":" + std::to_string(mesh_for_line);
    CHECK(obs.fallback_detail == "a qd::mesh_for over the cells at " + where +
                                     " reads through the mesh's relations, which the split does not follow, so the "
                                     "kernel stays one unit");
    CHECK(logs.count(qd::log_level::debug, "[PER_OFFLOAD] kernel 'count_cells' stays whole-kernel: mesh (a qd::mesh_for "
                                           "over the cells at " + where) == 1);
    // kernel.explain() gives the same reason.
    CHECK(count.explain().find("a qd::mesh_for over the cells at " + where) != std::string::npos);
  }, {.log_level = qd::log_level::debug});
}

TEST_CASE("rel[k] out of range with bounds checks names the mesh relation and the user's line") {
  constexpr int rel_line = __LINE__ + 4;  // the rel[k] below
  auto k = qd::kernel("rel_index", {"mesh", "k", "out"},
                      [](qd::types::mesh mesh, qd::i32 kk, qd::types::ndarray<std::int32_t, 1> out) {
                        qd::mesh_for(mesh.cells(), [&](qd::mesh_element c) {
                          out[c.id()] = c.verts()[kk].id();
                        });
                      });
  const auto tets = cube_tets(1);
  for (qd::arch a : {qd::arch::cpu, qd::arch::reference}) {
    CAPTURE(qd::name(a));
    qd::init({.arch = a, .check_out_of_bound = true});
    qd::mesh m = qd::mesh::tetrahedral(8, tets);
    qd::ndarray<std::int32_t, 1> out(static_cast<std::int64_t>(tets.size()));
    k(m, 3, out);  // in range: each cell's fourth vertex, in input order
    std::vector<std::int32_t> fourth;
    for (const auto& t : tets) fourth.push_back(t[3]);
    CHECK(out.to_host() == fourth);
    // k = 4 reads past a cell's own 4 vertices but inside the mesh's data (the next cell's
    // list); k = 100000 past all of it; k = -1 before it. Each is the same error.
    for (int bad : {4, 100000, -1}) {
      CAPTURE(bad);
      CHECK_THROWS_WITH_AS(k(m, bad, out), Contains("kernel 'rel_index': an index into the mesh relation cells -> verts"),
                           qd::user_error);
      CHECK_THROWS_WITH_AS(k(m, bad, out), Contains(("mesh_test.cpp:" + std::to_string(rel_line)).c_str()), qd::user_error);
      CHECK_THROWS_WITH_AS(k(m, bad, out), Contains("parameter 'mesh'"), qd::user_error);
      try {
        k(m, bad, out);
      } catch (const qd::user_error& e) {
        CHECK(std::string(e.what()).find("mesh_param.hpp") == std::string::npos);
        CHECK(std::string(e.what()).find("ndarray<i32, 1>") == std::string::npos);
      }
    }
    qd::reset();
  }
}

TEST_CASE("bad meshes and misplaced mesh loops are clear errors") {
  SUBCASE("a vertex id out of range") {
    CHECK_THROWS_WITH_AS(qd::mesh::tetrahedral(4, {{0, 1, 2, 3}, {1, 2, 3, 4}}),
                         Contains("qd::mesh::tetrahedral: cell 1 has vertex id 4, outside 0..3 (num_vertices is 4)"),
                         qd::user_error);
    CHECK_THROWS_WITH_AS(qd::mesh::triangular(3, {{0, -1, 2}}), Contains("cell 0 has vertex id -1"), qd::user_error);
  }
  SUBCASE("a degenerate cell") {
    CHECK_THROWS_WITH_AS(qd::mesh::tetrahedral(4, {{0, 1, 2, 1}}),
                         Contains("qd::mesh::tetrahedral: cell 0 repeats vertex 1 (a degenerate cell"), qd::user_error);
    CHECK_THROWS_WITH_AS(qd::mesh::triangular(3, {{2, 2, 0}}), Contains("cell 0 repeats vertex 2"), qd::user_error);
  }
  SUBCASE("a negative vertex count") {
    CHECK_THROWS_WITH_AS(qd::mesh::triangular(-1, {}), Contains("num_vertices is -1"), qd::user_error);
  }
  qd_test::init_cpu();
  SUBCASE("an empty qd::mesh argument") {
    auto k = qd::kernel("empty_mesh", [](qd::types::mesh mesh, qd::types::ndarray<std::int32_t, 1> out) {
      qd::mesh_for(mesh.verts(), [&](qd::mesh_element v) { out[v.id()] = 1; });
    });
    qd::ndarray<std::int32_t, 1> out(4);
    qd::mesh none;
    CHECK_THROWS_WITH_AS(k(none, out), Contains("kernel 'empty_mesh': the qd::mesh argument is empty"), qd::user_error);
  }
  SUBCASE("a qd::mesh_for inside another construct") {
    auto k = qd::kernel("nested_mesh_for", [](qd::types::mesh mesh, qd::types::ndarray<std::int32_t, 1> out) {
      qd::mesh_for(mesh.verts(), [&](qd::mesh_element) {
        qd::mesh_for(mesh.cells(), [&](qd::mesh_element c) { out[c.id()] = 1; });
      });
    });
    qd::ndarray<std::int32_t, 1> out(6);
    qd::mesh m = qd::mesh::tetrahedral(8, cube_tets(1));
    CHECK_THROWS_WITH_AS(k(m, out), Contains("kernel 'nested_mesh_for': qd::mesh_for is nested inside another statement"),
                         qd::user_error);
    auto in_range = qd::kernel("mesh_for_in_range_for", [](qd::types::mesh mesh, qd::types::ndarray<std::int32_t, 1> out) {
      qd::range_for(2, [&](qd::i32) { qd::mesh_for(mesh.cells(), [&](qd::mesh_element c) { out[c.id()] = 1; }); });
    });
    CHECK_THROWS_WITH_AS(in_range(m, out), Contains("must be at the top level of the kernel body"), qd::user_error);
  }
  SUBCASE("a relation on the host of an empty mesh") {
    qd::mesh none;
    CHECK(none.num_verts() == 0);
    CHECK_THROWS_WITH_AS(none.relation(mesh_kind::verts, mesh_kind::verts), Contains("the mesh is empty"),
                         qd::user_error);
  }
  qd::reset();
}
