// The code generator's fingerprint (cmake/QuadrantsGeneratorId.cmake): a hash of the sources
// of include/quadrants/{base,ir,codegen,backend}. Written by scripts/update-generator-id.
#pragma once

#include <string_view>

namespace qd::inline v0::codegen {

inline constexpr std::string_view generator_id = "d77349df05ccd8daa866df6f3865ca50";

}  // namespace qd::inline v0::codegen
