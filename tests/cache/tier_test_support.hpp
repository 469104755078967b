// Helpers for tests of the cache tiers without a backend: a "module" that is the payload
// it was opened from, so a test can check which bytes a lookup found.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "quadrants/backend/loaded_module.hpp"
#include "quadrants/cache/tier_list.hpp"

namespace qd_test {

struct payload_module final : qd::backend::loaded_module {
  std::vector<std::byte> payload;
  void* entry(const std::string&) const override { return nullptr; }
};

// Opens every payload (counting the calls in `opened`, when given).
inline qd::cache::opener open_any(int* opened = nullptr) {
  return [opened](std::span<const std::byte> payload) {
    if (opened) ++*opened;
    auto m = std::make_shared<payload_module>();
    m->payload.assign(payload.begin(), payload.end());
    return std::shared_ptr<qd::backend::loaded_module>(std::move(m));
  };
}

// The bytes a lookup found (empty on a miss).
inline std::vector<std::byte> found_bytes(const qd::cache::resolved& r) {
  const auto* m = dynamic_cast<const payload_module*>(r.module.get());
  return m ? m->payload : std::vector<std::byte>{};
}

}  // namespace qd_test
