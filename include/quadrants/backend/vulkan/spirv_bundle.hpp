// What the Vulkan backend's compile() returns and load() reads: one SPIR-V module per
// task with its task markers (entry, workgroup size, print formats), in one byte string.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/codegen/glsl_task_info.hpp"

namespace qd::inline v0::backend::vulkan {

struct compiled_shader {
  codegen::glsl_task_info task;
  std::vector<std::uint32_t> spirv;
};

QD_FUNC std::vector<std::byte> encode_bundle(const std::vector<compiled_shader>& shaders);

// The shaders of a bundle; nullopt for anything malformed (a truncated or corrupted
// entry, a module without SPIR-V's magic number), never a crash.
QD_FUNC std::optional<std::vector<compiled_shader>> decode_bundle(std::span<const std::byte> bytes);

}  // namespace qd::inline v0::backend::vulkan

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/vulkan/spirv_bundle-inl.hpp"
#endif
