// The emulated compilers' common step: the exact CUDA/HIP translation unit built by
// the host C++ compiler against the device built-ins, into a shared object wrapped
// as an emulated binary. Preprocess, find the kernels, insert their glue, compile.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/blob.hpp"

namespace qd::emulation {

struct host_compile {
  gpu_api api = gpu_api::cuda;
  std::string target;        // "sm_90", "gfx90a:sramecc+:xnack-": recorded in the binary
  std::string program_name;  // the file name the source gets: diagnostics name it
  std::string source;
  std::vector<std::pair<std::string, std::string>> headers;  // include name, contents (nvrtcCreateProgram's)
  std::string language = "c++17";
  std::vector<std::string> preprocessor_flags;  // -D, -U, -I, -include: both steps
  std::vector<std::string> codegen_flags;       // -O2, -ffp-contract=off, -ffast-math: the compile only
};

struct host_compile_result {
  bool ok = false;
  std::string log;  // the host compiler's diagnostics, or why the emulation cannot take the program
  std::vector<unsigned char> binary;
};

host_compile_result compile_for_host(const host_compile& request);

// The built-ins every emulated translation unit sees first (abi.h, device_builtins.h).
extern const char* const device_builtins_text;

}  // namespace qd::emulation
