// Implementation of backend/registry.hpp: the list. A new backend adds its include and
// one line below (docs/architecture.md, "Adding a backend").
#pragma once

#include "quadrants/backend/amdgpu/description.hpp"
#include "quadrants/backend/cpu/description.hpp"
#include "quadrants/backend/cuda/description.hpp"
#include "quadrants/backend/metal/description.hpp"
#include "quadrants/backend/reference/description.hpp"
#include "quadrants/backend/registry.hpp"
#include "quadrants/backend/vulkan/description.hpp"

namespace qd::inline v0::backend {

QD_FUNC std::span<const description> backends() {
  static const description list[] = {
      cuda::backend_description,   amdgpu::backend_description,    cpu::backend_description,
      vulkan::backend_description, reference::backend_description, metal::backend_description,
  };
  return list;
}

QD_FUNC const description* find_backend(arch a) {
  for (const description& d : backends())
    if (d.arch == a) return &d;
  return nullptr;
}

QD_FUNC std::unique_ptr<device> make_device(arch a, const device_request& r) {
  const description* d = find_backend(a);
  return d ? d->make(r) : nullptr;
}

}  // namespace qd::inline v0::backend
