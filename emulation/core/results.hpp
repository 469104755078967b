// What an emulated call comes to, and how each API reports it: one table of statuses
// with CUDA's result code and HIP's, and one of result codes with each API's name.
#pragma once

#include "core/blob.hpp"

namespace qd::emulation {

// X(status, CUDA's result, HIP's result): HIP numbers its errors as CUDA does, but for
// a trap and a block beyond __launch_bounds__, which CUDA reports as an illegal
// instruction and a lack of resources, and HIP as launch failures.
#define QD_EMU_STATUSES(X)                                                                           \
  X(ok, 0, 0)                                                                                        \
  X(invalid_value, 1, 1)                                                                             \
  X(out_of_memory, 2, 2)                                                                             \
  X(invalid_handle, 400, 400)                                                                        \
  X(not_found, 500, 500)                                                                             \
  X(invalid_image, 200, 200) /* not an emulated binary of this API, or corrupt */                    \
  X(no_binary, 209, 209)     /* an emulated binary for another target */                             \
  X(not_ready, 600, 600)                                                                             \
  X(parameter_buffer_too_small, 1, 1)                                                                \
  X(kernel_trap, 715, 719)         /* __trap */                                                      \
  X(kernel_assert, 710, 710)       /* a failed device assert */                                      \
  X(kernel_no_fiber, 719, 719)     /* __syncthreads in a kernel built without fibers: our bug */     \
  X(capture_unsupported, 900, 900) /* what a capturing stream (or the null stream) cannot capture */ \
  X(illegal_state, 401, 401)       /* beginning a capture twice, ending one that was not begun */    \
  X(not_initialized, 3, 3)                                                                           \
  X(invalid_device, 101, 101)                                                                        \
  X(invalid_context, 201, 201) /* CUDA: no current context */                                        \
  X(not_supported, 801, 801)                                                                         \
  X(beyond_launch_bounds, 701, 719)  /* a block beyond __launch_bounds__: CUDA's out of resources */ \
  X(invalid_memcpy_direction, 1, 21) /* hipMemcpy's kind (CUDA's copies have none) */

#define QD_EMU_STATUS_NAME(name, cuda_code, hip_code) name,
enum class gpu_status { QD_EMU_STATUSES(QD_EMU_STATUS_NAME) };
#undef QD_EMU_STATUS_NAME

// The result code `api` reports `s` with.
int result_code(gpu_api api, gpu_status s);

// cuGetErrorName / hipGetErrorName and the description of a result code (null when the
// API has no such code).
const char* result_name(gpu_api api, int code);
const char* result_text(gpu_api api, int code);

}  // namespace qd::emulation
