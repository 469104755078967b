// Running one kernel launch over its grid: blocks are shared out to a pool of host
// threads (QD_EMULATED_GPU_THREADS, default: the hardware's), each block runs from
// start to end on one of them. The threads of a block run one after another, or, in
// programs that use __syncthreads, each on a fiber of its own (ucontext) so that all
// of them meet at every barrier. One pool thread runs the blocks in order, so a
// launch's result no longer depends on scheduling (the fuzzer's deterministic mode).
#pragma once

#include <memory>
#include <vector>

#include "abi.h"
#include "core/loaded_program.hpp"

namespace qd::emulation {

struct kernel_launch {
  std::shared_ptr<const loaded_program> program;  // keeps the code loaded while it runs
  const qd_emu_entry* entry = nullptr;
  qd_emu_dim grid{1, 1, 1}, block{1, 1, 1};
  std::vector<unsigned char> storage;  // the parameters' values, captured at launch
  std::vector<void*> args;             // one pointer per parameter, into storage
};

// How a launch ended: trap_code 0 when every block ran to its end, else 1 for __trap,
// 2 for a failed device assert, 3 for __syncthreads in a kernel built without fibers.
struct launch_outcome {
  int trap_code = 0;
};

// Runs every block of `launch` and returns when all are done.
launch_outcome run_kernel(const kernel_launch& launch);

// The number of host threads blocks run on.
unsigned emulation_threads();

// Captures parameter values from kernelParams (one pointer per parameter) or from a
// packed buffer (CU_LAUNCH_PARAM_BUFFER_POINTER / HIP_LAUNCH_PARAM_BUFFER_POINTER),
// laid out with each parameter at its alignment. False when the buffer is too small.
bool capture_parameters(const qd_emu_entry& entry, void** kernel_params, const void* buffer, std::size_t buffer_size,
                        kernel_launch& out);

}  // namespace qd::emulation
