// The code generator's fingerprint (cmake/QuadrantsGeneratorId.cmake): a hash of the sources
// of include/quadrants/{base,ir,analysis,codegen,backend}. Written by scripts/update-generator-id.
#pragma once

#include <string_view>

namespace qd::inline v0::codegen {

inline constexpr std::string_view generator_id = "206980c30a022cf8a4f9595097c19168";

}  // namespace qd::inline v0::codegen
