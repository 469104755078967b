// What a GPU launch passes to a task: the parameter block the GPU prelude calls
// qd_ctx, passed by value (CUDA and HIP alike), filled from a launch_context.
#pragma once

#include <algorithm>
#include <cstdint>

#include "quadrants/backend/device.hpp"
#include "quadrants/base/api.hpp"
#include "quadrants/base/limits.hpp"

namespace qd::inline v0::backend {

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

// The block and grid of a parallel task's launch: `block_dim` threads (qd::loop_config;
// 0: limits::gpu_threads_per_block), and a grid keeping the occupancy grid's thread count
// (`grid` is sized for the default block). Serial tasks run one thread.
struct gpu_launch_shape {
  unsigned grid = 1, block = 1;
};
constexpr gpu_launch_shape gpu_launch_shape_of(bool parallel, unsigned grid, unsigned block_dim) {
  if (!parallel) return {};
  const unsigned block = block_dim ? block_dim : limits::gpu_threads_per_block;
  const unsigned long long threads = static_cast<unsigned long long>(grid) * limits::gpu_threads_per_block;
  // At most 2^31 threads: the generated loops count in 32 bits (backend/gpu_prelude.hpp).
  const unsigned long long most = (1ull << 31) / block;
  const unsigned long long scaled = std::min((threads + block - 1) / block, most);
  return {static_cast<unsigned>(scaled > 0 ? scaled : 1), block};
}

// Copies the task's parameters (only the first param_count entries) and the rest.
QD_FUNC void fill_gpu_task_params(const launch_context& c, std::int64_t* device_error, gpu_task_params& out);

}  // namespace qd::inline v0::backend

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/gpu_task_params-inl.hpp"
#endif
