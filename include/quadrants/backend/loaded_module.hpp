// Code a backend has loaded and can launch: entry points by name. What the cache tiers
// hand back, and what a variant's tasks point into.
#pragma once

#include <string>

namespace qd::inline v0::backend {

class loaded_module {
 public:
  virtual ~loaded_module() = default;
  virtual void* entry(const std::string& name) const = 0;
};

}  // namespace qd::inline v0::backend
