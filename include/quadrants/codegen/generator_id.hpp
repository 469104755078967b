// The code generator's fingerprint (cmake/QuadrantsGeneratorId.cmake): a hash of the sources
// of include/quadrants/{base,ir,analysis,codegen,backend}. Written by scripts/update-generator-id.
#pragma once

#include <string_view>

namespace qd::inline v0::codegen {

inline constexpr std::string_view generator_id = "f192a60bcbc447675717ee25cda997dc";

}  // namespace qd::inline v0::codegen
