// Implementation of runtime/graph.hpp.
#pragma once

#include "quadrants/base/error.hpp"
#include "quadrants/detail/format.hpp"
#include "quadrants/ir/graph_mark.hpp"
#include "quadrants/runtime/graph.hpp"
#include "quadrants/runtime/kernel_state.hpp"
#include "quadrants/runtime/program.hpp"

namespace qd::detail {

QD_FUNC void set_graph_kernel(kernel_state& k) { k.graph = true; }

QD_FUNC void run_schedule(const kernel_state& k, program& p, const compiled_kernel& c, const variant& v,
                          const launch_arg* args, std::uint64_t launch_no, task_buffers& buffers) {
  const std::uint64_t max_passes = p.config().graph_max_iterations;
  std::uint64_t passes[ir::max_graph_nesting] = {};  // per open do_while: the passes it has run
  int depth = 0;
  std::uint64_t pass = 0;  // repeated passes so far, over every do_while of the launch
  const std::size_t steps = v.schedule.size();
  for (std::size_t i = 0; i < steps; ++i) {
    const analysis::schedule_step& st = v.schedule[i];
    if (st.is_task) {
      launch_task(k, p, c, v, v.tasks[static_cast<std::size_t>(st.task)], args, launch_no, pass, buffers);
      continue;
    }
    switch (st.mark) {
      case ir::graph_mark::loop_begin: passes[depth++] = 1; break;
      case ir::graph_mark::loop_end: {
        // The host loop: the flag is read back after each pass (a GPU synchronizes here).
        std::int32_t flag = 0;
        v.device->copy_to_host(&flag, args[static_cast<std::size_t>(st.flag)].data, sizeof flag);
        if (flag == 0) {
          --depth;
          break;
        }
        if (max_passes != 0 && passes[depth - 1] >= max_passes)
          throw user_error(fmt::format("kernel '{}': a qd::graph::do_while ran {} passes (graph_max_iterations) and "
                                       "its flag {} is still {}; clear the flag to end the loop, or raise "
                                       "graph_max_iterations (QD_GRAPH_MAX_ITERATIONS; 0 = unlimited)",
                                       k.name, passes[depth - 1], param_label(k, static_cast<std::size_t>(st.flag)),
                                       flag));
        ++passes[depth - 1];
        ++pass;
        i = static_cast<std::size_t>(st.jump);  // the step after the loop's begin comes next
        break;
      }
      case ir::graph_mark::fork_begin:  // branches run in order on the launching thread (docs/graphs.md)
      case ir::graph_mark::fork_next:
      case ir::graph_mark::fork_end: break;
    }
  }
}

}  // namespace qd::detail
