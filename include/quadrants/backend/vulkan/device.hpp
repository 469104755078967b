// The Vulkan backend as a device: buffers with device addresses, GLSL compute shaders
// compiled to SPIR-V by shaderc, one compute pipeline per task, launches that wait.
#pragma once

#include <memory>
#include <string>

#include "quadrants/backend/device.hpp"
#include "quadrants/backend/vulkan/shaderc.hpp"
#include "quadrants/base/api.hpp"
#include "quadrants/codegen/glsl_target.hpp"

namespace qd::inline v0::backend::vulkan {

struct device_options {
  int ordinal = -1;                 // which Vulkan device; -1: $QD_VULKAN_DEVICE, else the first usable one
  bool compile_only = false;        // shaderc only: no loader, no device, nothing runs
  codegen::glsl_target target;      // what compile_only compiles for (else the device's own features)
  bool target_from_device = false;  // compile_only: the features of the device present instead, if any
  unsigned workgroups = 0;          // workgroups of a parallel task's launch; 0: sized for the device
  glsl_compile_options compiler;
};

class vulkan_device : public device {
 public:
  // What the device offers generated GLSL (the emitter's input, and part of target()).
  virtual const codegen::glsl_target& glsl_target() const = 0;
  // "llvmpipe (LLVM 15.0.6, 256 bits), Vulkan 1.3.230, CPU"; "compile-only" without a device.
  virtual std::string description() const = 0;
};

// Opens the loader and the device (not when compile_only) and locates shaderc, which is
// opened on the first compile. Throws qd::driver_error naming what is missing: a library
// and its variable, or a device with compute, Vulkan 1.2, shaderInt64 and buffer device
// addresses (and why each device present was passed over).
QD_FUNC std::unique_ptr<vulkan_device> make_device(const device_options& options);

}  // namespace qd::inline v0::backend::vulkan

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/vulkan/device-inl.hpp"
#endif
