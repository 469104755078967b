// Implementation of backend/cuda/device.hpp: the GPU device (backend/gpu_device.hpp)
// bound to NVRTC for the device's sm_XX.
#pragma once

#include "quadrants/backend/cuda/device.hpp"
#include "quadrants/backend/cuda/driver.hpp"
#include "quadrants/backend/cuda/nvrtc.hpp"
#include "quadrants/backend/cuda/prelude.hpp"
#include "quadrants/backend/gpu_compiler.hpp"
#include "quadrants/backend/gpu_device.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::backend::cuda {

QD_FUNC std::unique_ptr<device> make_device(const device_options& o) {
  return make_gpu_device<gpu_vendor::cuda>(&driver, o.ordinal, o.compile_only, [&](const gpu_facts* gpu) {
    const int sm = o.arch != 0 ? o.arch : gpu ? gpu->sm : 0;
    if (sm == 0)
      throw user_error(
          "compile_only with arch = cuda needs the target: set cuda_arch (e.g. 90 for sm_90) or "
          "QD_CUDA_ARCH");
    if (sm < 10 || sm > 999)
      throw user_error(fmt::format("cuda_arch = {} is not a compute capability; use major * 10 + minor, e.g. 90", sm));
    locate_library(nvrtc_library());  // a missing NVRTC is reported now, not at the first kernel
    const nvrtc_options compiler{.sm = sm, .opt_level = o.opt_level, .fast_math = o.fast_math};
    return gpu_compiler_binding{
        .target = fmt::format("sm_{}", sm),
        .options = joined_flags(nvrtc_flags(compiler)),
        .prelude = translation_unit_prelude(),
        .wide_offsets = wide_offsets,
        .loop_kernel = graph_loop_source(),
        .identity = [] { return "nvrtc " + nvrtc_fingerprint(); },
        .compile = [compiler](std::string_view source,
                              std::string_view what) { return compile_cubin(source, compiler, what); }};
  });
}

}  // namespace qd::inline v0::backend::cuda
