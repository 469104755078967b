// Every kernel of the process, held weakly, for qd::compile_all. Internal.
#pragma once

#include <memory>
#include <vector>

#include "quadrants/base/api.hpp"

namespace qd::inline v0::detail {

class kernel_state;

// Adds `k`, once, when it is made (make_kernel_state). A lock at kernel creation only.
QD_FUNC void register_kernel(const std::shared_ptr<kernel_state>& k);
// The kernels alive now, in the order they were made.
QD_FUNC std::vector<std::shared_ptr<kernel_state>> live_kernels();

}  // namespace qd::inline v0::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/pipeline/kernel_registry-inl.hpp"
#endif
