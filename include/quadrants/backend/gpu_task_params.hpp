// What a GPU launch passes to a task: the parameter block the GPU prelude calls
// qd_ctx, passed by value (CUDA and HIP alike), filled from a launch_context.
#pragma once

#include <cstdint>

#include "quadrants/backend/device.hpp"
#include "quadrants/base/api.hpp"

namespace qd::backend {

// Layout-identical to qd_ctx in codegen/prelude.hpp's gpu_prelude.
struct gpu_task_params {
  static constexpr std::size_t max_params = 64;
  array_abi arrays[max_params];
  std::uint64_t scalars[max_params];
  unsigned char* temps;
  std::uint64_t rng_stream;
  std::int64_t* error;  // the device's error record (bounds checks)
};
static_assert(sizeof(gpu_task_params) == 3608, "must match qd_ctx of the GPU prelude");

// Copies the task's parameters (only the first param_count entries) and the rest.
QD_FUNC void fill_gpu_task_params(const launch_context& c, std::int64_t* device_error, gpu_task_params& out);

}  // namespace qd::backend

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/gpu_task_params-inl.hpp"
#endif
