// The graph structure of a kernel: the do_while bodies and forks that its
// graph marks (ir/graph_mark.hpp) delimit among the top-level statements, and the
// schedule that orders a variant's tasks inside them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "quadrants/analysis/task_plan.hpp"
#include "quadrants/ir/graph_mark.hpp"
#include "quadrants/ir/view.hpp"

namespace qd::inline v0::analysis {

// A do_while body or a fork, as top-level statement indices of its marks.
struct graph_region {
  bool loop = true;                   // a do_while body; else a fork
  std::int32_t begin = -1, end = -1;  // the opening and the closing mark
  std::int32_t flag = -1;             // loop: the flag parameter
  ir::fork_kind fork = ir::fork_kind::concurrent;
  std::vector<std::int32_t> branches;  // fork: the mark opening each branch
  std::int32_t parent = -1;            // the enclosing region, or -1
};

// The regions in order of their opening marks (a parent before its children).
constexpr std::vector<graph_region> graph_regions(const ir::function& fn, const kernel_structure& s) {
  std::vector<graph_region> out;
  std::vector<std::int32_t> open;
  for (std::size_t k = 0; k < s.statements.size(); ++k) {
    if (!s.statements[k].mark) continue;
    const ir::view<ir::op::graph_mark> mark(fn, s.statements[k].node);
    const auto at = static_cast<std::int32_t>(k);
    switch (mark.mark()) {
      case ir::graph_mark::loop_begin:
      case ir::graph_mark::fork_begin: {
        graph_region r;
        r.loop = mark.mark() == ir::graph_mark::loop_begin;
        r.begin = at;
        r.flag = r.loop ? mark.flag() : -1;
        if (!r.loop) {
          r.fork = mark.fork();
          r.branches.push_back(at);
        }
        r.parent = open.empty() ? -1 : open.back();
        open.push_back(static_cast<std::int32_t>(out.size()));
        out.push_back(std::move(r));
        break;
      }
      case ir::graph_mark::fork_next:
        if (!open.empty()) out[static_cast<std::size_t>(open.back())].branches.push_back(at);
        break;
      case ir::graph_mark::loop_end:
      case ir::graph_mark::fork_end:
        if (!open.empty()) {
          out[static_cast<std::size_t>(open.back())].end = at;
          open.pop_back();
        }
        break;
    }
  }
  return out;
}

constexpr bool has_fork(const std::vector<graph_region>& regions) {
  return std::any_of(regions.begin(), regions.end(), [](const graph_region& r) { return !r.loop; });
}

constexpr bool inside(const graph_region& r, std::int32_t statement) {
  return r.begin < statement && statement < r.end;
}

// The last statement that may run between statement `k` and a task at `position`
// (and so may change what `k` read): `last`, or, when the task sits in a do_while body
// that `k` is outside of, the end of the outermost such body, since later passes run
// the rest of the body (and its statements before the task) again before the task.
constexpr std::int32_t extend_through_loops(const std::vector<graph_region>& regions, std::int32_t k,
                                            std::int32_t position, std::int32_t last) {
  for (const graph_region& r : regions)
    if (r.loop && inside(r, position) && !inside(r, k)) last = std::max(last, r.end);
  return last;
}

// Whether statement k runs in a do_while body (possibly more than once per launch).
constexpr bool in_loop(const std::vector<graph_region>& regions, std::int32_t k) {
  return std::any_of(regions.begin(), regions.end(), [&](const graph_region& r) { return r.loop && inside(r, k); });
}

// Where a task sits among the top-level statements: its construct's first statement,
// or the first statement of the serial run it belongs to.
constexpr std::int32_t task_position(const kernel_structure& s, const task& t) {
  if (t.construct >= 0) return s.constructs[static_cast<std::size_t>(t.construct)].statements.front();
  if (t.run >= 0) return t.run;
  return t.statements.empty() ? 0 : t.statements.front();
}

// One step of a variant's schedule: run a task, or a mark.
struct schedule_step {
  bool is_task = true;
  std::int32_t task = -1;  // is_task: the variant's task index
  ir::graph_mark mark = ir::graph_mark::loop_begin;
  std::int32_t flag = -1;  // loop_end: the flag parameter to read
  std::int32_t jump = -1;  // loop_end: the step of its loop_begin; loop_begin: its loop_end;
                           // fork_begin: its fork_end
  std::int32_t loop = -1;  // loop marks: the loop's number (for iteration counts)
};

// The tasks and marks in statement order; empty for a kernel without marks (the launch
// then runs the tasks in order).
constexpr std::vector<schedule_step> build_schedule(const ir::function& fn, const kernel_structure& s,
                                                    const std::vector<task>& tasks) {
  std::vector<schedule_step> out;
  if (!ir::has_graph_marks(fn)) return out;
  struct item {
    std::int32_t position;
    std::int32_t order;  // ties (none expected) keep the order tasks, then marks, were added
    schedule_step step;
  };
  std::vector<item> items;
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    schedule_step st;
    st.task = static_cast<std::int32_t>(t);
    items.push_back({task_position(s, tasks[t]), static_cast<std::int32_t>(items.size()), st});
  }
  for (std::size_t k = 0; k < s.statements.size(); ++k) {
    if (!s.statements[k].mark) continue;
    schedule_step st;
    st.is_task = false;
    const ir::view<ir::op::graph_mark> mark(fn, s.statements[k].node);
    st.mark = mark.mark();
    st.flag = mark.flag();
    items.push_back({static_cast<std::int32_t>(k), static_cast<std::int32_t>(items.size()), st});
  }
  std::sort(items.begin(), items.end(), [](const item& a, const item& b) {
    return a.position != b.position ? a.position < b.position : a.order < b.order;
  });
  std::vector<std::int32_t> open, forks;
  std::int32_t loops = 0;
  for (const item& it : items) {
    out.push_back(it.step);
    schedule_step& st = out.back();
    const auto at = static_cast<std::int32_t>(out.size() - 1);
    if (st.is_task) continue;
    if (st.mark == ir::graph_mark::loop_begin) {
      st.loop = loops++;
      open.push_back(at);
    } else if (st.mark == ir::graph_mark::loop_end && !open.empty()) {
      schedule_step& begin = out[static_cast<std::size_t>(open.back())];
      st.jump = open.back();
      st.flag = begin.flag;
      st.loop = begin.loop;
      begin.jump = at;
      open.pop_back();
    } else if (st.mark == ir::graph_mark::fork_begin) {
      forks.push_back(at);
    } else if (st.mark == ir::graph_mark::fork_end && !forks.empty()) {
      out[static_cast<std::size_t>(forks.back())].jump = at;
      forks.pop_back();
    }
  }
  return out;
}

}  // namespace qd::inline v0::analysis
