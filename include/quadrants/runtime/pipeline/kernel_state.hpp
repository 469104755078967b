// What a qd::kernel holds behind its template: the traced IR and its structure,
// and per program the compiled variants a launch picks from. Internal.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "quadrants/analysis/constructs.hpp"
#include "quadrants/analysis/split.hpp"
#include "quadrants/backend/device.hpp"
#include "quadrants/base/api.hpp"
#include "quadrants/lang/trace.hpp"
#include "quadrants/runtime/diagnostics/coverage.hpp"
#include "quadrants/runtime/graph/device_graph.hpp"
#include "quadrants/runtime/pipeline/dispatch.hpp"

namespace qd::inline v0::detail {

// One task of a variant, ready to launch.
struct compiled_task {
  void* entry = nullptr;
  bool parallel = false;
  std::uint64_t rng_salt = 0;
  unsigned block_dim = 0;               // qd::loop_config{.block_dim} of a parallel task's loop
  std::vector<std::int32_t> param_map;  // task parameter -> kernel parameter
  std::int32_t construct = -1;          // the construct it runs, or -1 (for messages)
  bool draws_random = false;            // its random streams change per launch: never in a device graph
};

// One variant of a kernel, ready to launch: its tasks in order.
struct variant {
  std::shared_ptr<backend::device> device;
  std::vector<std::shared_ptr<backend::loaded_module>> modules;
  std::vector<compiled_task> tasks;
  std::vector<analysis::schedule_step> schedule;  // a graph kernel's tasks and marks; empty: the tasks in order
  void* temps = nullptr;
  // The temporaries buffer is one per variant, so launches of this variant from
  // several host threads take turns: 0 free, 1 in use, 2 in use with waiters.
  mutable std::atomic<int> temps_state{0};
  mutable device_graphs graphs;  // a graph kernel's recorded runs (runtime/graph/device_graph.hpp)
  variant() = default;
  variant(const variant&) = delete;
  variant& operator=(const variant&) = delete;
  ~variant() {
    if (temps) device->release(temps);
  }
};

// A whole-kernel variant built on first need (under the kernel's mutex), then read
// without a lock; `wide_offsets`: built with 64-bit element offsets.
struct lazy_variant {
  explicit lazy_variant(bool wide) : wide_offsets(wide) {}
  const bool wide_offsets;
  std::unique_ptr<variant> built;
  std::atomic<variant*> ready{nullptr};
};

// A kernel ready to launch on one program.
struct compiled_kernel {
  std::uint64_t program_id = 0;
  bool bounds_checks = false;
  bool wide_bounds = false;  // the IR narrows an i64/u32 loop bound (ir::op::bound): its failure must be read back
  bool split = false;
  variant primary;                             // the split variant, or the whole kernel
  std::vector<analysis::disjoint_pair> pairs;  // checked before each split launch
  lazy_variant whole{false};                   // built on the first run-time fallback
  // The whole kernel with 64-bit element offsets, built on the first launch given an array
  // of 2^31 elements or more where the others' offsets are 32-bit (codegen::emit_options; not
  // on a backend whose variants all have 64-bit ones, backend::device_traits::wide_offsets).
  lazy_variant wide{true};
  void* coverage = nullptr;  // kernel_coverage: the probe buffer (owned by runtime/coverage)
};

// Two parameters of an adjoint kernel that must not be given overlapping arrays: the
// forward kernel writes one of them (its adjoint would read overwritten values), or both
// carry gradients into one buffer (runtime/gradient.hpp).
struct alias_pair {
  std::int32_t a = -1, b = -1;
  bool a_written = false, b_written = false;  // by the forward kernel
};

class kernel_state : public std::enable_shared_from_this<kernel_state> {
 public:
  std::string name;
  std::vector<std::string> param_names;
  std::vector<ir::param_desc> params;
  trace_function trace;

