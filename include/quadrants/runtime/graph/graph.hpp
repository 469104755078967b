// Graph kernels at run time (docs/graphs.md): the launch walks a variant's
// schedule (analysis/graph.hpp) -- its tasks in order, a do_while body again while its
// flag is non-zero (read back after each pass), fork branches at once or one after the
// other; on a backend with device graphs each run of tasks is recorded once and replayed.
// Internal.
#pragma once

#include <cstdint>
#include <string>

#include "quadrants/backend/device.hpp"
#include "quadrants/base/api.hpp"
#include "quadrants/base/limits.hpp"
#include "quadrants/runtime/pipeline/dispatch.hpp"
#include "quadrants/runtime/pipeline/task_launch.hpp"

namespace qd::inline v0::detail {

class program;
struct compiled_kernel;
struct variant;

// Runs a graph kernel's schedule; a do_while over graph_max_iterations passes is a qd::user_error.
QD_FUNC void run_schedule(const kernel_state& k, program& p, const compiled_kernel& c, const variant& v,
                          const launch_arg* args, std::uint64_t launch_no, task_buffers& buffers);
// Makes `k` a graph kernel (qd::kernel(name, qd::graph::on, lambda)).
QD_FUNC void set_graph_kernel(kernel_state& k);
// After tracing: concurrent branches that provably write the same elements are a qd::user_error.
QD_FUNC void check_graph_kernel(const kernel_state& k);
// fallback_detail of the `concurrent` fallback: "a qd::concurrent with 2 branches (the first
// at sim.cpp:12) runs them at once, ...".
QD_FUNC std::string concurrent_detail(const kernel_state& k);

}  // namespace qd::inline v0::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/graph/graph-inl.hpp"
#endif
