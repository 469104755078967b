// The emulated hipRTC (libqd_emulated_hiprtc.so): hipRTC's C API, compiling HIP
// source with the host C++ compiler into an emulated code object for the emulated HIP
// runtime. Where the real hipRTC is installed (QD_EMULATED_GPU_REAL_HIPRTC, else the
// usual places) it compiles each distinct program once too, first (its ~140 ms a
// program would otherwise double the emulated AMD runs' time): what it rejects fails
// here with its own result and log.
#include <cstdlib>
#include <string>
#include <vector>

#include "core/runtime_compiler.hpp"

#define QD_EMU_EXPORT extern "C" __attribute__((visibility("default")))

QD_EMULATED_GPU_LIBRARY_MARKER

using hiprtcResult = int;
using hiprtcProgram = struct hiprtc_program_st*;

namespace {

namespace emu = qd::emulation;


bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// hipRTC's options (clang's) as host compiler flags.
bool translate(int count, const char* const* options, emu::host_compile& hc, bool real_accepted, std::string& error) {
  hc.api = emu::gpu_api::hip;
  hc.target = "gfx90a";
  hc.codegen_flags = {"-O2"};
  for (int i = 0; i < count; ++i) {
    const std::string o = options[i];
    if (starts_with(o, "--offload-arch=") || starts_with(o, "--gpu-architecture=")) {
      hc.target = o.substr(o.find('=') + 1);
      if (!starts_with(hc.target, "gfx")) {
        error = "error: invalid offload arch '" + hc.target + "' (the emulated hipRTC)";
        return false;
      }
    } else if (starts_with(o, "-std=")) {
      hc.language = o.substr(5);
    } else if (starts_with(o, "-O") && o.size() == 3) {
      hc.codegen_flags.push_back(o);
    } else if (starts_with(o, "-D") || starts_with(o, "-U") || starts_with(o, "-I")) {
      if (o.size() == 2 && i + 1 < count) {
        hc.preprocessor_flags.push_back(o + options[++i]);
      } else {
        hc.preprocessor_flags.push_back(o);
      }
    } else if (o == "-ffast-math" || starts_with(o, "-ffp-contract=")) {
      hc.codegen_flags.push_back(o);
    } else if (o == "-g" || o == "-w" || starts_with(o, "-W") || o == "-fgpu-rdc" || o == "-fno-gpu-rdc" ||
               starts_with(o, "-mcumode") || starts_with(o, "-mno-cumode") || starts_with(o, "-mwavefrontsize64") ||
               starts_with(o, "-mno-wavefrontsize64") || starts_with(o, "-fgpu-flush-denormals-to-zero") ||
               starts_with(o, "-fno-gpu-flush-denormals-to-zero")) {
      // Concerns only the GPU's code generation or the compiler's diagnostics.
    } else if (!real_accepted) {
      error = "error: unknown argument: '" + o + "' (the emulated hipRTC)";
      return false;
    }
  }
  const std::string processor = hc.target.substr(0, hc.target.find(':'));
  hc.preprocessor_flags.insert(hc.preprocessor_flags.end(),
                               {"-D__HIP__", "-D__HIPCC_RTC__", "-D__HIP_DEVICE_COMPILE__=1", "-D__HIP_PLATFORM_AMD__",
                                "-D__AMDGCN__", "-D__" + processor + "__", "-D__AMDGCN_WAVEFRONT_SIZE=64",
                                "-DQD_EMU_HIP", "-DQD_EMU_WARP_SIZE=64"});
  return true;
}

emu::runtime_compiler& compiler() {
  static emu::runtime_compiler* c = [] {
    std::vector<std::string> dirs;
    if (const char* rocm = std::getenv("ROCM_PATH"); rocm && *rocm) dirs.push_back(std::string(rocm) + "/lib");
    for (const char* d : {"/opt/rocm/lib", "/opt/rocm/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"})
      dirs.emplace_back(d);
    return new emu::runtime_compiler({"hipRTC",
                                      "HIPRTC",
                                      "hiprtc",
                                      {"QD_EMULATED_GPU_REAL_HIPRTC",
                                       {"libhiprtc.so.6", "libhiprtc.so", "libamdhip64.so.5", "libamdhip64.so"},
                                       dirs,
                                       "hiprtcCompileProgram"},
                                      &translate,
                                      true,
                                      true});
  }();
  return *c;
}

}  // namespace

QD_EMU_EXPORT const char* hiprtcGetErrorString(hiprtcResult r) { return compiler().result_name(r); }

QD_EMU_EXPORT hiprtcResult hiprtcVersion(int* major, int* minor) {
  if (!major || !minor) return emu::rtc_invalid_input;
  if (!compiler().real_version(major, minor)) *major = 6, *minor = 0;
  return emu::rtc_success;
}

QD_EMU_EXPORT hiprtcResult hiprtcCreateProgram(hiprtcProgram* out, const char* source, const char* name,
                                               int header_count, const char* const* headers,
                                               const char* const* include_names) {
  return compiler().create(reinterpret_cast<void**>(out), source, name, header_count, headers, include_names);
}
QD_EMU_EXPORT hiprtcResult hiprtcDestroyProgram(hiprtcProgram* p) {
  return compiler().destroy(reinterpret_cast<void**>(p));
}
QD_EMU_EXPORT hiprtcResult hiprtcCompileProgram(hiprtcProgram p, int count, const char* const* options) {
  return compiler().compile(p, count, options);
}
QD_EMU_EXPORT hiprtcResult hiprtcGetCodeSize(hiprtcProgram p, std::size_t* size) {
  return compiler().binary_size(p, size);
}
QD_EMU_EXPORT hiprtcResult hiprtcGetCode(hiprtcProgram p, char* out) { return compiler().binary(p, out); }
QD_EMU_EXPORT hiprtcResult hiprtcGetProgramLogSize(hiprtcProgram p, std::size_t* size) {
  return compiler().log_size(p, size);
}
QD_EMU_EXPORT hiprtcResult hiprtcGetProgramLog(hiprtcProgram p, char* out) { return compiler().log(p, out); }

// The emulation's own: the file of the real hipRTC each program is checked with; null if none.
QD_EMU_EXPORT const char* qd_emulation_real_compiler() {
  return compiler().real_handle() ? compiler().real_path().c_str() : nullptr;
}
