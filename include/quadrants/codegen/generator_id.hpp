// The code generator's fingerprint (cmake/QuadrantsGeneratorId.cmake): a hash of the sources
// of include/quadrants/{base,ir,analysis,codegen,backend}. Written by scripts/update-generator-id.
#pragma once

#include <string_view>

namespace qd::inline v0::codegen {

inline constexpr std::string_view generator_id = "fce1a5b82da3d385e8fcce33cbd5b679";

}  // namespace qd::inline v0::codegen
