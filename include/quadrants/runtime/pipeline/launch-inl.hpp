// Launching a prepared kernel: the arrays' program, the run-time disjointness
// check of a split kernel, then each task of the chosen variant. No allocation,
// hashing or global lock on this path.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>

#include "quadrants/base/error.hpp"
#include "quadrants/base/limits.hpp"
#include "quadrants/base/log.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/lang/trace.hpp"
#include "quadrants/runtime/gradient.hpp"
#include "quadrants/runtime/graph/graph.hpp"
#include "quadrants/runtime/pipeline/kernel_state.hpp"
#include "quadrants/runtime/mesh.hpp"
#include "quadrants/runtime/pipeline/program.hpp"
#include "quadrants/runtime/pipeline/task_launch.hpp"
#include "quadrants/runtime/pipeline/variant_choice.hpp"

namespace qd::inline v0::detail {

// Whether two parameters' buffers (data, or with `grad` the gradient buffer, which a
// qd::ndarray allocates with the data's extent) are provably disjoint address ranges.
QD_FUNC bool disjoint(const launch_arg& a, bool a_grad, const launch_arg& b, bool b_grad) {
  if (!a.extent_known || !b.extent_known) return false;
  if (a.lane_bytes != 0 && b.lane_bytes != 0 && !a_grad && !b_grad &&
      static_cast<const unsigned char*>(a.data) - a.lane_offset ==
          static_cast<const unsigned char*>(b.data) - b.lane_offset)  // two members of one array of structs
    return a.lane_offset + a.lane_bytes <= b.lane_offset || b.lane_offset + b.lane_bytes <= a.lane_offset;
  auto a0 = reinterpret_cast<std::uintptr_t>(a_grad ? a.grad : a.data);
  auto b0 = reinterpret_cast<std::uintptr_t>(b_grad ? b.grad : b.data);
  return a.bytes == 0 || b.bytes == 0 || a0 + a.bytes <= b0 || b0 + b.bytes <= a0;
}

// Holds a variant's temporaries for one launch. Uncontended, it costs one
// compare-exchange and one exchange; a second thread launching the same kernel
// sleeps on the atomic until the first is done (on a GPU, until its launches are
// queued: the stream then runs them in order).
class temps_turn {
 public:
  explicit temps_turn(const variant& v) : state_(v.temps ? &v.temps_state : nullptr) {
    if (!state_) return;
    int expected = 0;
    if (state_->compare_exchange_strong(expected, 1, std::memory_order_acquire)) return;
    while (state_->exchange(2, std::memory_order_acquire) != 0) state_->wait(2, std::memory_order_relaxed);
  }
  temps_turn(const temps_turn&) = delete;
  temps_turn& operator=(const temps_turn&) = delete;
  ~temps_turn() {
    if (state_ && state_->exchange(0, std::memory_order_release) == 2) state_->notify_all();
  }

