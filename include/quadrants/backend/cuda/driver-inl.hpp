// Implementation of backend/cuda/driver.hpp: where libcuda is, and the steps CUDA
// takes its own way (a primary context per GPU, occupancy per SM, error names).
#pragma once

#include <algorithm>

#include "quadrants/backend/cuda/driver.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/limits.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::backend::cuda {
namespace detail {

// The device, its compute capability and SM count, and its primary context, retained
// for the life of the session.
QD_FUNC gpu_facts open_gpu(const driver_api& api, int ordinal) {
  gpu_facts g;
  g.ordinal = ordinal;
  QD_GPU_CALL(api, device_get, &g.device, ordinal);
  char name[256] = {};
  QD_GPU_CALL(api, device_name, name, sizeof(name) - 1, g.device);
  g.name = name;
  int major = 0, minor = 0;
  QD_GPU_CALL(api, device_attribute, &major, attribute_cc_major, g.device);
  QD_GPU_CALL(api, device_attribute, &minor, attribute_cc_minor, g.device);
  QD_GPU_CALL(api, device_attribute, &g.multiprocessors, attribute_multiprocessor_count, g.device);
  g.sm = major * 10 + minor;
  QD_GPU_CALL(api, primary_context_retain, &g.context, g.device);
  return g;
}

QD_FUNC void close_gpu(const driver_api& api, const gpu_facts& g) noexcept { api.primary_context_release(g.device); }

QD_FUNC void make_current(const driver_api& api, const gpu_facts& g) {
  QD_GPU_CALL(api, context_set_current, g.context);
}

// Blocks per SM at our block size, times the SMs.
QD_FUNC unsigned full_grid(const driver_api& api, const gpu_facts& g, gpu_function f) {
  int blocks_per_sm = 0;
  QD_GPU_CALL(api, occupancy_blocks_per_sm, &blocks_per_sm, f, static_cast<int>(limits::gpu_threads_per_block), 0);
  return static_cast<unsigned>(std::max(1, blocks_per_sm) * std::max(1, g.multiprocessors));
}

QD_FUNC std::string result_text(const driver_api& api, gpu_result r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.get_error_name(r, &name) != gpu_success) name = nullptr;
  if (api.get_error_string(r, &text) != gpu_success) text = nullptr;
  if (name == nullptr) {
    // The codes a user is likely to meet, for drivers that cannot name them (the stub library).
    switch (r) {
      case 1: name = "CUDA_ERROR_INVALID_VALUE"; break;
      case 2: name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
      case 3: name = "CUDA_ERROR_NOT_INITIALIZED"; break;
      case 34:
        name = "CUDA_ERROR_STUB_LIBRARY";
        text = "the CUDA driver found is a stub library, not a real driver";
        break;
      case 35:
        name = "CUDA_ERROR_INSUFFICIENT_DRIVER";
        text = "the installed NVIDIA driver is older than the CUDA runtime";
        break;
      case 100:
        name = "CUDA_ERROR_NO_DEVICE";
        text = "no CUDA-capable device is detected";
        break;
      case 101: name = "CUDA_ERROR_INVALID_DEVICE"; break;
      case 200: name = "CUDA_ERROR_INVALID_IMAGE"; break;
      case 209:
        name = "CUDA_ERROR_NO_BINARY_FOR_GPU";
        text = "the CUBIN is not for this GPU; check cuda_arch";
        break;
      case 500: name = "CUDA_ERROR_NOT_FOUND"; break;
      case 700: name = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
      case 719: name = "CUDA_ERROR_LAUNCH_FAILED"; break;
      default: name = "CUDA error"; break;
    }
  }
  return text ? fmt::format("{} {} ({})", name, r, text) : fmt::format("{} {}", name, r);
}

}  // namespace detail

QD_FUNC library_search driver_library() {
  return {"the CUDA driver (libcuda)",
          {"libcuda.so.1", "libcuda.so"},
          {"QD_CUDA_PATH"},
          {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/aarch64-linux-gnu", "/usr/lib", "/lib/x86_64-linux-gnu",
           "/lib64", "/usr/local/nvidia/lib64", "/usr/lib/wsl/lib"}};
}

QD_FUNC const driver_api& driver() {
  using namespace detail;
  return process_entry_points<driver_api, &driver_library>(
      {.steps = {&open_gpu, &close_gpu, &make_current, &full_grid, &result_text}});
}

}  // namespace qd::inline v0::backend::cuda