  std::mutex mutex;  // this kernel's preparation only; launches never take it
  bool traced = false;
  bool traced_debug = false;               // traced with config.debug: qd::assert_ is in the IR
  std::vector<assertion_site> assertions;  // the qd::assert_ calls traced, by number
  ir::function ir;
  analysis::kernel_structure structure;
  per_offload_observations obs;
  // The compiled kernel of the program that last prepared it. A launch reads
  // ready_program first and `ready` only when it names its own program: a launch
  // never dereferences a compiled kernel that another thread's prepare (for a newer
  // program) may be freeing.
  std::shared_ptr<compiled_kernel> compiled;
  std::atomic<compiled_kernel*> ready{nullptr};
  std::atomic<std::uint64_t> ready_program{0};
  std::atomic<std::uint64_t> runtime_fallbacks{0};
  mutable std::atomic<std::uint64_t> device_graph_builds{0};   // runs recorded (runtime/graph/graph.hpp)
  mutable std::atomic<std::uint64_t> device_graph_replays{0};  // runs replayed without recording
  mutable std::atomic<std::uint64_t> device_graph_updates{0};  // of those, with new arguments given in place
  mutable std::atomic<std::uint64_t> device_stream_forks{0};   // forks whose branches ran on streams of their own
  std::atomic<bool> fallback_warned{false};
  bool unchecked_split = false;  // test-only: see force_unchecked_split
  // kernel_coverage: this kernel with probes and one more parameter (the probe buffer),
  // made on first need; launches run it in place of this one (runtime/diagnostics/coverage.hpp).
  std::unique_ptr<kernel_state> coverage_twin;
  std::shared_ptr<const std::vector<coverage_probe>> coverage_probes;
  // kernel.grad: the adjoint kernel, made on first use from this kernel's IR (runtime/gradient.hpp).
  std::once_flag adjoint_once;
  std::shared_ptr<kernel_state> adjoint;
  // An adjoint's pairs checked at each of its launches; set when it is traced, empty for
  // every other kernel (runtime/gradient.hpp).
  std::vector<alias_pair> alias_pairs;
  // kernel.fwd: the tangent kernel, made on first use from this kernel's IR (runtime/gradient.hpp).
  std::once_flag tangent_once;
  std::shared_ptr<kernel_state> tangent;
  bool not_recorded = false;    // a tangent kernel or a custom backward: tapes do not record it
  bool custom_adjoint = false;  // its adjoint is a given kernel (qd::ad::custom_grad)
  bool graph = false;           // qd::kernel(name, qd::graph::on, ...) (runtime/graph/graph.hpp)
  // The mesh relations the IR reads, per parameter (runtime/mesh.hpp), found on first use.
  std::once_flag mesh_once;
  std::vector<std::uint32_t> mesh_relations;
};

// "'x'" or "#2": how messages name a parameter.
QD_FUNC std::string param_name(const kernel_state& k, std::size_t param);
// "parameter 'x' (#0, ndarray<f32, 1>)".
QD_FUNC std::string param_label(const kernel_state& k, std::size_t param);
// How messages name construct `c` (0-based): "construct 2", with "(the loop at f.cpp:43)"
// when its source line is known; place_first: "the loop at f.cpp:43 (construct 2)".
QD_FUNC std::string construct_label(const kernel_state& k, std::int32_t c, bool place_first = false);
// Where kernel parameter `param` is accessed inside construct `c` (any, when c < 0), for
// bounds errors: "; x is accessed there at f.cpp:12, f.cpp:15", or "" when no line is known.
QD_FUNC std::string access_sites(const kernel_state& k, std::size_t param, std::int32_t c);
// The kernel with coverage probes (kernel_coverage), made once; needs k traced and its mutex held.
QD_FUNC kernel_state& coverage_twin(kernel_state& k);
// Traces the lambda once, removes dead code and analyses the structure; checked builds
// verify the IR. The IR depends on the configuration only through config.debug
// (qd::assert_ is compiled out without it): a program with the other debug setting
// traces the kernel again. Needs k's mutex held.
QD_FUNC void ensure_traced(kernel_state& k);
// ensure_traced in two halves, so that qd::compile_all runs the user's lambdas one at a
// time and the analysis after them on its workers: the lambda traced (nothing when k's
// IR is current for this program's debug setting), then the trace analysed into k. Each
// needs k's mutex held; the lock may be let go between them.
struct raw_trace {
  ir::function fn;
  std::vector<assertion_site> assertions;
  bool debug = false;
};
QD_FUNC std::optional<raw_trace> trace_if_stale(kernel_state& k);
QD_FUNC void finish_trace(kernel_state& k, raw_trace&& r);
// The traced IR as text, parameters by name where the kernel names them.
QD_FUNC std::string traced_ir_text(const kernel_state& k);
// The failure message of assertion `number` (qd::assert_), naming its source line.
QD_FUNC std::string assertion_failure(const kernel_state& k, std::int64_t number);

}  // namespace qd::inline v0::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/pipeline/kernel_state-inl.hpp"
#endif
