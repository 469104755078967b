// A GPU vendor's run-time compiler -- NVRTC or hipRTC -- as one table of entry points,
// and the compile step both share: options, the log, the code, a rejection's error.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quadrants/backend/gpu_entry_table.hpp"
#include "quadrants/base/api.hpp"
#include "quadrants/base/error.hpp"

namespace qd::inline v0::backend {

using gpu_program = struct gpu_program_st*;                   // nvrtcProgram, hiprtcProgram
inline constexpr gpu_result gpu_compiler_invalid_option = 5;  // NVRTC_ERROR_INVALID_OPTION (and hipRTC's)

// One row per entry point: the member, NVRTC's symbol, hipRTC's (nullptr: none), the type.
#define QD_GPU_COMPILER_ENTRY_POINTS(X)                                                                               \
  X(version, "nvrtcVersion", "hiprtcVersion", gpu_result(int*, int*))                                                 \
  X(create_program, "nvrtcCreateProgram", "hiprtcCreateProgram",                                                      \
    gpu_result(gpu_program*, const char*, const char*, int, const char* const*, const char* const*))                  \
  X(destroy_program, "nvrtcDestroyProgram", "hiprtcDestroyProgram", gpu_result(gpu_program*))                         \
  X(compile_program, "nvrtcCompileProgram", "hiprtcCompileProgram", gpu_result(gpu_program, int, const char* const*)) \
  X(code_size, "nvrtcGetCUBINSize", "hiprtcGetCodeSize", gpu_result(gpu_program, std::size_t*))                       \
  X(code, "nvrtcGetCUBIN", "hiprtcGetCode", gpu_result(gpu_program, char*))                                           \
  X(log_size, "nvrtcGetProgramLogSize", "hiprtcGetProgramLogSize", gpu_result(gpu_program, std::size_t*))             \
  X(log, "nvrtcGetProgramLog", "hiprtcGetProgramLog", gpu_result(gpu_program, char*))                                 \
  X(error_string, "nvrtcGetErrorString", "hiprtcGetErrorString", const char*(gpu_result))                             \
  X(supported_arch_count, "nvrtcGetNumSupportedArchs", nullptr, gpu_result(int*))                                     \
  X(supported_archs, "nvrtcGetSupportedArchs", nullptr, gpu_result(int*))

// Rows a compiler may lack: NVRTC's precompiled headers (12.8+).
#define QD_GPU_COMPILER_OPTIONAL_ENTRY_POINTS(X) \
  X(pch_create_status, "nvrtcGetPCHCreateStatus", nullptr, gpu_result(gpu_program))

// One vendor's compiler entry points, resolved on the first compile by the vendor's
// file (backend/cuda/nvrtc-inl.hpp, backend/amdgpu/hiprtc-inl.hpp). The rows' types
// are the same for both, so one type serves, told its vendor.
struct gpu_compiler_api {
  gpu_vendor vendor = gpu_vendor::cuda;
  const char* calls = "NVRTC call";  // "hipRTC call"
  QD_GPU_ENTRY_TABLE(gpu_compiler_api, QD_GPU_COMPILER_ENTRY_POINTS, QD_GPU_COMPILER_OPTIONAL_ENTRY_POINTS)
  QD_FUNC std::string describe(gpu_result r) const;
};

// What one program came to: the compiler's result, its log (trailing NULs and newlines
// removed) and, when it compiled, the code; with headers, the precompiled header's
// creation status where the compiler reports one (NVRTC 12.8+).
struct gpu_program_outcome {
  gpu_result result = gpu_success;
  std::string log;
  std::vector<std::byte> code;
  std::optional<gpu_result> pch_status;
};

// A header the program may #include by `name`; both NUL-terminated.
struct gpu_program_header {
  const char* name;
  const char* text;
};

// Creates a program from `source` named `program_name` (with `headers`), compiles it with
// `flags`, reads its log and code, and destroys it. Only a failing create or code read throws.
QD_FUNC gpu_program_outcome compile_gpu_program(const gpu_compiler_api& api, std::string_view source,
                                                const char* program_name, const std::vector<std::string>& flags,
                                                std::span<const gpu_program_header> headers = {});

// The flags as the cache key and messages show them: each followed by a space.
QD_FUNC std::string joined_flags(const std::vector<std::string>& flags);

// The qd::compile_error for generated code the compiler rejected: its log, and the
// generated line the log's first error points at, in the file named by the first of
// `file_names` the log mentions; the kernel(s) `what`, options and source kept.
QD_FUNC compile_error rejected_program(std::string_view compiler, std::string_view language, std::string_view what,
                                       const char* result_name, const std::vector<std::string>& flags,
                                       std::string_view source, const std::string& log,
                                       std::initializer_list<std::string_view> file_names);

// The compiler's version, "13.0".
QD_FUNC std::string gpu_compiler_version(const gpu_compiler_api& api);

}  // namespace qd::inline v0::backend

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/gpu_compiler-inl.hpp"
#endif
