// The module a GPU backend hands back in compile-only mode: the binary was
// compiled and cached, but there is no device to load it on, so no entry points.
#pragma once

#include <string>

#include "quadrants/backend/device.hpp"

namespace qd::inline v0::backend {

class compile_only_module final : public loaded_module {
 public:
  // Launching is refused before any entry point is used (runtime/dispatch).
  void* entry(const std::string&) const override { return nullptr; }
};

}  // namespace qd::inline v0::backend
