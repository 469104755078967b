// Building a kernel's variants from its traced IR, in three steps: plan (the tasks:
// analysis/task_plan.hpp), lower (each task as standalone IR, then as the backend's code,
// keyed by cache/key_recipe.hpp) and resolve (cache/code_cache.hpp: the tiers, or the
// backend's build). The whole kernel is one module with global temporaries; the
// per-offload split one module entry per construct. Internal.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "quadrants/analysis/task_plan.hpp"
#include "quadrants/base/api.hpp"
#include "quadrants/cache/key.hpp"
#include "quadrants/runtime/pipeline/kernel_state.hpp"
#include "quadrants/runtime/pipeline/program.hpp"

namespace qd::inline v0::detail {

// What a build did, for the observations: constructs compiled now, and
// loaded from a cache tier. Reuse of what this process already holds counts as neither.
struct build_counts {
  int compiled = 0;
  int loaded = 0;
  int tasks = 0;                    // tasks of the variant built
  int tasks_compiled = 0;           // of which the backend built now
  std::vector<cache::key> records;  // the cache records the variant is made of (for `qd-cache explain`)
};

// At most this many compiler programs for one kernel's misses built on this thread (0: no
// limit but the program's compile threads). qd::compile_all sets 1 while other kernels keep
// the other compile threads busy: one module per kernel, so each compiler run's fixed cost
// (starting it, the prelude, linking) and each warm start's load are paid once per kernel.
inline thread_local std::size_t compile_programs_limit = 0;

// print_ir with a diagnostic fallback: dumps the split variant the kernel would have used
// under <kernel>/split/, without compiling it.
QD_FUNC void dump_split_preview(const kernel_state& k, program& p, const analysis::task_plan& plan);

// wide_offsets: element offsets in 64 bits (codegen::emit_options), for arrays of 2^31
// elements or more.
QD_FUNC void build_whole(kernel_state& k, program& p, variant& v, build_counts& counts, bool wide_offsets = false);
QD_FUNC void build_split(kernel_state& k, program& p, const analysis::task_plan& plan, variant& v,
                         build_counts& counts);

}  // namespace qd::inline v0::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/pipeline/variant_builder-inl.hpp"
#endif
