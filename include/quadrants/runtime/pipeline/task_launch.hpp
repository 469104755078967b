// Launching one task of a prepared kernel's variant: its arguments packed into the
// task's buffers, the device launch, the error record read back. Internal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "quadrants/backend/device.hpp"
#include "quadrants/base/api.hpp"
#include "quadrants/base/limits.hpp"
#include "quadrants/runtime/pipeline/dispatch.hpp"

namespace qd::inline v0::detail {

class program;
struct compiled_kernel;
struct compiled_task;
struct variant;

// What one task launch packs its arguments into; one per kernel launch.
struct task_buffers {
  backend::array_abi arrays[limits::max_kernel_params];
  std::uint64_t scalars[limits::max_kernel_params];
  std::int64_t error[5] = {0, 0, 0, 0, 0};
};

// Launches one task of `v`; `pass` counts the do_while passes before
// this one in the launch, so that each pass draws its own random numbers. With a
// queue, the launch goes there: a recording records it (a device graph), a fork
// branch's stream runs it.
QD_FUNC void launch_task(const kernel_state& k, program& p, const compiled_kernel& c, const variant& v,
                         const compiled_task& t, const launch_arg* args, std::uint64_t launch_no, std::uint64_t pass,
                         task_buffers& buffers, backend::launch_queue* queue = nullptr);
// A launch-time user_error naming the kernel and parameter.
[[noreturn]] QD_FUNC void throw_launch_error(const kernel_state& k, std::size_t param, std::string_view what);
// The random stream of a launch's task (its seed, the launch's number, the task's salt).
QD_FUNC std::uint64_t mix_stream(std::uint64_t seed, std::uint64_t launch, std::uint64_t salt);

}  // namespace qd::inline v0::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/pipeline/task_launch-inl.hpp"
#endif
