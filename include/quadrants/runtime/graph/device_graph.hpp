// Device graphs of a graph kernel (docs/graphs.md): each run of tasks between do_while
// marks is recorded once by the backend (a CUDA or HIP graph) and replayed, its launches
// given new array addresses and scalars in place when only those changed; and the
// streams fork branches run on. Internal.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "quadrants/backend/device.hpp"
#include "quadrants/base/limits.hpp"

namespace qd::inline v0::detail {

// What a recorded launch depends on, per kernel parameter: the recording holds these
// values (array descriptors, scalars), so a different one means updating it in place
// (addresses and scalars) or recording again (shapes).
struct argument_print {
  void* data = nullptr;
  void* grad = nullptr;
  std::int64_t shape[limits::max_ndim] = {0, 0, 0, 0};
  std::uint64_t scalar_bits = 0;
};

// One run of a variant's schedule: the steps [its start, end), with no do_while mark;
// or, on a backend with device loops, a whole innermost do_while (its loop_begin to
// its loop_end), recorded as a loop that runs on the device.
struct recorded_run {
  std::size_t end = 0;          // 0: no run starts at this step
  bool recordable = false;      // it has tasks and none draws random numbers (their streams change per launch)
  std::int32_t loop_flag = -1;  // a device loop: the kernel parameter of its flag; -1: a plain run
  std::unique_ptr<backend::launch_queue> recording;
  std::vector<argument_print> arguments;  // what `recording` was recorded or last updated with
};

struct device_graphs {
  std::atomic<bool> busy{false};  // one launch at a time records or replays; another runs plainly
  bool planned = false;
  bool device_loops = false;         // innermost do_whiles are device loops (planned with them)
  bool device_loops_failed = false;  // the backend could not record one: host loops from then on
  std::vector<recorded_run> runs;    // one per schedule step
  // Fork branches' queues (device_traits::branch_queues), made on first need and kept.
  std::vector<std::unique_ptr<backend::launch_queue>> branch_queues;
  std::vector<backend::launch_queue*> branches;  // the same, as a span for fork and join
};

}  // namespace qd::inline v0::detail
