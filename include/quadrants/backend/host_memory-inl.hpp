// Implementation of backend/host_memory.hpp.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "quadrants/backend/host_memory.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::backend {

QD_FUNC void* allocate_host_memory(std::size_t bytes) {
  constexpr std::size_t align = 64;
  void* p = nullptr;
  if (bytes <= ~std::size_t{0} - align)
    p = std::aligned_alloc(align, bytes == 0 ? align : (bytes + align - 1) / align * align);
  if (p == nullptr)
    throw driver_error(fmt::format("cannot allocate {} bytes ({:.3g} GiB) of host memory: {}; make the array smaller "
                                   "or free memory",
                                   bytes, static_cast<double>(bytes) / (1ull << 30), std::strerror(ENOMEM)),
                       "aligned_alloc", ENOMEM);
  return p;
}

QD_FUNC void release_host_memory(void* p) noexcept { std::free(p); }

}  // namespace qd::inline v0::backend
