// qd::arch: the backends a program can run on, named by every layer from the
// configuration down to the backend registry.
#pragma once

#include <cstdint>
#include <string_view>

namespace qd::inline v0 {

// reference: the IR interpreter (docs/testing.md), deterministic and always bounds-checked.
enum class arch : std::uint8_t { cpu, cuda, amdgpu, metal, vulkan, reference };

constexpr std::string_view name(arch a) noexcept {
  switch (a) {
    case arch::cpu: return "cpu";
    case arch::cuda: return "cuda";
    case arch::amdgpu: return "amdgpu";
    case arch::metal: return "metal";
    case arch::vulkan: return "vulkan";
    case arch::reference: return "reference";
  }
  return "?";
}

}  // namespace qd::inline v0
