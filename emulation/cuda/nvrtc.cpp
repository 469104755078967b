// The emulated NVRTC (libqd_emulated_nvrtc.so): NVRTC's C API, compiling CUDA
// source with the host C++ compiler into an emulated CUBIN for the emulated CUDA
// driver. Where the real NVRTC is installed (QD_EMULATED_GPU_REAL_NVRTC, else the usual
// places) it compiles every program too, first: what NVRTC rejects fails here with
// NVRTC's own result and log.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/runtime_compiler.hpp"

#define QD_EMU_EXPORT extern "C" __attribute__((visibility("default")))

QD_EMULATED_GPU_LIBRARY_MARKER

using nvrtcResult = int;
using nvrtcProgram = struct nvrtc_program_st*;

namespace {

namespace emu = qd::emulation;


emu::runtime_compiler& compiler();

// The real NVRTC's list where it is installed, else NVRTC 13.0's.
std::vector<int> supported_archs() {
  if (void* real = compiler().real_handle()) {
    auto count = reinterpret_cast<nvrtcResult (*)(int*)>(::dlsym(real, "nvrtcGetNumSupportedArchs"));
    auto list = reinterpret_cast<nvrtcResult (*)(int*)>(::dlsym(real, "nvrtcGetSupportedArchs"));
    int n = 0;
    if (count && list && count(&n) == emu::rtc_success && n > 0) {
      std::vector<int> archs(static_cast<std::size_t>(n));
      if (list(archs.data()) == emu::rtc_success) return archs;
    }
  }
  return {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// NVRTC's options as host compiler flags.
bool translate(int count, const char* const* options, emu::host_compile& hc, bool real_accepted, std::string& error) {
  hc.api = emu::gpu_api::cuda;
  hc.target = "compute_75";  // NVRTC 13's default architecture
  hc.codegen_flags = {"-O2"};
  for (int i = 0; i < count; ++i) {
    const std::string o = options[i];
    std::string value;
    auto take = [&](std::initializer_list<const char*> names) {
      for (const char* n : names) {
        const std::string with = std::string(n) + "=";
        if (starts_with(o, with.c_str())) {
          value = o.substr(with.size());
          return true;
        }
        if (o == n && i + 1 < count) {
          value = options[++i];
          return true;
        }
      }
      return false;
    };
    if (take({"-arch", "--gpu-architecture"})) {
      const bool cubin = starts_with(value, "sm_"), ptx = starts_with(value, "compute_");
      const int arch = std::atoi(value.c_str() + (cubin ? 3 : ptx ? 8 : 0));
      const auto known = supported_archs();
      if ((!cubin && !ptx) || std::find(known.begin(), known.end(), arch) == known.end()) {
        error = "nvrtc: error: invalid value for --gpu-architecture (-arch): " + value;
        return false;
      }
      hc.target = value;
    } else if (take({"-std", "--std"})) {
      hc.language = value == "c++03" ? "c++11" : value;
    } else if (take({"-D", "--define-macro"}) || (starts_with(o, "-D") && (value = o.substr(2), true))) {
      hc.preprocessor_flags.push_back("-D" + value);
    } else if (take({"-U", "--undefine-macro"})) {
      hc.preprocessor_flags.push_back("-U" + value);
    } else if (take({"-I", "--include-path"}) || (starts_with(o, "-I") && (value = o.substr(2), true))) {
      hc.preprocessor_flags.push_back("-I" + value);
    } else if (take({"-include", "--pre-include"})) {
      hc.preprocessor_flags.insert(hc.preprocessor_flags.end(), {"-include", value});
    } else if (o == "--use_fast_math" || o == "-use_fast_math") {
      hc.codegen_flags.push_back("-ffast-math");
    } else if (take({"--fmad", "-fmad"})) {
      hc.codegen_flags.push_back(value == "false" ? "-ffp-contract=off" : "-ffp-contract=fast");
    } else if (o == "-G" || o == "--device-debug") {
      hc.codegen_flags.push_back("-O0");
    } else if (o == "--minimal" || o == "-minimal" || o == "-lineinfo" || o == "--generate-line-info" || o == "-w" ||
               o == "--disable-warnings" || o == "-default-device" || o == "--device-as-default-execution-space" ||
               o == "-restrict" || o == "--restrict" || o == "-dlto" || o == "--dlink-time-opt" ||
               starts_with(o, "--ptxas-options") || starts_with(o, "-Xptxas") || starts_with(o, "-ftz") ||
               starts_with(o, "--ftz") || starts_with(o, "-prec-") || starts_with(o, "--prec-") ||
               starts_with(o, "-dopt") || starts_with(o, "--dopt") || starts_with(o, "--diag") ||
               starts_with(o, "-maxrregcount") || starts_with(o, "--maxrregcount") || starts_with(o, "-rdc") ||
               starts_with(o, "--relocatable-device-code") || starts_with(o, "--extra-device-vectorization") ||
               starts_with(o, "-extra-device-vectorization")) {
      // Concerns only the GPU's code generation or NVRTC's diagnostics.
    } else if (!real_accepted) {
      error = "nvrtc: error: unrecognized option " + o + " (the emulated NVRTC)";
      return false;
    }
  }
  const std::size_t digits = hc.target.find('_') + 1;
  hc.preprocessor_flags.push_back("-D__CUDA_ARCH__=" + std::to_string(std::atoi(hc.target.c_str() + digits) * 10));
  hc.preprocessor_flags.insert(hc.preprocessor_flags.end(),
                               {"-D__CUDACC__", "-D__CUDACC_RTC__", "-D__CUDACC_VER_MAJOR__=13",
                                "-D__CUDACC_VER_MINOR__=0", "-DQD_EMU_CUDA", "-DQD_EMU_WARP_SIZE=32"});
  return true;
}

emu::runtime_compiler& compiler() {
  static emu::runtime_compiler* c = [] {
    std::vector<std::string> dirs;
    for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
      if (const char* v = std::getenv(var); v && *v) dirs.push_back(std::string(v) + "/lib64");
    for (const char* d : {"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
                          "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/opt/cuda/lib64"})
      dirs.emplace_back(d);
    return new emu::runtime_compiler({"NVRTC",
                                      "NVRTC",
                                      "nvrtc",
                                      {"QD_EMULATED_GPU_REAL_NVRTC",
                                       {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"},
                                       dirs,
                                       "nvrtcCompileProgram"},
                                      &translate,
                                      false,
                                      false});
  }();
  return *c;
}

}  // namespace

QD_EMU_EXPORT const char* nvrtcGetErrorString(nvrtcResult r) { return compiler().result_name(r); }

QD_EMU_EXPORT nvrtcResult nvrtcVersion(int* major, int* minor) {
  if (!major || !minor) return emu::rtc_invalid_input;
  if (!compiler().real_version(major, minor)) *major = 13, *minor = 0;
  return emu::rtc_success;
}

QD_EMU_EXPORT nvrtcResult nvrtcGetNumSupportedArchs(int* n) {
  if (!n) return emu::rtc_invalid_input;
  *n = static_cast<int>(supported_archs().size());
  return emu::rtc_success;
}

QD_EMU_EXPORT nvrtcResult nvrtcGetSupportedArchs(int* archs) {
  if (!archs) return emu::rtc_invalid_input;
  const auto list = supported_archs();
  std::copy(list.begin(), list.end(), archs);
  return emu::rtc_success;
}

QD_EMU_EXPORT nvrtcResult nvrtcCreateProgram(nvrtcProgram* out, const char* source, const char* name, int header_count,
                                             const char* const* headers, const char* const* include_names) {
  return compiler().create(reinterpret_cast<void**>(out), source, name, header_count, headers, include_names);
}
QD_EMU_EXPORT nvrtcResult nvrtcDestroyProgram(nvrtcProgram* p) {
  return compiler().destroy(reinterpret_cast<void**>(p));
}
QD_EMU_EXPORT nvrtcResult nvrtcCompileProgram(nvrtcProgram p, int count, const char* const* options) {
  return compiler().compile(p, count, options);
}
QD_EMU_EXPORT nvrtcResult nvrtcGetCUBINSize(nvrtcProgram p, std::size_t* size) { return compiler().binary_size(p, size); }
QD_EMU_EXPORT nvrtcResult nvrtcGetCUBIN(nvrtcProgram p, char* out) { return compiler().binary(p, out); }
QD_EMU_EXPORT nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram p, std::size_t* size) {
  return compiler().log_size(p, size);
}
QD_EMU_EXPORT nvrtcResult nvrtcGetProgramLog(nvrtcProgram p, char* out) { return compiler().log(p, out); }

// The emulation's own: the file of the real NVRTC each program is checked with; null if none.
QD_EMU_EXPORT const char* qd_emulation_real_compiler() {
  return compiler().real_handle() ? compiler().real_path().c_str() : nullptr;
}
