// NVRTC, opened with dlopen on the first compile (libnvrtc.so.13/.12/.11.2, or
// QD_NVRTC_PATH): CUDA source to CUBIN for one sm_XX, with the log kept on failure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "quadrants/backend/shared_library.hpp"
#include "quadrants/base/api.hpp"

namespace qd::inline v0::backend::cuda {

struct nvrtc_options {
  int sm = 90;        // compute capability as major * 10 + minor
  int opt_level = 2;  // 0..3; below 2 lowers ptxas's optimization level
  bool fast_math = false;
  bool minimal = true;  // --minimal: NVRTC's fixed cost drops; dropped if this NVRTC rejects it
};

// Where NVRTC is looked for: QD_NVRTC_PATH, then $CUDA_HOME / $CUDA_PATH and the
// usual toolkit directories.
QD_FUNC library_search nvrtc_library();

// Identifies NVRTC for cache keys without opening it (see library_fingerprint).
QD_FUNC std::string nvrtc_fingerprint();

// The options passed to NVRTC, part of every cache key.
QD_FUNC std::vector<std::string> nvrtc_flags(const nvrtc_options& options);

// Compiles `source` to CUBIN. A rejected program is a qd::compile_error carrying
// NVRTC's log and the generated line it points at; `what` names the kernel(s).
// A missing NVRTC is a qd::driver_error naming QD_NVRTC_PATH.
QD_FUNC std::vector<std::byte> compile_cubin(std::string_view source, const nvrtc_options& options,
                                             std::string_view what);

// NVRTC's version ("13.0") and the sm_XX it can target; these open NVRTC.
QD_FUNC std::string nvrtc_version();
QD_FUNC std::vector<int> nvrtc_supported_archs();

}  // namespace qd::inline v0::backend::cuda

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/cuda/nvrtc-inl.hpp"
#endif
