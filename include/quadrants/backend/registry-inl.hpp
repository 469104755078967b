// Implementation of backend/registry.hpp.
#pragma once

#include "quadrants/backend/amdgpu/device.hpp"
#include "quadrants/backend/cpu/device.hpp"
#include "quadrants/backend/cuda/device.hpp"
#include "quadrants/backend/reference/device.hpp"
#include "quadrants/backend/registry.hpp"

namespace qd::backend {

QD_FUNC std::unique_ptr<device> make_device(arch a, const device_request& r) {
  switch (a) {
    case arch::cpu: {
      cpu::device_options o;
      o.compile.opt_level = r.opt_level;
      o.compile.fast_math = r.fast_math;
      o.compile.timeout_seconds = r.compile_timeout_seconds;
      o.threads = r.cpu_threads;
      return cpu::make_device(o);
    }
    case arch::cuda: {
      cuda::device_options o;
      o.arch = r.cuda_arch;
      o.compile_only = r.compile_only;
      o.opt_level = r.opt_level;
      o.fast_math = r.fast_math;
      return cuda::make_device(o);
    }
    case arch::amdgpu: {
      amdgpu::device_options o;
      o.arch = r.amdgpu_arch;
      o.compile_only = r.compile_only;
      o.opt_level = r.opt_level;
      o.fast_math = r.fast_math;
      return amdgpu::make_device(o);
    }
    case arch::reference: return reference::make_device();
    case arch::metal:
    case arch::vulkan: return nullptr;  // not on this platform yet (SPEC §7)
  }
  return nullptr;
}

}  // namespace qd::backend
