// Implementation of runtime/graph/graph.hpp.
#pragma once

#include <algorithm>
#include <exception>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "quadrants/analysis/fork.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/ir/graph_mark.hpp"
#include "quadrants/runtime/graph/branch_workers.hpp"
#include "quadrants/runtime/graph/graph.hpp"
#include "quadrants/runtime/pipeline/kernel_state.hpp"
#include "quadrants/runtime/pipeline/program.hpp"

namespace qd::inline v0::detail {

QD_FUNC void set_graph_kernel(kernel_state& k) { k.graph = true; }

QD_FUNC void check_graph_kernel(const kernel_state& k) {
  if (!ir::has_graph_marks(k.ir)) return;
  const std::vector<analysis::graph_region> regions = analysis::graph_regions(k.ir, k.structure);
  const std::optional<analysis::fork_conflict> conflict = analysis::find_fork_conflict(k.ir, k.structure, regions);
  if (!conflict) return;
  const analysis::graph_region& r = regions[static_cast<std::size_t>(conflict->region)];
  const ir::node& w = k.ir.at(conflict->write_a);
  throw user_error(fmt::format(
      "kernel '{}': branches {} and {} of a {} both write the same elements of {}{}; "
      "branches run at once, so this is a race. Write disjoint elements (disjoint parts of "
      "one array are fine), or run the writes one after the other",
      k.name, conflict->branch_a + 1, conflict->branch_b + 1, ir::name(r.fork),
      param_label(k, static_cast<std::size_t>(w.param)), (w.flags & ir::access::grad) ? "'s gradient" : ""));
}

QD_FUNC std::string concurrent_detail(const kernel_state& k) {
  for (const analysis::graph_region& r : analysis::graph_regions(k.ir, k.structure)) {
    if (r.loop) continue;
    // Its source line: that of the first statement inside it with one (a fork's marks are
    // recorded by the library, and top-level values computed for a statement before it
    // runs carry the line of the statement before).
    std::string where;
    for (std::int32_t st = r.begin + 1; st < r.end && where.empty(); ++st) {
      const analysis::statement_info& info = k.structure.statements[static_cast<std::size_t>(st)];
      if (info.mark || ir::has_value(k.ir.at(info.node).code)) continue;
      if (const ir::source_loc l = k.ir.location(info.node); l.known())
        where = " (the first at " + ir::to_text(l) + ")";
    }
    return fmt::format("a {} with {} branches{} runs them at once, so the kernel stays one unit", ir::name(r.fork),
                       r.branches.size(), where);
  }
  return std::string(describe(fallback_reason::concurrent));
}

// One fork's branches, as the branch workers see them.
struct fork_job {
  const kernel_state* k;
  program* p;
  const compiled_kernel* c;
  const variant* v;
  const launch_arg* args;
  std::uint64_t launch_no, pass;
  std::vector<std::pair<std::size_t, std::size_t>> branches;  // [from, to) of task steps
  std::vector<std::exception_ptr> failures;

