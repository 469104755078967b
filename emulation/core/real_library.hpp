// The real NVRTC or hipRTC, where installed: the emulated compilers compile every
// program with it too, so a source the real compiler rejects still fails, with its
// log. Found like the backend finds it, never the emulation itself.
#pragma once

#include <string>
#include <vector>

namespace qd::emulation {

struct real_library_search {
  const char* variable;                  // QD_EMULATED_GPU_REAL_NVRTC: a library file, or "off"
  std::vector<std::string> names;        // libnvrtc.so.13, ...
  std::vector<std::string> directories;  // searched in order; "$CUDA_HOME/lib64": under a variable's, if set
  const char* required_symbol;           // the library must export it (nvrtcCompileProgram)
};

// The opened library (dlopen handle), or null when it is absent or turned off; `path`
// receives the file opened, or why none was.
void* open_real_library(const real_library_search& search, std::string& path);

}  // namespace qd::emulation

// What an emulated library exports: C names, visible (everything else is hidden).
#define QD_EMU_EXPORT extern "C" __attribute__((visibility("default")))

// Every emulated library exports this marker, so that a search for the real one skips
// it (and a test can tell the emulation from a driver).
#define QD_EMULATED_GPU_LIBRARY_MARKER QD_EMU_EXPORT const char qd_emulated_gpu_library[] = "Quadrants emulated GPU";
