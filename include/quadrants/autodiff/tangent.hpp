// Forward-mode autodiff by source transformation: the tangent of a traced kernel, which
// runs the forward computation and carries a tangent alongside every value that has one.
#pragma once

#include "quadrants/autodiff/adjoint.hpp"
#include "quadrants/base/api.hpp"
#include "quadrants/ir/node.hpp"

namespace qd::inline v0::autodiff {

// The tangent of `forward` (a traced kernel after dead-code elimination): the forward
// kernel itself, plus, for each access of a needs_grad float array, the same access of
// its tangent through the parameter's second buffer (ir::access::grad; kernel.fwd passes
// the arrays' .dual() there). A qd::user_error naming the kernel and the statement where
// the tangent could not be exact (docs/autodiff.md, "Forward mode").
QD_FUNC ir::function make_tangent(const ir::function& forward, const naming& names);

}  // namespace qd::inline v0::autodiff

#ifdef QD_HEADER_ONLY
#include "quadrants/autodiff/tangent-inl.hpp"
#endif
