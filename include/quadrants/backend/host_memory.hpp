// Device memory of the backends that run on the host (cpu, reference): 64-byte aligned
// host memory whose allocation failure is a qd::driver_error rather than std::bad_alloc.
#pragma once

#include <cstddef>

#include "quadrants/base/api.hpp"

namespace qd::inline v0::backend {

// At least `bytes` (rounded up to 64; a zero-size array gets 64 bytes). Throws
// qd::driver_error naming the size when the system cannot provide it.
QD_FUNC void* allocate_host_memory(std::size_t bytes);
QD_FUNC void release_host_memory(void* p) noexcept;

}  // namespace qd::inline v0::backend

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/host_memory-inl.hpp"
#endif
