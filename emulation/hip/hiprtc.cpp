// The emulated hipRTC (libqd_emulated_hiprtc.so): hipRTC's C API, compiling HIP
// source with the host C++ compiler into an emulated code object for the emulated HIP
// runtime. Where the real hipRTC is installed (QD_EMULATED_GPU_REAL_HIPRTC, else the
// usual places) it compiles each distinct program once too, first (its ~140 ms a
// program would otherwise double the emulated AMD runs' time): what it rejects fails
// here with its own result and log.
#include <string>

#include "core/runtime_compiler.hpp"

QD_EMULATED_GPU_LIBRARY_MARKER

namespace {

namespace emu = qd::emulation;

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

void defaults(emu::host_compile& hc) {
  hc.api = emu::gpu_api::hip;
  hc.target = "gfx90a";
  hc.codegen_flags = {"-O2"};
}

// One of hipRTC's options (clang's) as host compiler flags.
emu::option_use translate(int count, const char* const* options, int& i, emu::host_compile& hc, std::string& error) {
  const std::string o = options[i];
  if (starts_with(o, "--offload-arch=") || starts_with(o, "--gpu-architecture=")) {
    hc.target = o.substr(o.find('=') + 1);
    if (!starts_with(hc.target, "gfx")) {
      error = "error: invalid offload arch '" + hc.target + "' (the emulated hipRTC)";
      return emu::option_use::invalid;
    }
  } else if (starts_with(o, "-std=")) {
    hc.language = o.substr(5);
  } else if (starts_with(o, "-O") && o.size() == 3) {
    hc.codegen_flags.push_back(o);
  } else if (starts_with(o, "-D") || starts_with(o, "-U") || starts_with(o, "-I")) {
    hc.preprocessor_flags.push_back(o.size() == 2 && i + 1 < count ? o + options[++i] : o);
  } else if (o == "-ffast-math" || starts_with(o, "-ffp-contract=")) {
    hc.codegen_flags.push_back(o);
  } else {
    return emu::option_use::unknown;
  }
  return emu::option_use::translated;
}

// hipRTC's predefined macros.
void finish(emu::host_compile& hc) {
  const std::string processor = hc.target.substr(0, hc.target.find(':'));
  hc.preprocessor_flags.insert(
      hc.preprocessor_flags.end(),
      {"-D__HIP__", "-D__HIPCC_RTC__", "-D__HIP_DEVICE_COMPILE__=1", "-D__HIP_PLATFORM_AMD__", "-D__AMDGCN__",
       "-D__" + processor + "__", "-D__AMDGCN_WAVEFRONT_SIZE=64", "-DQD_EMU_HIP", "-DQD_EMU_WARP_SIZE=64"});
}

emu::runtime_compiler& compiler() {
  // What concerns only the GPU's code generation or clang's diagnostics (* ends a prefix).
  static emu::runtime_compiler* c = new emu::runtime_compiler(
      emu::gpu_api::hip,
      {&defaults,
       &translate,
       &finish,
       {"-g", "-w", "-W*", "-fgpu-rdc", "-fno-gpu-rdc", "-mcumode*", "-mno-cumode*", "-mwavefrontsize64*",
        "-mno-wavefrontsize64*", "-fgpu-flush-denormals-to-zero*", "-fno-gpu-flush-denormals-to-zero*"},
       "error: unknown argument: '",
       "' (the emulated hipRTC)"});
  return *c;
}

}  // namespace

QD_EMU_COMPILER_CALLS(QD_EMU_HIPRTC_EXPORT)
