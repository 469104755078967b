// The non-template boundary between qd::kernel<F> and the pipeline: traced IR
// goes in once, launches come in as a flat array of launch_arg.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "quadrants/analysis/fallback.hpp"
#include "quadrants/base/api.hpp"
#include "quadrants/ir/node.hpp"

namespace qd::inline v0 {

// What the latest compile of a kernel did.
struct per_offload_observations {
  int frontend_constructs_total = -1;  // constructs the split produced; -1: the split did not run
  int constructs_compiled = 0;         // constructs compiled by the latest compile
  int constructs_loaded = 0;           // constructs loaded from the offline cache
  fallback_reason fallback = fallback_reason::none;
  std::string fallback_detail;
  std::uint64_t runtime_fallbacks = 0;  // launches that used the whole-kernel variant after a run-time check
  // Quadrants' names. The two frontend_* fields are -1 when the split did not run.
  int frontend_constructs_recompiled = -1;  // = constructs_compiled
  int frontend_constructs_cache_hit = -1;   // = total - recompiled: loaded from disk or reused in memory
  // The compiled tasks of the latest compile, whichever variant it built; -1 before any.
  int tasks_total = -1;
  int tasks_cache_hit = -1;   // loaded from disk or reused in memory
  int tasks_recompiled = -1;  // produced by the compiler now
  // Device graphs of a graph kernel on a GPU (docs/graphs.md), counted over its launches:
  // runs of tasks recorded (first launch, shapes changed, or a change the backend cannot
  // make in place) and replayed without recording; of those replays, the ones whose
  // recorded launches first got new array addresses or scalar values in place.
  std::uint64_t device_graph_builds = 0;
  std::uint64_t device_graph_replays = 0;
  std::uint64_t device_graph_updates = 0;
  // Forks (qd::concurrent, qd::graph::parallel) whose branches ran on GPU streams of their own.
  std::uint64_t device_stream_forks = 0;
};

namespace detail {

class tracer;
class kernel_state;

// One argument of a launch, as the template packs it (no allocation).
struct launch_arg {
  void* data = nullptr;
  void* grad = nullptr;
  void* dual = nullptr;  // a qd::ndarray's .dual(), where it has one; kernel.fwd passes it as `grad`
  std::int64_t shape[4] = {0, 0, 0, 0};
  std::uint64_t scalar_bits = 0;  // a scalar's value, little-endian in the low bytes
  std::uint64_t program_id = 0;   // the program that owns the array
  std::uint64_t bytes = 0;        // the array's extent in bytes (for overlap checks)
  bool extent_known = true;       // false for qd::external_array: no overlap can be ruled out
  // A member of an AoS array of structs: `data` is the array's start plus lane_offset,
  // and each element's lane_bytes from there are this member's. Two members of one
  // array share its bytes but never an element's lane.
  std::uint32_t lane_offset = 0;
  std::uint32_t lane_bytes = 0;  // 0: not a member of an AoS array
};

// The program_id of qd::external_array arguments: memory the caller owns.
inline constexpr std::uint64_t external_program_id = ~std::uint64_t{0};

using trace_function = std::function<void(tracer&)>;

QD_FUNC std::shared_ptr<kernel_state> make_kernel_state(std::string name, std::vector<std::string> param_names,
                                                        std::vector<ir::param_desc> params, trace_function trace);
// A kernel's lambda behind one virtual call (runtime/kernel.hpp: kernel_body_of<F>): a kernel
// adds this one small class to the user's translation unit instead of a std::function's.
struct kernel_body {
  virtual ~kernel_body() = default;
  virtual void trace(tracer& t) const = 0;
};
QD_FUNC std::shared_ptr<kernel_state> make_kernel_state(std::string name, std::vector<std::string> param_names,
                                                        std::vector<ir::param_desc> params,
                                                        std::unique_ptr<const kernel_body> body);
QD_FUNC void launch(kernel_state& k, const launch_arg* args, std::size_t count);
QD_FUNC void compile(kernel_state& k);
QD_FUNC per_offload_observations observations(const kernel_state& k);
QD_FUNC const std::string& kernel_name(const kernel_state& k);
QD_FUNC std::string kernel_ir_text(kernel_state& k);  // the traced IR after dead-code elimination

// Test-only, never for users: later compiles of `k` split with
// analysis::plan_split_unchecked, which recomputes every value without an effect of its
// own, ignoring what a recomputed read may observe and the run-time pair checks. Results
// may then differ from the kernel's; the fuzzer uses it to count the values the analysis
// persisted (or the fallbacks it took) that recomputing would have matched: its precision.
QD_FUNC void force_unchecked_split(kernel_state& k);

}  // namespace detail
}  // namespace qd::inline v0

// The pipeline behind these declarations, one step per file: kernel_state (the
// traced kernel), variant_choice (policy and split decision), variant_builder
// (plan, lower, resolve the variants; cache/code_cache finds or builds the code), launch.
#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/pipeline/kernel_state-inl.hpp"
#include "quadrants/runtime/pipeline/launch-inl.hpp"
#endif
