// Deciding a kernel's variant: the policy (config and the device's traits), the
// split analysis and its fallback, then building what was chosen. Internal.
#pragma once

#include <string>

#include "quadrants/analysis/split.hpp"
#include "quadrants/base/api.hpp"
#include "quadrants/runtime/pipeline/kernel_state.hpp"
#include "quadrants/runtime/pipeline/program.hpp"

namespace qd::inline v0::detail {

// Whether the split may run at all (a policy that keeps a kernel whole does so without a
// fallback warning); else `why` is the policy reason.
QD_FUNC bool split_enabled_by_policy(const settings& s, const backend::device_traits& traits, fallback_reason& why);

// How messages name an array access: "a[0]", "b.grad()[...]".
QD_FUNC std::string access_text(const kernel_state& k, ir::id node);

// The human-readable detail of a compile-time fallback; constructs count from 1.
QD_FUNC std::string fallback_detail(const kernel_state& k, const analysis::split_decision& d);

// The kernel compiled for `p`: decided, built and published on first use (under
// the kernel's own mutex), then read without a lock.
QD_FUNC compiled_kernel* prepare(kernel_state& k, program& p);

// A whole-kernel variant built on first need into `slot`: compiled_kernel::whole (a split
// kernel's run-time fallback) or compiled_kernel::wide (64-bit element offsets).
QD_FUNC variant& lazy_whole(kernel_state& k, program& p, lazy_variant& slot);

}  // namespace qd::inline v0::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/pipeline/variant_choice-inl.hpp"
#endif
