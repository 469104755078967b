// Limits several layers rely on, each decided once: the tracer checks them, the
// runtime sizes its stack arrays by them, and the generated code's ABI follows them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qd::inline v0::limits {

// Dimensions of an array, and the rank of a qd::ndrange loop.
inline constexpr int max_ndim = 4;
// Parameters of a kernel (and so of any of its tasks): launches pack them on the stack.
inline constexpr std::size_t max_kernel_params = 64;
// Global temporaries of a whole-kernel variant: slots of temp_slot_bytes each.
inline constexpr std::int64_t temp_slot_count = 4096;
inline constexpr std::size_t temp_slot_bytes = 8;
// Threads per block of a GPU launch (the prelude's __launch_bounds__ and the host agree).
inline constexpr unsigned gpu_threads_per_block = 256;

}  // namespace qd::inline v0::limits
