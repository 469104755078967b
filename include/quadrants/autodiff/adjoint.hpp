// Reverse-mode autodiff by source transformation: the adjoint of a traced kernel,
// itself an ir::function (is_gradient) that the rest of the pipeline compiles whole.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/ir/node.hpp"

namespace qd::inline v0::autodiff {

// How messages name the kernel and its parameters.
struct naming {
  std::string kernel;
  std::vector<std::string> params;  // may be empty or hold empty names: then "#k"
};

// Entries per value stack: the adjoint of a serial loop that carries variables
// nonlinearly keeps, per thread and per carried variable, two arrays of this many values
// (checkpoints, then one run's values), so it is linear in the trip count up to
// value_stack_depth^2 iterations (docs/autodiff.md, "Loops and variables").
inline constexpr std::int64_t value_stack_depth = 64;

// The adjoint of `forward` (a traced kernel after dead-code elimination): it reads
// the outputs' gradient buffers and accumulates into the inputs' (docs/autodiff.md).
// A qd::user_error naming the kernel and the statement when something in it has no
// adjoint (a while loop, a random draw, a plain store over data the kernel read, ...).
QD_FUNC ir::function make_adjoint(const ir::function& forward, const naming& names);

}  // namespace qd::inline v0::autodiff

#ifdef QD_HEADER_ONLY
#include "quadrants/autodiff/adjoint-inl.hpp"
#endif
