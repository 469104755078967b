// Building a kernel's variants from its traced IR: the whole kernel (one module,
// global temporaries) and the per-offload split (one module entry per construct,
// each from the parameters alone). Internal.
#pragma once

#include <vector>

#include "quadrants/analysis/task_plan.hpp"
#include "quadrants/base/api.hpp"
#include "quadrants/cache/key.hpp"
#include "quadrants/codegen/lower.hpp"
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
  std::vector<cache::key> records;  // the cache records the variant is made of (for `qd-cache explain`)
};

// An offload's generated source and its cache key; the entry name derives from the key.
struct offload_code {
  cache::key key;
  std::string entry;
  std::string body;
};
QD_FUNC offload_code offload_code_of(program& p, const codegen::lowered_task& t);

// print_ir with a diagnostic fallback: dumps the split variant the kernel would have used
// under <kernel>/split/, without compiling it.
QD_FUNC void dump_split_preview(const kernel_state& k, program& p, const analysis::task_plan& plan);

QD_FUNC void build_whole(kernel_state& k, program& p, variant& v, build_counts& counts);
QD_FUNC void build_split(kernel_state& k, program& p, const analysis::task_plan& plan, variant& v,
                         build_counts& counts);

}  // namespace qd::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/variant_builder-inl.hpp"
#endif
