// What the emulated NVRTC and hipRTC share: their programs (source, headers, log,
// binary), the real compiler's check where it is installed, reading the options, then
// the host compile. Their C APIs have the same shape and result numbering (exported
// once below); each API file translates its own options and describes itself.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/host_compiler.hpp"
#include "core/real_library.hpp"

namespace qd::emulation {

// NVRTC's and hipRTC's results (the same numbers in both).
enum rtc_result : int {
  rtc_success = 0,
  rtc_out_of_memory = 1,
  rtc_program_creation_failure = 2,
  rtc_invalid_input = 3,
  rtc_invalid_program = 4,
  rtc_invalid_option = 5,
  rtc_compilation = 6,
};

// What the API file made of one option (rtc_options::translate).
enum class option_use { translated, unknown, invalid };

// How an API file reads its compiler's options into a host compile.
struct rtc_options {
  // Before the options: the API's defaults (its api, target, optimization).
  void (*defaults)(host_compile& out);
  // One option, options[i] (one that takes the next as its value advances i): into
  // `out`, or an error with the compiler's message for a value it refuses.
  option_use (*translate)(int count, const char* const* options, int& i, host_compile& out, std::string& error);
  // After the options: the API's predefined macros for the target.
  void (*finish)(host_compile& out);
  // Options that concern only the GPU's code generation or the compiler's diagnostics
  // (an entry ending in '*' is a prefix); the host compile ignores them.
  std::vector<std::string> ignored;
  // The compiler's message for an option it does not know, around the option. An
  // unknown option passes when the real compiler took it.
  const char* unknown_before;
  const char* unknown_after;
};

// The rest of what tells NVRTC and hipRTC apart (core/runtime_compiler.cpp, side by side).
struct rtc_flavor {
  const char* name;           // "NVRTC", for messages
  const char* result_prefix;  // "NVRTC": results are named NVRTC_SUCCESS, NVRTC_ERROR_...
  const char* prefix;         // "nvrtc": the real library's symbols are <prefix>CreateProgram, ...
  real_library_search search;
  // Check each distinct (source, options) with the real compiler once per process
  // (hipRTC costs ~140 ms a program), instead of every time.
  bool check_once;
  // The real compiler crashes when two threads compile at once (HIP 5's hipRTC).
  bool serialize;
  // The version reported when the real compiler is absent.
  int default_major, default_minor;
};
rtc_flavor flavor_of(gpu_api api);

class runtime_compiler {
 public:
  runtime_compiler(gpu_api api, rtc_options reader);
  ~runtime_compiler();
  runtime_compiler(const runtime_compiler&) = delete;
  runtime_compiler& operator=(const runtime_compiler&) = delete;

  int create(void** out, const char* source, const char* name, int header_count, const char* const* headers,
             const char* const* include_names);
  int destroy(void** program);
  int compile(void* program, int count, const char* const* options);
  int binary_size(void* program, std::size_t* size);
  int binary(void* program, char* out);
  int log_size(void* program, std::size_t* size);
  int log(void* program, char* out);
  // "NVRTC_ERROR_COMPILATION" for 6 (nvrtcGetErrorString, hiprtcGetErrorString).
  const char* result_name(int result) const;

  // The real compiler's version, else the flavor's default.
  int version(int* major, int* minor);
  // The real library's handle (null when absent), for API-specific queries.
  void* real_handle();
  // The real library's path, or why there is none ("not installed", "turned off by ...").
  const std::string& real_path();
  // The file of the real compiler programs are checked with; null if none.
  const char* real_compiler();

 private:
  struct program;
  struct real_api;
  program* find(void* handle);
  const real_api& real();
  // The options as host compiler flags; false, with the compiler's message, for one it refuses.
  bool translate(int count, const char* const* options, host_compile& out, bool real_accepted,
                 std::string& error) const;
  int real_compile(const program& p, int count, const char* const* options, std::string& log);

  rtc_flavor flavor_;
  rtc_options reader_;
  std::once_flag real_once_;
  std::unique_ptr<real_api> real_;
  std::mutex real_mutex_;
  std::mutex mutex_;
  std::set<void*> programs_;
  std::unordered_set<std::string> accepted_;  // check_once: what the real compiler accepted
  std::vector<std::string> result_names_;
};

}  // namespace qd::emulation

// What the emulated NVRTC and hipRTC export alike: X(return type, NVRTC symbol, hipRTC
// symbol, (parameters), the call on the API file's compiler()).
#define QD_EMU_COMPILER_CALLS(X)                                                                                       \
  X(int, nvrtcVersion, hiprtcVersion, (int* major, int* minor), version(major, minor))                                 \
  X(const char*, nvrtcGetErrorString, hiprtcGetErrorString, (int result), result_name(result))                         \
  X(int, nvrtcCreateProgram, hiprtcCreateProgram,                                                                      \
    (void** out, const char* source, const char* name, int header_count, const char* const* headers,                   \
     const char* const* include_names),                                                                                \
    create(out, source, name, header_count, headers, include_names))                                                   \
  X(int, nvrtcDestroyProgram, hiprtcDestroyProgram, (void** program), destroy(program))                                \
  X(int, nvrtcCompileProgram, hiprtcCompileProgram, (void* program, int count, const char* const* options),            \
    compile(program, count, options))                                                                                  \
  X(int, nvrtcGetCUBINSize, hiprtcGetCodeSize, (void* program, std::size_t* size), binary_size(program, size))         \
  X(int, nvrtcGetCUBIN, hiprtcGetCode, (void* program, char* out), binary(program, out))                               \
  X(int, nvrtcGetProgramLogSize, hiprtcGetProgramLogSize, (void* program, std::size_t* size), log_size(program, size)) \
  X(int, nvrtcGetProgramLog, hiprtcGetProgramLog, (void* program, char* out), log(program, out))                       \
  /* The emulation's own: the file of the real compiler each program is checked with; null if none. */                 \
  X(const char*, qd_emulation_real_compiler, qd_emulation_real_compiler, (), real_compiler())

#define QD_EMU_NVRTC_EXPORT(type, nvrtc_name, hiprtc_name, params, ...) \
  QD_EMU_EXPORT type nvrtc_name params { return compiler().__VA_ARGS__; }
#define QD_EMU_HIPRTC_EXPORT(type, nvrtc_name, hiprtc_name, params, ...) \
  QD_EMU_EXPORT type hiprtc_name params { return compiler().__VA_ARGS__; }
