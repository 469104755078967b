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

QD_EMULATED_GPU_LIBRARY_MARKER

using nvrtcResult = int;

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

void defaults(emu::host_compile& hc) {
  hc.api = emu::gpu_api::cuda;
  hc.target = "compute_75";  // NVRTC 13's default architecture
  hc.codegen_flags = {"-O2"};
}

// One of NVRTC's options as host compiler flags.
emu::option_use translate(int count, const char* const* options, int& i, emu::host_compile& hc, std::string& error) {
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
      return emu::option_use::invalid;
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
  } else {
    return emu::option_use::unknown;
  }
  return emu::option_use::translated;
}

// NVRTC's predefined macros.
void finish(emu::host_compile& hc) {
  const std::size_t digits = hc.target.find('_') + 1;
  hc.preprocessor_flags.push_back("-D__CUDA_ARCH__=" + std::to_string(std::atoi(hc.target.c_str() + digits) * 10));
  hc.preprocessor_flags.insert(hc.preprocessor_flags.end(),
                               {"-D__CUDACC__", "-D__CUDACC_RTC__", "-D__CUDACC_VER_MAJOR__=13",
                                "-D__CUDACC_VER_MINOR__=0", "-DQD_EMU_CUDA", "-DQD_EMU_WARP_SIZE=32"});
}

emu::runtime_compiler& compiler() {
  // What concerns only the GPU's code generation or NVRTC's diagnostics (* ends a prefix).
  static emu::runtime_compiler* c =
      new emu::runtime_compiler(emu::gpu_api::cuda, {&defaults,
                                                     &translate,
                                                     &finish,
                                                     {"--minimal",
                                                      "-minimal",
                                                      "-lineinfo",
                                                      "--generate-line-info",
                                                      "-w",
                                                      "--disable-warnings",
                                                      "-default-device",
                                                      "--device-as-default-execution-space",
                                                      "-restrict",
                                                      "--restrict",
                                                      "-dlto",
                                                      "--dlink-time-opt",
                                                      "--ptxas-options*",
                                                      "-Xptxas*",
                                                      "-ftz*",
                                                      "--ftz*",
                                                      "-prec-*",
                                                      "--prec-*",
                                                      "-dopt*",
                                                      "--dopt*",
                                                      "--diag*",
                                                      "-maxrregcount*",
                                                      "--maxrregcount*",
                                                      "-rdc*",
                                                      "--relocatable-device-code*",
                                                      "--extra-device-vectorization*",
                                                      "-extra-device-vectorization*"},
                                                     "nvrtc: error: unrecognized option ",
                                                     " (the emulated NVRTC)"});
  return *c;
}

}  // namespace

QD_EMU_COMPILER_CALLS(QD_EMU_NVRTC_EXPORT)

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
