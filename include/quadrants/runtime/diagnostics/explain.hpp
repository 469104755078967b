// kernel.explain() and kernel.dot(): a kernel's constructs with their source
// lines, the top-level values each recomputes or reads from the persisted buffer, the
// split decision and why, and the run-time checks; as text, or as a Graphviz graph.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/cache/key.hpp"

namespace qd::inline v0::detail {

class kernel_state;
class program;

// Both trace the kernel on first use; neither needs qd::init. When the kernel was compiled
// for the running program, they also say which variant it uses there and why.
QD_FUNC std::string explain_text(kernel_state& k);
QD_FUNC std::string explain_dot(kernel_state& k);

// After a launch compiled something for `k` (the caller holds k.mutex): stores its
// explanation and the keys of the records of `variant` ("whole", "split", "coverage") in
// p's cache tiers, for `qd-cache explain`. Each variant keeps its own entry.
QD_FUNC void record_explanation(kernel_state& k, program& p, const std::vector<cache::key>& keys,
                                std::string_view variant);

}  // namespace qd::inline v0::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/diagnostics/explain-inl.hpp"
#endif
