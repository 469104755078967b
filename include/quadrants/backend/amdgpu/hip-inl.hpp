// Implementation of backend/amdgpu/hip.hpp.
#pragma once

#include <cstdlib>

#include "quadrants/backend/amdgpu/hip.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/detail/format.hpp"

namespace qd::backend::amdgpu {

QD_FUNC library_search hip_library() {
  library_search s{"the HIP runtime (libamdhip64)",
                   {"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"},
                   {"QD_HIP_PATH"},
                   {}};
  if (const char* rocm = std::getenv("ROCM_PATH"); rocm && *rocm) s.directories.push_back(std::string(rocm) + "/lib");
  for (const char* d : {"/opt/rocm/lib", "/opt/rocm/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"})
    s.directories.emplace_back(d);
  return s;
}

QD_FUNC const hip_api& hip() {
  static const hip_api api = [] {
    static const shared_library library(hip_library());
    hip_api a;
#define QD_HIP_RESOLVE(member, exported, type) \
  a.member = reinterpret_cast<std::add_pointer_t<type>>(library.symbol(exported));
    QD_HIP_ENTRY_POINTS(QD_HIP_RESOLVE)
#undef QD_HIP_RESOLVE
#define QD_HIP_RESOLVE_OPTIONAL(member, exported, type) \
  a.member = reinterpret_cast<std::add_pointer_t<type>>(library.optional_symbol(exported));
    QD_HIP_OPTIONAL_ENTRY_POINTS(QD_HIP_RESOLVE_OPTIONAL)
#undef QD_HIP_RESOLVE_OPTIONAL
    return a;
  }();
  return api;
}

QD_FUNC void throw_failed_hip_call(hipError_t r, const char* call, const char* file, int line) {
  const char* name = hip().hipGetErrorName(r);
  const char* text = hip().hipGetErrorString(r);
  throw driver_error(fmt::format("HIP call {} failed: {} {} ({}) [{}:{}]", call, name ? name : "hipError", r,
                                 text ? text : "", file, line),
                     call, r);
}

}  // namespace qd::backend::amdgpu
