// The Vulkan backend as the registry lists it: GLSL compute shaders ("comp") compiled to
// SPIR-V by shaderc, cached; not preferred (init_best_available keeps the CPU over it).
#pragma once

#include "quadrants/backend/description.hpp"

namespace qd::inline v0::backend::vulkan {

// Reads compile_only (without a device: compiles for the features of the device present,
// else for a common desktop set; docs/backends.md).
QD_FUNC std::unique_ptr<backend::device> make_from_request(const device_request& r);

inline constexpr description backend_description{.arch = arch::vulkan,
                                                 .source_extension = "comp",
                                                 .caches_code = true,
                                                 .preferred = false,
                                                 .make = &make_from_request};

}  // namespace qd::inline v0::backend::vulkan

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/vulkan/description-inl.hpp"
#endif
