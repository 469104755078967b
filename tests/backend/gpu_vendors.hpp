// The two GPU vendors side by side, for test bodies written once and run for both
// (TEST_CASE_TEMPLATE over on_cuda and on_amdgpu): compilers, drivers, targets.
#pragma once

#include <doctest/doctest.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "quadrants/backend/amdgpu/device.hpp"
#include "quadrants/backend/amdgpu/hip.hpp"
#include "quadrants/backend/amdgpu/hiprtc.hpp"
#include "quadrants/backend/amdgpu/prelude.hpp"
#include "quadrants/backend/cuda/device.hpp"
#include "quadrants/backend/cuda/driver.hpp"
#include "quadrants/backend/cuda/nvrtc.hpp"
#include "quadrants/backend/cuda/prelude.hpp"
#include "quadrants/backend/shared_library.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/runtime/config.hpp"

namespace qd_test {

template <qd::backend::gpu_vendor V>
struct gpu_vendor_traits {
  static constexpr qd::backend::gpu_vendor vendor = V;
  static constexpr bool cuda = V == qd::backend::gpu_vendor::cuda;
  static constexpr qd::arch arch = cuda ? qd::arch::cuda : qd::arch::amdgpu;
  static constexpr const char* arch_name = cuda ? "cuda" : "amdgpu";
  static constexpr const char* compiler = cuda ? "NVRTC" : "hipRTC";
  static constexpr const char* language = cuda ? "CUDA" : "HIP";
  static constexpr const char* compiler_variable = cuda ? "QD_NVRTC_PATH" : "QD_HIPRTC_PATH";
  static constexpr const char* driver_variable = cuda ? "QD_CUDA_PATH" : "QD_HIP_PATH";
  static constexpr const char* target_field = cuda ? "cuda_arch" : "amdgpu_arch";
  // The target the tests compile for, as the compiler's flag; and its flags without
  // fast_math (no contraction into FMAs) and with it.
  static constexpr const char* target_flag = cuda ? "-arch=sm_90" : "--offload-arch=gfx90a";
  static constexpr const char* exact_flag = cuda ? "--fmad=false" : "-ffp-contract=off";
  static constexpr const char* fast_math_flag = cuda ? "--use_fast_math" : "-ffast-math";
  // What the compiler's libraries are called in /proc/self/maps once opened.
  static constexpr const char* mapped_names[2] = {cuda ? "libnvrtc" : "libamdhip64", cuda ? "libnvrtc" : "libhiprtc"};

  static qd::config target() {
    if constexpr (cuda)
      return {.arch = qd::arch::cuda, .cuda_arch = 90};
    else
      return {.arch = qd::arch::amdgpu, .amdgpu_arch = "gfx90a"};
  }
  static qd::backend::library_search compiler_library() {
    if constexpr (cuda)
      return qd::backend::cuda::nvrtc_library();
    else
      return qd::backend::amdgpu::hiprtc_library();
  }
  static std::string compiler_fingerprint() {
    if constexpr (cuda)
      return qd::backend::cuda::nvrtc_fingerprint();
    else
      return qd::backend::amdgpu::hiprtc_fingerprint();
  }
  static std::string compiler_version() {
    if constexpr (cuda)
      return qd::backend::cuda::nvrtc_version();
    else
      return qd::backend::amdgpu::hiprtc_version();
  }
  static std::string prelude() {
    if constexpr (cuda)
      return qd::backend::cuda::translation_unit_prelude();
    else
      return qd::backend::amdgpu::translation_unit_prelude();
  }
  // The compiler's flags for the target, with or without fast_math.
  static std::vector<std::string> flags(bool fast_math = false) {
    if constexpr (cuda)
      return qd::backend::cuda::nvrtc_flags({.sm = 90, .fast_math = fast_math});
    else
      return qd::backend::amdgpu::hiprtc_flags({.arch = "gfx90a", .fast_math = fast_math});
  }
  // `source` compiled for the target (the emulated GPUs': sm_90, gfx90a with its
  // features), or for another of the same vendor (sm_80, gfx908).
  static std::vector<std::byte> compile(std::string_view source, std::string_view what, bool other_target = false) {
    if constexpr (cuda)
      return qd::backend::cuda::compile_cubin(source, {.sm = other_target ? 80 : 90}, what);
    else
      return qd::backend::amdgpu::compile_code_object(
          source, {.arch = other_target ? "gfx908" : "gfx90a:sramecc+:xnack-"}, what);
  }
  static qd::backend::library_search driver_library() {
    if constexpr (cuda)
      return qd::backend::cuda::driver_library();
    else
      return qd::backend::amdgpu::hip_library();
  }
  static const qd::backend::gpu_driver_api<V>& driver() {
    if constexpr (cuda)
      return qd::backend::cuda::driver();
    else
      return qd::backend::amdgpu::hip();
  }
  static std::unique_ptr<qd::backend::device> make_device() {
    if constexpr (cuda)
      return qd::backend::cuda::make_device({});
    else
      return qd::backend::amdgpu::make_device({});
  }

  // Why the compiler cannot be used here (the case then reports itself skipped), or nothing.
  static std::optional<std::string> compiler_missing() {
    try {
      qd::backend::locate_library(compiler_library());
      return std::nullopt;
    } catch (const qd::error& e) {
      return std::string(e.what());
    }
  }
  static bool compiler_installed() {
    if (auto why = compiler_missing()) {
      const std::string message = std::string("skipped: ") + compiler + " is not installed: " + *why;
      MESSAGE(message);
      return false;
    }
    return true;
  }
  // Whether the process has opened the compiler's library.
  static bool compiler_mapped() {
    std::ifstream maps("/proc/self/maps");
    std::stringstream text;
    text << maps.rdbuf();
    for (const char* name : mapped_names)
      if (text.str().find(name) != std::string::npos) return true;
    return false;
  }
};

using on_cuda = gpu_vendor_traits<qd::backend::gpu_vendor::cuda>;
using on_amdgpu = gpu_vendor_traits<qd::backend::gpu_vendor::amd>;

}  // namespace qd_test

TYPE_TO_STRING(qd_test::on_cuda);
TYPE_TO_STRING(qd_test::on_amdgpu);