  void run_branch(std::size_t b, task_buffers& buffers, backend::launch_queue* queue = nullptr) const {
    for (std::size_t i = branches[b].first; i < branches[b].second; ++i)
      launch_task(*k, *p, *c, *v, v->tasks[static_cast<std::size_t>(v->schedule[i].task)], args, launch_no, pass,
                  buffers, queue);
  }
};

// The fork whose fork_begin is step `begin`, its branches found.
QD_FUNC fork_job make_fork_job(const kernel_state& k, program& p, const compiled_kernel& c, const variant& v,
                               const launch_arg* args, std::uint64_t launch_no, std::uint64_t pass, std::size_t begin) {
  const std::size_t end = static_cast<std::size_t>(v.schedule[begin].jump);
  fork_job job{&k, &p, &c, &v, args, launch_no, pass, {}, {}};
  for (std::size_t i = begin; i < end; ++i)
    if (!v.schedule[i].is_task) job.branches.push_back({i + 1, i + 1});
  for (auto& [from, to] : job.branches)
    while (to < end && v.schedule[to].is_task) ++to;
  return job;
}

// Runs a fork's branches on queues of their own, forked from and joined to `origin`
// (null: the default queue; or a recording, recorded or `updating`); false if the
// backend has none.
QD_FUNC bool run_on_branch_queues(const fork_job& job, device_graphs* g, backend::launch_queue* origin,
                                  task_buffers& buffers, bool updating = false) {
  const variant& v = *job.v;
  const std::size_t n = job.branches.size();
  if (n < 2 || !g || !v.device->traits().branch_queues) return false;
  while (g->branch_queues.size() < n) {  // made once, kept with the variant
    g->branch_queues.push_back(v.device->make_branch_queue());
    g->branches.push_back(g->branch_queues.back().get());
  }
  const std::span<backend::launch_queue* const> queues(g->branches.data(), n);
  v.device->fork(origin, queues);
  try {
    for (std::size_t b = 0; b < n; ++b) job.run_branch(b, buffers, queues[b]);
  } catch (...) {
    v.device->join(origin, queues);
    throw;
  }
  v.device->join(origin, queues);
  if (!updating) job.k->device_stream_forks.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// The branches of the fork whose fork_begin is step `begin`: at once on the branch
// workers when the backend launches from several threads, on streams of their own when
// it has branch queues (`g`, held by this launch), else one after the other.
QD_FUNC void run_fork(const kernel_state& k, program& p, const compiled_kernel& c, const variant& v,
                      const launch_arg* args, std::uint64_t launch_no, std::uint64_t pass, std::size_t begin,
                      task_buffers& buffers, device_graphs* g) {
  fork_job job = make_fork_job(k, p, c, v, args, launch_no, pass, begin);
  if (run_on_branch_queues(job, g, nullptr, buffers)) return;
  const std::size_t n = job.branches.size();
  if (n >= 2 && v.device->traits().concurrent_launches) {
    job.failures.resize(job.branches.size());
    auto branch = [](void* ctx, std::size_t b) {
      auto& j = *static_cast<fork_job*>(ctx);
      try {
        task_buffers own;
        j.run_branch(b, own);
      } catch (...) {
        j.failures[b] = std::current_exception();
      }
    };
    if (shared_branch_workers().run(job.branches.size(), branch, &job)) {
      for (const std::exception_ptr& f : job.failures)
        if (f) std::rethrow_exception(f);
      return;
    }
  }
  for (std::size_t b = 0; b < job.branches.size(); ++b) job.run_branch(b, buffers);
}

// Finds the runs of `v`'s schedule once: the steps between do_while marks (fork marks
// stay inside a run: a device graph records the branches in order). With device loops,
// each innermost do_while becomes one run of its own.
QD_FUNC void plan_recorded_runs(const variant& v, device_graphs& g, bool device_loops) {
  const std::size_t steps = v.schedule.size();
  g.runs.clear();
  g.runs.resize(steps);
  auto loop_mark = [&](std::size_t i) {
    const analysis::schedule_step& st = v.schedule[i];
    return !st.is_task && (st.mark == ir::graph_mark::loop_begin || st.mark == ir::graph_mark::loop_end);
  };
  // A device loop runs an unknown number of passes, so a later task's random streams
  // (mixed with the pass count) would differ from the host loop's: all or nothing.
  for (const compiled_task& t : v.tasks) device_loops &= !t.draws_random;
  g.device_loops = device_loops;
  for (std::size_t i = 0; i < steps; ++i) {
    const analysis::schedule_step& st = v.schedule[i];
    std::size_t from = i, to = steps;  // the steps a run would record
    if (loop_mark(i)) {
      if (!device_loops || st.mark != ir::graph_mark::loop_begin) continue;
      to = static_cast<std::size_t>(st.jump);  // its loop_end
      bool innermost = true;
      for (std::size_t j = i + 1; j < to; ++j) innermost &= !loop_mark(j);
      if (!innermost) continue;
      from = i + 1;
      g.runs[i].loop_flag = v.schedule[to].flag;
    } else {
      for (to = i; to < steps && !loop_mark(to); ++to) {
      }
    }
    bool tasks = false, random = false;
    for (std::size_t j = from; j < to; ++j) {
      const analysis::schedule_step& s = v.schedule[j];
      if (!s.is_task) continue;
      tasks = true;
      random |= v.tasks[static_cast<std::size_t>(s.task)].draws_random;
    }
    if (g.runs[i].loop_flag >= 0 && !tasks) {  // an empty body: the host loop
      g.runs[i] = recorded_run{};
      continue;
    }
    g.runs[i].end = g.runs[i].loop_flag >= 0 ? to + 1 : to;
    g.runs[i].recordable = tasks && !random;
    i = g.runs[i].end - 1;
  }
  g.planned = true;
}

// Holds a variant's device graphs and branch queues for one launch, or finds them in
// use by another thread's launch (which then launches plainly): one exchange.
class graphs_turn {
 public:
  graphs_turn(const kernel_state& k, const program& p, const compiled_kernel& c, const variant& v) {
    // A bounds-checked launch reads the error record back after each task, which neither
    // a graph nor a stream running at once can do: such launches stay plain.
    if (c.bounds_checks || c.wide_bounds) return;
    const backend::device_traits t = v.device->traits();
    const bool record = k.graph && t.records_launches;
    if (!record && !t.branch_queues) return;
    if (v.graphs.busy.exchange(true, std::memory_order_acquire)) return;
    held_ = &v.graphs;
    record_ = record;
    // graph_max_iterations is counted by the host loop: with a limit, do_whiles stay there.
    const bool loops = t.device_loops && p.config().graph_max_iterations == 0 && !v.graphs.device_loops_failed;
    if (record && (!held_->planned || held_->device_loops != loops)) plan_recorded_runs(v, *held_, loops);
  }
  graphs_turn(const graphs_turn&) = delete;
  graphs_turn& operator=(const graphs_turn&) = delete;
  ~graphs_turn() {
    if (held_) held_->busy.store(false, std::memory_order_release);
  }
  device_graphs* held() const { return held_; }                           // branch queues
  device_graphs* recording() const { return record_ ? held_ : nullptr; }  // recorded runs

 private:
  device_graphs* held_ = nullptr;
  bool record_ = false;
};

// Sends the launches of the steps [start, end) to `queue`, a recording being recorded
// or `updating`: fork branches on branch queues forked from it where the backend has
// them (parallel paths of the graph), else in order. An update walks the same steps in
// the same order, so each launch meets the node it recorded.
QD_FUNC void queue_steps(const kernel_state& k, program& p, const compiled_kernel& c, const variant& v,
                         const launch_arg* args, std::uint64_t launch_no, std::uint64_t pass, std::size_t start,
                         std::size_t end, device_graphs& g, task_buffers& buffers, backend::launch_queue& queue,
                         bool updating) {
  for (std::size_t i = start; i < end; ++i) {
    const analysis::schedule_step& st = v.schedule[i];
    if (st.is_task) {
      launch_task(k, p, c, v, v.tasks[static_cast<std::size_t>(st.task)], args, launch_no, pass, buffers, &queue);
    } else if (st.mark == ir::graph_mark::fork_begin) {
      const fork_job job = make_fork_job(k, p, c, v, args, launch_no, pass, i);
      if (run_on_branch_queues(job, &g, &queue, buffers, updating)) i = static_cast<std::size_t>(st.jump);
    }
  }
}

// Whether `args` differ from what `run` was recorded with only in array addresses and
// scalar values: the same shapes, and a gradient buffer where there was one.
QD_FUNC bool same_layout(const recorded_run& run, const launch_arg* args, std::size_t n) {
  if (run.arguments.size() != n) return false;
  for (std::size_t i = 0; i < n; ++i) {
    const argument_print& r = run.arguments[i];
    if ((r.grad == nullptr) != (args[i].grad == nullptr) ||
        !std::equal(std::begin(r.shape), std::end(r.shape), std::begin(args[i].shape)))
      return false;
  }
  return true;
}

// Gives a plain run's recorded launches the arguments `args` in place (the backend's
// node updates); false when the backend cannot (then the run is recorded again).
QD_FUNC bool update_recorded(const kernel_state& k, program& p, const compiled_kernel& c, const variant& v,
                             const launch_arg* args, std::uint64_t launch_no, std::uint64_t pass, std::size_t start,
                             device_graphs& g, task_buffers& buffers) {
  recorded_run& run = g.runs[start];
  backend::launch_queue& recording = *run.recording;
  if (!v.device->begin_update(recording)) return false;
  try {
    queue_steps(k, p, c, v, args, launch_no, pass, start, run.end, g, buffers, recording, true);
  } catch (...) {
    v.device->end_update(recording);
    run.recording.reset();  // partly updated
    throw;
  }
  return v.device->end_update(recording);
}

// Runs the run of steps starting at `start`: replays its recording when the arguments
// are those it was recorded with (no allocation, no hashing); when only array addresses
// or scalar values changed, gives a plain run's recorded launches the new ones in place
// and replays (ping-pong buffers); else records it again.
// False when a device loop could not be recorded (the driver or its compiler refused:
// nothing ran); the caller then plans host loops and runs this one on the host.
QD_FUNC bool run_recorded(const kernel_state& k, program& p, const compiled_kernel& c, const variant& v,
                          const launch_arg* args, std::uint64_t launch_no, std::uint64_t pass, std::size_t start,
                          device_graphs& g, task_buffers& buffers) {
  recorded_run& run = g.runs[start];
  const std::size_t n = k.params.size();
  bool same = run.recording != nullptr && run.arguments.size() == n;
  for (std::size_t i = 0; same && i < n; ++i) {
    const launch_arg& a = args[i];
    const argument_print& r = run.arguments[i];
    same = r.data == a.data && r.grad == a.grad && r.scalar_bits == a.scalar_bits &&
           std::equal(std::begin(r.shape), std::end(r.shape), std::begin(a.shape));
  }
  if (same) {
    v.device->replay(*run.recording);
    k.device_graph_replays.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  auto remember = [&] {
    run.arguments.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      argument_print& r = run.arguments[i];
      r.data = args[i].data;
      r.grad = args[i].grad;
      std::copy(std::begin(args[i].shape), std::end(args[i].shape), std::begin(r.shape));
      r.scalar_bits = args[i].scalar_bits;
    }
  };
  // A device loop's recording also holds its flag's address outside any kernel node: recorded again.
  if (run.recording && run.loop_flag < 0 && same_layout(run, args, n) &&
      update_recorded(k, p, c, v, args, launch_no, pass, start, g, buffers)) {
    remember();
    v.device->replay(*run.recording);
    k.device_graph_replays.fetch_add(1, std::memory_order_relaxed);
    k.device_graph_updates.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  run.recording.reset();
  remember();
  std::unique_ptr<backend::launch_queue> recording;
  try {
    recording = run.loop_flag >= 0 ? v.device->begin_loop_recording(args[static_cast<std::size_t>(run.loop_flag)].data)
                                   : v.device->begin_recording();
    queue_steps(k, p, c, v, args, launch_no, pass, start, run.end, g, buffers, *recording, false);
    v.device->end_recording(*recording);
  } catch (const error& e) {
    if (run.loop_flag < 0 || (!dynamic_cast<const driver_error*>(&e) && !dynamic_cast<const compile_error*>(&e))) throw;
    log_fmt(log_level::warn,
            "kernel '{}': a qd::graph::do_while could not be recorded as a device loop ({}); "
            "its passes run from the host loop instead",
            k.name, e.what());
    return false;
  }
  v.device->replay(*recording);
  run.recording = std::move(recording);
  k.device_graph_builds.fetch_add(1, std::memory_order_relaxed);
  return true;
}

QD_FUNC void run_schedule(const kernel_state& k, program& p, const compiled_kernel& c, const variant& v,
                          const launch_arg* args, std::uint64_t launch_no, task_buffers& buffers) {
  graphs_turn graphs(k, p, c, v);
  const std::uint64_t max_passes = p.config().graph_max_iterations;
  std::uint64_t passes[ir::max_graph_nesting] = {};  // per open do_while: the passes it has run
  int depth = 0;
  std::uint64_t pass = 0;  // repeated passes so far, over every do_while of the launch
  const std::size_t steps = v.schedule.size();
  for (std::size_t i = 0; i < steps; ++i) {
    const analysis::schedule_step& st = v.schedule[i];
    if (device_graphs* g = graphs.recording(); g && g->runs[i].recordable) {
      if (run_recorded(k, p, c, v, args, launch_no, pass, i, *g, buffers)) {
        i = g->runs[i].end - 1;
        continue;
      }
      g->device_loops_failed = true;  // host loops from now on: step i is the loop's begin, run below
      plan_recorded_runs(v, *g, false);
    }
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
          throw user_error(
              fmt::format("kernel '{}': a qd::graph::do_while ran {} passes (graph_max_iterations) and "
                          "its flag {} is still {}; clear the flag to end the loop, or raise "
                          "graph_max_iterations (QD_GRAPH_MAX_ITERATIONS; 0 = unlimited)",
                          k.name, passes[depth - 1], param_label(k, static_cast<std::size_t>(st.flag)), flag));
        ++passes[depth - 1];
        ++pass;
        i = static_cast<std::size_t>(st.jump);  // the step after the loop's begin comes next
        break;
      }
      case ir::graph_mark::fork_begin:
        run_fork(k, p, c, v, args, launch_no, pass, i, buffers, graphs.held());
        i = static_cast<std::size_t>(st.jump);  // its fork_end
        break;
      case ir::graph_mark::fork_next:
      case ir::graph_mark::fork_end: break;
    }
  }
}

}  // namespace qd::inline v0::detail
