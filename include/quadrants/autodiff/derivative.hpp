// The local derivatives of the IR's float operations, emitted as IR: shared by the
// adjoint (which scales them by a result's gradient) and the tangent (by an operand's tangent).
#pragma once

#include "quadrants/base/api.hpp"
#include "quadrants/ir/builder.hpp"
#include "quadrants/ir/node.hpp"

namespace qd::inline v0::autodiff {

// g * d op(x) / dx, where y = op(x) is already emitted; none where the derivative is zero
// almost everywhere (floor, ceil, round, trunc) or op has none here.
QD_FUNC ir::id unary_derivative(ir::builder& b, ir::unary_op op, dtype t, ir::id x, ir::id y, ir::id g);

// g * d(x op z) / dx (side 0) or d(x op z) / dz (side 1), where r = x op z is already
// emitted; none where the derivative is zero (floordiv, comparisons). pow's derivative in
// z is taken as 0 where x <= 0; min and max give a tie to z, as the preludes do.
QD_FUNC ir::id binary_derivative(ir::builder& b, ir::binary_op op, dtype t, ir::id x, ir::id z, ir::id r, int side,
                                 ir::id g);

}  // namespace qd::inline v0::autodiff

#ifdef QD_HEADER_ONLY
#include "quadrants/autodiff/derivative-inl.hpp"
#endif
