// hipRTC, opened with dlopen on the first compile (libhiprtc, or libamdhip64 in
// HIP 5; QD_HIPRTC_PATH): HIP source to a code object for one gfx target.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "quadrants/backend/shared_library.hpp"
#include "quadrants/base/api.hpp"

namespace qd::inline v0::backend::amdgpu {

struct hiprtc_options {
  std::string arch = "gfx90a";  // --offload-arch, with any feature suffix (gfx90a:xnack-)
  int opt_level = 2;
  bool fast_math = false;
};

// Where hipRTC is looked for: QD_HIPRTC_PATH, QD_HIP_PATH, then the HIP runtime's places.
QD_FUNC library_search hiprtc_library();

// Identifies hipRTC for cache keys without opening it (see library_fingerprint).
QD_FUNC std::string hiprtc_fingerprint();

// The options passed to hipRTC, part of every cache key.
QD_FUNC std::vector<std::string> hiprtc_flags(const hiprtc_options& options);

// Compiles `source` to a code object. A rejected program is a qd::compile_error
// carrying hipRTC's log and the generated line; `what` names the kernel(s).
QD_FUNC std::vector<std::byte> compile_code_object(std::string_view source, const hiprtc_options& options,
                                                   std::string_view what);

// Checks the spelling of a gfx target: a processor ("gfx90a", "gfx10-3-generic") and
// optional features ":sramecc+", ":xnack-". Throws qd::user_error naming amdgpu_arch.
// Opens nothing: cheap enough for qd::init.
QD_FUNC void check_gfx_spelling(const std::string& target);

// The gfx processors hipRTC's code-object compiler (comgr) knows, as comgr lists them;
// empty when comgr cannot be opened. HIP 5's hipRTC aborts the whole process on a
// processor comgr does not know, so compile_code_object checks against this first.
QD_FUNC const std::vector<std::string>& known_gfx_processors();

// hipRTC's version ("9.0"); opens hipRTC.
QD_FUNC std::string hiprtc_version();

}  // namespace qd::inline v0::backend::amdgpu

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/amdgpu/hiprtc-inl.hpp"
#endif
