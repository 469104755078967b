// What the emulated NVRTC and hipRTC share: their programs (source, headers, log,
// binary), the real compiler's check where it is installed, then the host compile.
// Their C APIs have the same shape and result numbering; each API file exports the
// names and translates its options.
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

struct rtc_flavor {
  const char* name;    // "NVRTC", for messages
  const char* result_prefix;  // "NVRTC": results are named NVRTC_SUCCESS, NVRTC_ERROR_...
  const char* prefix;  // "nvrtc": the real library's symbols are <prefix>CreateProgram, ...
  real_library_search search;
  // The API's options as host compiler flags; false (with the compiler's message) for
  // an option it cannot take. Unknown options pass when the real compiler took them.
  bool (*translate)(int count, const char* const* options, host_compile& out, bool real_accepted, std::string& error);
  // Check each distinct (source, options) with the real compiler once per process
  // (hipRTC costs ~140 ms a program), instead of every time.
  bool check_once;
  // The real compiler crashes when two threads compile at once (HIP 5's hipRTC).
  bool serialize;
};

class runtime_compiler {
 public:
  explicit runtime_compiler(rtc_flavor flavor);
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

  // The real compiler's version, or false when it is absent.
  bool real_version(int* major, int* minor);
  // The real library's handle (null when absent), for API-specific queries.
  void* real_handle();
  // The real library's path, or why there is none ("not installed", "turned off by ...").
  const std::string& real_path();

 private:
  struct program;
  struct real_api;
  program* find(void* handle);
  const real_api& real();
  int real_compile(const program& p, int count, const char* const* options, std::string& log);

  rtc_flavor flavor_;
  std::once_flag real_once_;
  std::unique_ptr<real_api> real_;
  std::mutex real_mutex_;
  std::mutex mutex_;
  std::set<void*> programs_;
  std::unordered_set<std::string> accepted_;  // check_once: what the real compiler accepted
  std::vector<std::string> result_names_;
};

}  // namespace qd::emulation
