// Building a kernel's variants from its traced IR: the whole kernel (one module,
// global temporaries) and the per-offload split (one module entry per construct,
// each from the parameters alone). Internal.
#pragma once

#include "quadrants/analysis/task_plan.hpp"
#include "quadrants/base/api.hpp"
#include "quadrants/runtime/kernel_state.hpp"
#include "quadrants/runtime/program.hpp"

namespace qd::detail {

// What a build did, for the observations (SPEC §2): constructs compiled now, and
// loaded from the disk cache. Reuse of what this process already holds counts as neither.
struct build_counts {
  int compiled = 0;
  int loaded = 0;
  int tasks = 0;           // tasks of the variant built
  int tasks_compiled = 0;  // of which the compiler produced now
};

QD_FUNC void build_whole(kernel_state& k, program& p, variant& v, build_counts& counts);
QD_FUNC void build_split(kernel_state& k, program& p, const analysis::task_plan& plan, variant& v,
                         build_counts& counts);

}  // namespace qd::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/variant_builder-inl.hpp"
#endif
