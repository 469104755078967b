// Implementation of backend/cuda/driver.hpp.
#pragma once

#include "quadrants/backend/cuda/driver.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/detail/format.hpp"

namespace qd::backend::cuda {

QD_FUNC library_search driver_library() {
  return {"the CUDA driver (libcuda)",
          {"libcuda.so.1", "libcuda.so"},
          {"QD_CUDA_PATH"},
          {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/aarch64-linux-gnu", "/usr/lib", "/lib/x86_64-linux-gnu",
           "/lib64", "/usr/local/nvidia/lib64", "/usr/lib/wsl/lib"}};
}

QD_FUNC const driver_api& driver() {
  static const driver_api api = [] {
    static const shared_library library(driver_library());
    driver_api a;
#define QD_CUDA_DRIVER_RESOLVE(member, exported, type) \
  a.member = reinterpret_cast<std::add_pointer_t<type>>(library.symbol(exported));
    QD_CUDA_DRIVER_ENTRY_POINTS(QD_CUDA_DRIVER_RESOLVE)
#undef QD_CUDA_DRIVER_RESOLVE
#define QD_CUDA_DRIVER_RESOLVE_OPTIONAL(member, exported, type) \
  a.member = reinterpret_cast<std::add_pointer_t<type>>(library.optional_symbol(exported));
    QD_CUDA_DRIVER_OPTIONAL_ENTRY_POINTS(QD_CUDA_DRIVER_RESOLVE_OPTIONAL)
#undef QD_CUDA_DRIVER_RESOLVE_OPTIONAL
    return a;
  }();
  return api;
}

QD_FUNC std::string result_text(CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  try {
    const driver_api& api = driver();
    if (api.cuGetErrorName(r, &name) != cuda_success) name = nullptr;
    if (api.cuGetErrorString(r, &text) != cuda_success) text = nullptr;
  } catch (const error&) {
  }
  if (name == nullptr) {
    // The codes a user is likely to meet, for drivers that cannot name them (the stub library).
    switch (r) {
      case 1: name = "CUDA_ERROR_INVALID_VALUE"; break;
      case 2: name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
      case 3: name = "CUDA_ERROR_NOT_INITIALIZED"; break;
      case 34: name = "CUDA_ERROR_STUB_LIBRARY"; text = "the CUDA driver found is a stub library, not a real driver"; break;
      case 35: name = "CUDA_ERROR_INSUFFICIENT_DRIVER"; text = "the installed NVIDIA driver is older than the CUDA runtime"; break;
      case 100: name = "CUDA_ERROR_NO_DEVICE"; text = "no CUDA-capable device is detected"; break;
      case 101: name = "CUDA_ERROR_INVALID_DEVICE"; break;
      case 200: name = "CUDA_ERROR_INVALID_IMAGE"; break;
      case 209: name = "CUDA_ERROR_NO_BINARY_FOR_GPU"; text = "the CUBIN is not for this GPU; check cuda_arch"; break;
      case 500: name = "CUDA_ERROR_NOT_FOUND"; break;
      case 700: name = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
      case 719: name = "CUDA_ERROR_LAUNCH_FAILED"; break;
      default: name = "CUDA error"; break;
    }
  }
  return text ? fmt::format("{} {} ({})", name, r, text) : fmt::format("{} {}", name, r);
}

QD_FUNC void throw_failed_call(CUresult r, const char* call, const char* file, int line) {
  throw driver_error(fmt::format("CUDA driver call {} failed: {} [{}:{}]", call, result_text(r), file, line), call, r);
}

}  // namespace qd::backend::cuda
