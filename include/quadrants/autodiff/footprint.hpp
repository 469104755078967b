// The footprint of one launch: which elements of which parameters it reads, and which
// it overwrites, as boxes of index intervals. A tape checks with it that no launch
// overwrites what an earlier launch's adjoint will read.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/ir/node.hpp"

namespace qd::inline v0::autodiff {

// The values a launch binds: each scalar parameter's bits, each array parameter's shape.
struct launch_values {
  std::vector<std::uint64_t> scalars;
  std::vector<std::array<std::int64_t, 4>> shapes;
};

// What a launch does to the elements of a box.
enum class access_kind : std::uint8_t {
  read,        // a load; `needed` tells whether the adjoint needs the value read
  overwrite,   // a plain store, or an atomic other than add/sub
  accumulate,  // `x[i] += e`, qd::atomic_add/sub: changes the values, keeps their gradient
};

// Elements [lo[d], hi[d]] (inclusive) in each dimension of one parameter.
struct access_box {
  std::int32_t param = -1;
  access_kind kind = access_kind::read;
  bool needed = false;  // a read whose value the adjoint needs (autodiff/activity.hpp)
  std::array<std::int64_t, 4> lo{}, hi{};
};

// A kernel's reads, stores and atomics of parameters' data (not of .grad()), in program
// order, found once per kernel; `needed`: the kernel's needed_values.
struct footprint_access {
  ir::id node = ir::none;
  access_kind kind = access_kind::read;
  bool needed = false;
};
QD_FUNC std::vector<footprint_access> footprint_accesses(const ir::function& fn, const std::vector<bool>& needed);

// Appends to `out` the box of each of `accesses` (of `fn`) in one launch. An index the
// launch's values do not determine (it depends on data) covers its whole dimension.
QD_FUNC void footprint(const ir::function& fn, const std::vector<footprint_access>& accesses,
                       const launch_values& values, std::vector<access_box>& out);

// Whether two boxes of the same buffer share an element.
QD_FUNC bool intersect(const access_box& a, const access_box& b, int ndim);

}  // namespace qd::inline v0::autodiff

#ifdef QD_HEADER_ONLY
#include "quadrants/autodiff/footprint-inl.hpp"
#endif
