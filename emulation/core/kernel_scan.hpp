// Finds the kernels (__global__ function definitions) in a preprocessed CUDA/HIP
// translation unit and writes, right after each, the glue the emulated driver calls:
// trampolines that unpack cuLaunchKernel's void** into the typed call, and an entry
// of the module's table (abi.h). Types come from the compiler (decltype of the kernel),
// so only names, parameter counts and __launch_bounds__ are read from the text.
// Template kernels are left out (launching one needs NVRTC's name expressions).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace qd::emulation {

struct kernel_definition {
  std::string name;  // as written, qualified if the definition was
  unsigned param_count = 0;
  std::string max_threads;  // __launch_bounds__'s first argument, as written; empty if none
  std::size_t end = 0;      // the offset just after the definition's closing brace
};

struct kernel_scan {
  std::vector<kernel_definition> kernels;
  bool synchronizes = false;  // the text names __syncthreads (or a variant)
  std::string error;          // a kernel the scanner cannot handle (variadic parameters, no end)
};

kernel_scan scan_kernels(std::string_view preprocessed);

// The text with each kernel's glue inserted after its definition, on the same line
// (so the compiler's line numbers still point into the original source).
std::string insert_kernel_glue(std::string_view preprocessed, const kernel_scan& scan);

}  // namespace qd::emulation
