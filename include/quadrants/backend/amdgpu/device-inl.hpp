// Implementation of backend/amdgpu/device.hpp: the GPU device (backend/gpu_device.hpp)
// bound to hipRTC for the device's gfx target.
#pragma once

#include "quadrants/backend/amdgpu/device.hpp"
#include "quadrants/backend/amdgpu/hip.hpp"
#include "quadrants/backend/amdgpu/hiprtc.hpp"
#include "quadrants/backend/amdgpu/prelude.hpp"
#include "quadrants/backend/gpu_compiler.hpp"
#include "quadrants/backend/gpu_device.hpp"
#include "quadrants/base/error.hpp"

namespace qd::inline v0::backend::amdgpu {

QD_FUNC std::unique_ptr<device> make_device(const device_options& o) {
  if (!o.arch.empty()) check_gfx_spelling(o.arch);  // the device's own name is taken as it is
  return make_gpu_device<gpu_vendor::amd>(&hip, o.ordinal, o.compile_only, [&](const gpu_facts* gpu) {
    std::string arch = !o.arch.empty() ? o.arch : gpu ? gpu->gfx : "";
    if (arch.empty())
      throw user_error(
          "compile_only with arch = amdgpu needs the target: set amdgpu_arch (e.g. \"gfx90a\") or "
          "QD_AMDGPU_ARCH");
    locate_library(hiprtc_library());  // a missing hipRTC is reported now, not at the first kernel
    const hiprtc_options compiler{.arch = arch, .opt_level = o.opt_level, .fast_math = o.fast_math};
    return gpu_compiler_binding{
        .target = arch,
        .options = joined_flags(hiprtc_flags(compiler)),
        .prelude = translation_unit_prelude(),
        .wide_offsets = wide_offsets,
        .identity = [] { return "hiprtc " + hiprtc_fingerprint(); },
        .compile = [compiler](std::string_view source,
                              std::string_view what) { return compile_code_object(source, compiler, what); }};
  });
}

}  // namespace qd::inline v0::backend::amdgpu
