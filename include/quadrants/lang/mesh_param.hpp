// Meshes inside a kernel: the qd::types::mesh parameter, qd::mesh_for
// over one element kind (a parallel construct) and qd::for_each over a relation.
//
// A mesh parameter is, in the IR, one 1-d i32 array: the mesh's relations packed by
// the host (runtime/mesh.hpp) behind a small header of constant positions
// (mesh_layout below). qd::mesh_for is a top-level range_for over an element
// count read from the header; qd::for_each is a serial range_for over
// offsets[id] .. offsets[id + 1] of a relation's CSR arrays, reading its indices.
// So the backends see ordinary array loads and loops. Which relations a kernel
// uses is visible in its IR (loads of header slots at constant positions): the
// launch builds and uploads those before binding the mesh (runtime/mesh.hpp).
// The array is followed by one slot per relation beyond its extent: rel[k] with k
// outside the element's own list reads the slot of its relation, which a bounds check
// reports as that relation's error (runtime/mesh.hpp), and which unchecked holds 0.
// The header's loads record no location of their own: they are the user's statement's.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

#include "quadrants/lang/kernel_signature.hpp"
#include "quadrants/lang/source_location.hpp"
#include "quadrants/lang/statements.hpp"

namespace qd::inline v0 {

// The element kinds of a mesh. On a triangular mesh faces and cells are the triangles.
enum class mesh_kind : std::uint8_t { verts, edges, faces, cells };

constexpr std::string_view name(mesh_kind k) {
  switch (k) {
    case mesh_kind::verts: return "verts";
    case mesh_kind::edges: return "edges";
    case mesh_kind::faces: return "faces";
    case mesh_kind::cells: return "cells";
  }
  return "?";
}

namespace detail {
// Element `position` of mesh parameter `param`'s array, at the location of the statement
// being traced (not at a line of this header).
inline expr<std::int32_t> load_mesh(std::int32_t param, ir::id position) {
  return expr<std::int32_t>::from_id(emit_global_load(place{param, 0, 1, {position}}));
}
}  // namespace detail

namespace detail::mesh_layout {
inline constexpr int kinds = 4;
inline constexpr int relations = kinds * kinds;
// Header: the element count of each kind, then for each relation `from * 4 + to` the
// position of its offsets and of its indices in the same array (-1: not built).
inline constexpr int header_size = kinds + 2 * relations;
// Past the extent: one slot per relation, read by rel[k] out of range.
constexpr int out_of_range_slot(int relation) { return relation; }
constexpr int relation(mesh_kind from, mesh_kind to) { return static_cast<int>(from) * kinds + static_cast<int>(to); }
constexpr int count_slot(mesh_kind k) { return static_cast<int>(k); }
constexpr int offsets_slot(int relation) { return kinds + 2 * relation; }
constexpr int indices_slot(int relation) { return kinds + 2 * relation + 1; }
}  // namespace detail::mesh_layout

class mesh_relation;
class mesh_element;
template <class F>
void for_each(const mesh_relation& rel, F&& body, qd::source_location loc = qd::source_location::current());

// `a.kind()` of element `a`: the elements of `to` related to it, iterated with qd::for_each.
class mesh_relation {
 public:
  mesh_relation(detail::param_tag, std::int32_t param, mesh_kind from, mesh_kind to, i32 id)
      : param_(param), from_(from), to_(to), id_(id) {}

  // How many elements the relation holds for this element (a traced qd::i32).
  i32 size() const {
    const i32 off = offsets();
    const i32 first = row_bound(off, 0);
    return row_bound(off, 1) - first;
  }
  // Element k of the relation, 0 <= k < size(): c.verts()[0]. With check_out_of_bound,
  // another k is an error naming the relation and this line; without, element 0.
  mesh_element operator[](detail::located_index k) const;
  mesh_kind from() const { return from_; }
  mesh_kind to() const { return to_; }

 private:
  template <class F>
  friend void for_each(const mesh_relation& rel, F&& body, qd::source_location loc);

  int relation() const { return detail::mesh_layout::relation(from_, to_); }
  i32 load(const i32& position) const { return detail::load_mesh(param_, position.id()); }
  i32 offsets() const { return load(detail::mesh_layout::offsets_slot(relation())); }
  i32 indices() const { return load(detail::mesh_layout::indices_slot(relation())); }
  // offsets[id + k] of the relation whose offsets start at `off`.
  i32 row_bound(const i32& off, int k) const { return load(off + id_ + k); }

  std::int32_t param_;
  mesh_kind from_, to_;
  i32 id_;
};

// One element of a mesh inside qd::mesh_for or qd::for_each.
class mesh_element {
 public:
  mesh_element(detail::param_tag, std::int32_t param, mesh_kind kind, i32 id) : param_(param), kind_(kind), id_(id) {}

  // The element's id: vertex ids are the input's, cell ids follow the input order,
  // edge and face ids are positions in the sorted list of their sorted vertex tuples.
  i32 id() const { return id_; }
  mesh_kind kind() const { return kind_; }

  mesh_relation verts() const { return related(mesh_kind::verts); }
  mesh_relation edges() const { return related(mesh_kind::edges); }
  mesh_relation faces() const { return related(mesh_kind::faces); }
  mesh_relation cells() const { return related(mesh_kind::cells); }

