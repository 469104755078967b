// NVRTC, opened with dlopen on the first compile (libnvrtc.so.13/.12/.11.2, or
// QD_NVRTC_PATH): CUDA source to CUBIN for one sm_XX, with the log kept on failure.
#pragma once

#include <cstddef>
#include <cstdint>
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
  // A source that opens with the CUDA prelude gets it as a header NVRTC precompiles once
  // per process (NVRTC 12.8+, automatic PCH): the same code, less fixed cost per program.
  // Without PCH support, or after it failed, the prelude stays inline.
  bool precompiled_prelude = true;
  std::vector<std::string> extra;  // further options, after the others (benchmarks)
};

// How the process's compiles used the precompiled prelude (docs/backends.md).
struct nvrtc_pch_statistics {
  std::int64_t programs = 0;   // compiled with the prelude as a precompiled header
  std::int64_t created = 0;    // of them, the compiles that created the precompiled header
  std::int64_t fallbacks = 0;  // failed that way but compiled with the prelude inline
  bool supported = false;      // this NVRTC has precompiled headers and they have not failed
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

// This process's figures; opens NVRTC.
QD_FUNC nvrtc_pch_statistics nvrtc_prelude_pch_statistics();

// NVRTC's version ("13.0") and the sm_XX it can target; these open NVRTC.
QD_FUNC std::string nvrtc_version();
QD_FUNC std::vector<int> nvrtc_supported_archs();

}  // namespace qd::inline v0::backend::cuda

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/cuda/nvrtc-inl.hpp"
#endif
