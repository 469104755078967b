// Implementation of runtime/pipeline/kernel_registry.hpp.
#pragma once

#include <mutex>

#include "quadrants/runtime/pipeline/kernel_registry.hpp"

namespace qd::inline v0::detail {
namespace registry_detail {

struct registry {
  std::mutex mutex;
  std::vector<std::weak_ptr<kernel_state>> kernels;
  std::size_t prune_at = 64;  // drop expired entries when the list reaches this size
};

inline registry& the_registry() {
  static registry r;
  return r;
}

}  // namespace registry_detail

QD_FUNC void register_kernel(const std::shared_ptr<kernel_state>& k) {
  auto& r = registry_detail::the_registry();
  std::lock_guard lock(r.mutex);
  if (r.kernels.size() >= r.prune_at) {
    std::erase_if(r.kernels, [](const std::weak_ptr<kernel_state>& w) { return w.expired(); });
    r.prune_at = std::max<std::size_t>(64, r.kernels.size() * 2);
  }
  r.kernels.push_back(k);
}

QD_FUNC std::vector<std::shared_ptr<kernel_state>> live_kernels() {
  auto& r = registry_detail::the_registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::shared_ptr<kernel_state>> out;
  for (const auto& w : r.kernels)
    if (auto k = w.lock()) out.push_back(std::move(k));
  return out;
}

}  // namespace qd::inline v0::detail