 private:
  mesh_relation related(mesh_kind to) const { return {detail::param_tag{}, param_, kind_, to, id_}; }
  std::int32_t param_;
  mesh_kind kind_;
  i32 id_;
};

inline mesh_element mesh_relation::operator[](detail::located_index k) const {
  const i32 index = i32::from_id(detail::convert(k.id, dtype::i32));
  const i32 off = offsets();
  const i32 first = row_bound(off, 0);
  const i32 size = row_bound(off, 1) - first;
  const i32 extent = i32::from_id(detail::emit_shape(param_, 0));
  const expr<bool> inside = index >= 0 && index < size;
  const i32 past = extent + detail::mesh_layout::out_of_range_slot(relation());
  const i32 position =
      i32::from_id(detail::emit_select(dtype::i32, inside.id(), (indices() + first + index).id(), past.id()));
  return mesh_element(detail::param_tag{}, param_, to_, load(position));
}

// All elements of one kind: mesh.verts(), the range of a qd::mesh_for.
class mesh_elements {
 public:
  mesh_elements(detail::param_tag, std::int32_t param, mesh_kind kind) : param_(param), kind_(kind) {}
  // The number of elements (a traced qd::i32).
  i32 size() const { return detail::load_mesh(param_, detail::index_id(detail::mesh_layout::count_slot(kind_))); }
  mesh_kind kind() const { return kind_; }
  std::int32_t param_index() const { return param_; }

 private:
  std::int32_t param_;
  mesh_kind kind_;
};

namespace types {
// A kernel parameter: a mesh built on the host (qd::mesh), passed at launch.
class mesh {
 public:
  mesh(detail::param_tag, std::int32_t param) : param_(param) {}
  mesh_elements verts() const { return {detail::param_tag{}, param_, mesh_kind::verts}; }
  mesh_elements edges() const { return {detail::param_tag{}, param_, mesh_kind::edges}; }
  mesh_elements faces() const { return {detail::param_tag{}, param_, mesh_kind::faces}; }
  mesh_elements cells() const { return {detail::param_tag{}, param_, mesh_kind::cells}; }
  std::int32_t param_index() const { return param_; }

 private:
  std::int32_t param_;
};
}  // namespace types

namespace detail {
template <class P>
inline constexpr bool is_mesh_param = std::is_same_v<P, types::mesh>;

template <>
struct param_traits<types::mesh> {
  static constexpr bool valid = true;
  static constexpr bool top_level_only = true;  // bound at the launch: never a struct member
  static constexpr bool is_array = true;
  static constexpr ir::param_desc desc{true, dtype::i32, 1, false};
  static types::mesh make(std::int32_t index) { return {param_tag{}, index}; }
};

// qd::mesh_for is a parallel construct: only at the top level of a kernel body.
inline void begin_mesh_for() {
  tracer& t = current_tracer();
  if (!t.at_top_level())
    throw_trace_error(
        "qd::mesh_for is nested inside another statement (a qd::range_for, qd::mesh_for, qd::if_ or "
        "qd::while_ body); it is a parallel construct and must be at the top level of the kernel body. "
        "To visit related elements inside it, use qd::for_each(element.verts(), ...)");
  t.fn.has_mesh = true;
}
}  // namespace detail

// for each element of one kind, in parallel: a construct at the top level of a kernel.
template <class F>
void mesh_for(const mesh_elements& elements, F&& body, qd::source_location loc = qd::source_location::current()) {
  static_assert(std::is_invocable_v<F&, mesh_element>, "the body of qd::mesh_for takes one qd::mesh_element");
  detail::at(loc);
  detail::begin_mesh_for();
  const std::int32_t param = elements.param_index();
  const mesh_kind kind = elements.kind();
  range_for(
      elements.size(), [&](i32 i) { body(mesh_element(detail::param_tag{}, param, kind, i)); }, loc);
}

// A relation or a mesh's elements in the other loop's place: a compile error saying which to use.
template <class F>
void mesh_for(const mesh_relation&, F&&) {
  static_assert(sizeof(F) == 0,
                "qd::mesh_for runs over all elements of a kind (mesh.verts(), mesh.cells(), ...); "
                "visit the elements of a relation such as v.verts() with qd::for_each");
}
template <class F>
void for_each(const mesh_elements&, F&&) {
  static_assert(sizeof(F) == 0,
                "qd::for_each visits a relation of one element (v.verts()); run over all elements "
                "of a kind with qd::mesh_for at the top level of the kernel");
}

// for each element related to one element (a serial loop inside the enclosing construct).
template <class F>
void for_each(const mesh_relation& rel, F&& body, qd::source_location loc) {
  static_assert(std::is_invocable_v<F&, mesh_element>, "the body of qd::for_each takes one qd::mesh_element");
  detail::at(loc);
  const i32 indices = rel.indices();
  const i32 offsets = rel.offsets();
  const i32 first = rel.row_bound(offsets, 0);
  const i32 last = rel.row_bound(offsets, 1);
  range_for(
      first, last, [&](i32 j) { body(mesh_element(detail::param_tag{}, rel.param_, rel.to_, rel.load(indices + j))); },
      loc);
}

}  // namespace qd::inline v0
