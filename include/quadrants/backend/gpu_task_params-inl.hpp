// Implementation of backend/gpu_task_params.hpp.
#pragma once

#include <cstring>

#include "quadrants/backend/gpu_task_params.hpp"
#include "quadrants/base/error.hpp"

namespace qd::inline v0::backend {

QD_FUNC void fill_gpu_task_params(const launch_context& c, std::int64_t* device_error, gpu_task_params& out) {
  if (c.param_count > gpu_task_params::max_params)
    throw internal_error("a GPU task has more parameters than its parameter block holds");
  // Both arrays are indexed by task parameter; the runtime filled the entry that
  // matches each parameter's kind, and the task reads only that one.
  std::memcpy(out.arrays, c.arrays, c.param_count * sizeof(array_abi));
  std::memcpy(out.scalars, c.scalars, c.param_count * sizeof(std::uint64_t));
  out.temps = c.temps;
  out.rng_stream = c.rng_stream;
  out.error = device_error;
}

}  // namespace qd::inline v0::backend
