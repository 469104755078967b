// The code generator's fingerprint (cmake/QuadrantsGeneratorId.cmake): a hash of the sources
// of include/quadrants/{base,ir,analysis,codegen,backend}. Written by scripts/update-generator-id.
#pragma once

#include <string_view>

namespace qd::inline v0::codegen {

inline constexpr std::string_view generator_id = "3a6964f23d53c8c5005173ca33cf6d93";

}  // namespace qd::inline v0::codegen
