// Implementation of backend/amdgpu/hip.hpp: where libamdhip64 is, and the steps HIP
// takes its own way (a device selected per thread, its gfx target, occupancy).
#pragma once

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "quadrants/backend/amdgpu/hip.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/limits.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::backend::amdgpu {
namespace detail {

QD_FUNC void make_current(const hip_api& api, const gpu_facts& g) { QD_GPU_CALL(api, set_device, g.ordinal); }

// The gfx target, from properties that land in a generous buffer.
QD_FUNC gpu_facts open_gpu(const hip_api& api, int ordinal) {
  gpu_facts g;
  g.ordinal = ordinal;
  make_current(api, g);
  std::vector<unsigned char> props(16384, 0);
  QD_GPU_CALL(api, device_properties, props.data(), ordinal);
  g.gfx = find_gfx_name(props.data(), props.size());
  if (g.gfx.empty())
    throw driver_error(
        "cannot read the GPU's gfx target from hipGetDeviceProperties; set amdgpu_arch (e.g. "
        "\"gfx90a\")",
        "hipGetDeviceProperties", 0);
  return g;
}

QD_FUNC void close_gpu(const hip_api&, const gpu_facts&) noexcept {}

// The smallest grid that reaches full occupancy with our block size.
QD_FUNC unsigned full_grid(const hip_api& api, const gpu_facts&, gpu_function f) {
  const int threads = static_cast<int>(limits::gpu_threads_per_block);
  int grid = 0, block = 0;
  QD_GPU_CALL(api, occupancy_block_size, &grid, &block, f, 0, threads);
  if (block > 0 && block < threads) grid = grid * block / threads;
  return static_cast<unsigned>(std::max(1, grid));
}

QD_FUNC std::string result_text(const hip_api& api, gpu_result r) {
  const char* name = api.error_name(r);
  const char* text = api.error_string(r);
  return fmt::format("{} {} ({})", name ? name : "hipError", r, text ? text : "");
}

}  // namespace detail

QD_FUNC library_search hip_library() {
  library_search s{
      "the HIP runtime (libamdhip64)", {"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"}, {"QD_HIP_PATH"}, {}};
  if (const char* rocm = std::getenv("ROCM_PATH"); rocm && *rocm) s.directories.push_back(std::string(rocm) + "/lib");
  for (const char* d : {"/opt/rocm/lib", "/opt/rocm/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"})
    s.directories.emplace_back(d);
  return s;
}

QD_FUNC const hip_api& hip() {
  using namespace detail;
  return process_entry_points<hip_api, &hip_library>(
      {.steps = {&open_gpu, &close_gpu, &make_current, &full_grid, &result_text}});
}

QD_FUNC std::string find_gfx_name(const unsigned char* props, std::size_t size) {
  for (std::size_t i = 0; i + 4 < size; ++i) {
    if (std::memcmp(props + i, "gfx", 3) != 0 || (i > 0 && props[i - 1] != 0)) continue;
    std::size_t end = i;
    while (end < size && props[end] != 0) ++end;
    return std::string(reinterpret_cast<const char*>(props + i), end - i);
  }
  return {};
}

}  // namespace qd::inline v0::backend::amdgpu
