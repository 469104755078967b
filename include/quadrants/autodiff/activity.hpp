// Which values of a forward kernel carry a gradient, and which of its values the
// adjoint reads (so must find in memory as the forward launch read them).
#pragma once

#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/ir/node.hpp"

namespace qd::inline v0::autodiff {

// active[i]: node i is a float value that depends on an element of a needs_grad
// parameter (a variable: one such value is stored into it).
QD_FUNC std::vector<bool> active_values(const ir::function& fn);

// needed[i]: the adjoint reads node i's value, directly (a derivative that depends on
// it: `x * y`'s on the other factor, `sin x`'s on x; a branch condition, a loop bound,
// an index) or to recompute such a value. A global_load that is not needed only passes
// its gradient on linearly (`y[i] += 2 * x[i]`): its value may change after the read.
QD_FUNC std::vector<bool> needed_values(const ir::function& fn, const std::vector<bool>& active);

}  // namespace qd::inline v0::autodiff

#ifdef QD_HEADER_ONLY
#include "quadrants/autodiff/activity-inl.hpp"
#endif