 private:
  std::atomic<int>* state_;
};

QD_FUNC void run_variant(const kernel_state& k, program& p, const compiled_kernel& c, const variant& v,
                         const launch_arg* args) {
  temps_turn turn(v);
  std::uint64_t launch_no = p.next_launch();
  task_buffers buffers;
  if (!v.schedule.empty()) {  // a graph kernel, or a kernel with forks (runtime/graph/graph.hpp)
    run_schedule(k, p, c, v, args, launch_no, buffers);
    return;
  }
  for (const compiled_task& t : v.tasks) launch_task(k, p, c, v, t, args, launch_no, 0, buffers);
}

// Loop indices are i32 and the analysis relies on extents in [0, 2^31) (qd::ndarray
// checks this when it is created; an external array when it is bound).
QD_FUNC void check_external_extents(const kernel_state& k, std::size_t param, const launch_arg& a) {
  for (int d = 0; d < k.params[param].ndim; ++d)
    if (a.shape[d] < 0 || a.shape[d] > std::int64_t{2147483647})
      throw_launch_error(k, param,
                         fmt::format("the qd::external_array's extent {} of dimension {} is out of range; "
                                     "extents must be in 0..2147483647",
                                     a.shape[d], d));
}

// Whether an array has 2^31 elements or more: offsets past 32 bits. A qd::ndarray's extents
// are below 2^31, so no partial product overflows; an external array's extents out of that
// range make the launch throw just after (check_external_extents).
QD_FUNC bool has_huge_extent(const ir::param_desc& d, const launch_arg& a) {
  std::uint64_t n = 1;
  for (int e = 0; e < d.ndim; ++e) {
    n *= static_cast<std::uint64_t>(a.shape[e]);
    if (n > std::uint64_t{2147483647}) return true;
  }
  return false;
}

[[noreturn]] QD_FUNC void throw_launch_while_tracing(const kernel_state& k) {
  throw user_error(
      fmt::format("kernel '{}' launched while tracing kernel '{}': a kernel lambda runs once, at the "
                  "first launch, to record the kernel, so it cannot launch kernels; launch '{}' "
                  "before or after, from host code",
                  k.name, active_tracer->kernel, k.name));
}

QD_FUNC void launch(kernel_state& k, const launch_arg* args, std::size_t count) {
  if (active_tracer != nullptr) throw_launch_while_tracing(k);
  program_use use(std::nothrow);  // qd::reset() waits until this launch is done
  if (!use) throw_not_initialized(fmt::format("kernel '{}'", k.name));
  program* p = &*use;
  compiled_kernel* c = nullptr;
  if (k.ready_program.load(std::memory_order_acquire) == p->id()) c = k.ready.load(std::memory_order_acquire);
  if (c == nullptr) {
    if (p->config().compile_only)
      throw user_error(
          fmt::format("kernel '{}': compile_only is set, so kernels can be compiled (kernel.compile()) "
                      "and stored in the offline cache but not launched; unset compile_only to run them",
                      k.name));
    c = prepare(k, *p);
  }

  bool huge = false;  // an array of 2^31 elements or more: 64-bit offsets
  for (std::size_t i = 0; i < count; ++i) {
    const ir::param_desc& d = k.params[i];
    if (!d.is_array) continue;
    huge = huge || has_huge_extent(d, args[i]);
    if (args[i].program_id != p->id() && args[i].program_id != external_program_id)
      throw_launch_error(k, i,
                         args[i].program_id == 0
                             ? "the qd::ndarray passed was moved from"
                             : "the qd::ndarray passed was created before qd::reset() or a later qd::init(); create it "
                               "again in the running program");
    if (d.needs_grad && args[i].grad == nullptr)
      throw_launch_error(k, i, "the parameter needs a gradient buffer; construct the qd::ndarray with qd::needs_grad");
    if (args[i].program_id == external_program_id) check_external_extents(k, i, args[i]);
  }
  if (!k.alias_pairs.empty()) check_adjoint_aliasing(k, args);  // an adjoint: one array for two parameters
  const variant* v = &c->primary;
  // A huge array: the whole kernel with 64-bit offsets (under kernel_coverage, the instrumented
  // twin's), unless every variant of this backend has them.
  if (huge && !p->device().traits().wide_offsets) {
    v = &lazy_whole(c->coverage ? *k.coverage_twin : k, *p, c->wide);
  } else if (c->split) {
    for (const auto& pair : c->pairs) {
      const launch_arg& a = args[static_cast<std::size_t>(pair.a)];
      const launch_arg& b = args[static_cast<std::size_t>(pair.b)];
      if (disjoint(a, pair.a_grad, b, pair.b_grad)) continue;
      k.runtime_fallbacks.fetch_add(1, std::memory_order_relaxed);
      if (!k.fallback_warned.exchange(true))
        log_fmt(log_level::warn,
                "[PER_OFFLOAD][FALLBACK] kernel '{}': parameters '{}' and '{}' {}; using the "
                "whole-kernel variant",
                k.name, param_name(k, static_cast<std::size_t>(pair.a)) + (pair.a_grad ? ".grad()" : ""),
                param_name(k, static_cast<std::size_t>(pair.b)) + (pair.b_grad ? ".grad()" : ""),
                a.extent_known && b.extent_known ? "share a buffer"
                                                 : "may share a buffer (an external array's extent is unknown)");
      v = &lazy_whole(k, *p, c->whole);
      break;
    }
  }
  if (c->coverage) {  // kernel_coverage: the instrumented twin, with the probe buffer as its last argument
    std::array<launch_arg, limits::max_kernel_params> with_probes;
    std::copy(args, args + count, with_probes.begin());
    launch_arg& probes = with_probes[count];
    probes = launch_arg{};
    probes.data = c->coverage;
    probes.shape[0] = static_cast<std::int64_t>(k.coverage_probes->empty() ? 1 : k.coverage_probes->size());
    probes.program_id = p->id();
    run_variant(*k.coverage_twin, *p, *c, *v, with_probes.data());
    return;
  }
  run_variant(k, *p, *c, *v, args);
  if (active_tape != nullptr) record_on_tape(k, args, count);
}

}  // namespace qd::inline v0::detail
