// What a GPU launch passes to a task: the parameter block the GPU prelude calls
// qd_ctx, passed by value (CUDA and HIP alike), filled from a launch_context.
#pragma once

#include <cstdint>

#include "quadrants/backend/device.hpp"
#include "quadrants/base/api.hpp"
#include "quadrants/base/limits.hpp"

namespace qd::backend {

// Layout-identical to qd_ctx of the GPU prelude (backend/gpu_prelude.hpp checks
// it member by member in every compile).
struct gpu_task_params {
  static constexpr std::size_t max_params = limits::max_kernel_params;
  array_abi arrays[max_params];
  std::uint64_t scalars[max_params];
  unsigned char* temps;
  std::uint64_t rng_stream;
  std::int64_t* error;  // the device's error record (bounds checks)
};
// CUDA passes it in the 4 KiB kernel parameter space.
static_assert(sizeof(gpu_task_params) <= 4096, "the GPU parameter block must fit CUDA's parameter space");

// Copies the task's parameters (only the first param_count entries) and the rest.
QD_FUNC void fill_gpu_task_params(const launch_context& c, std::int64_t* device_error, gpu_task_params& out);

}  // namespace qd::backend

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/gpu_task_params-inl.hpp"
#endif
