// Lowering: one task of a plan becomes a standalone IR function, from the
// kernel's parameters plus the global temporaries (whole) or recomputation (split).
#pragma once

#include <cstdint>
#include <vector>

#include "quadrants/analysis/task_plan.hpp"
#include "quadrants/base/api.hpp"

namespace qd::inline v0::codegen {

struct lowered_task {
  ir::function fn;  // block 0: prologue statements, then the loop (parallel tasks)
  bool parallel = false;
  std::int32_t construct = -1;          // the construct it runs, or -1
  std::vector<std::int32_t> param_map;  // task parameter -> kernel parameter, in first-use order
};

// Values the task uses but does not compute come from temporaries when `plan`
// assigns them a slot, and are recomputed when invariant; variables with a slot
// live in temporaries.
QD_FUNC lowered_task lower_task(const ir::function& kernel, const analysis::kernel_structure& s,
                                const analysis::task& t, const analysis::task_plan& plan);

// Verifies a lowered task (ir::verify, and the shape every backend relies on: a
// parallel task ends with its loop and draws no random number before it); throws
// qd::internal_error. Checked builds run it on every lowered task.
QD_FUNC void verify(const lowered_task& t);

}  // namespace qd::inline v0::codegen

#ifdef QD_HEADER_ONLY
#include "quadrants/codegen/lower-inl.hpp"
#endif
