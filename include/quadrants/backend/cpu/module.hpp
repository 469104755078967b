// A loaded CPU module: shared-object bytes mapped into the process through an
// anonymous memory file, so what runs is exactly the bytes that were validated.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "quadrants/base/api.hpp"

namespace qd::inline v0::backend::cpu {

class module {
 public:
  // Loads `binary` (a shared object) via memfd_create + dlopen of /proc/self/fd/N;
  // `what` names the kernel(s) in errors.
  QD_FUNC module(std::span<const std::byte> binary, std::string_view what);
  QD_FUNC ~module();
  module(const module&) = delete;
  module& operator=(const module&) = delete;

  // The address of an exported entry point; a qd::driver_error if absent.
  QD_FUNC void* symbol(const std::string& name) const;

 private:
  void* handle_ = nullptr;
  int fd_ = -1;  // kept open while loaded: glibc matches loaded objects by path
  std::string what_;
};

}  // namespace qd::inline v0::backend::cpu

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/cpu/module-inl.hpp"
#endif
