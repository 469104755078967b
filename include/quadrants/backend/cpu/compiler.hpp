// The CPU backend's compiler: the host C++ compiler (QD_CXX, else c++) turns a
// generated translation unit into a shared object, returned as bytes.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quadrants/base/api.hpp"

namespace qd::inline v0::backend::cpu {
namespace detail {
struct process_result {
  bool timed_out = false;
  int exit_code = 0;  // -1 when killed by a signal
  int signal = 0;
};
}  // namespace detail

struct compile_options {
  int opt_level = 2;
  bool fast_math = false;
  int timeout_seconds = 600;  // the compiler's process group is killed after this; 0: no limit. Not in cache keys
};

// The compiler command: QD_CXX split on spaces, else "c++". A QD_CXX that is set
// but blank is a qd::user_error naming it.
QD_FUNC std::vector<std::string> compiler_command();

// The compiler command and its --version line; resolved once per command, on
// first use (--version must finish within `timeout_seconds`).
struct compiler_identity {
  std::vector<std::string> command;
  std::string version;
  bool gcc = false;  // GCC (its --version names the Free Software Foundation): compile_flags' GCC set
};
QD_FUNC const compiler_identity& host_compiler(int timeout_seconds = 600);

// Identifies the compiler for cache keys without running it: the command, and the
// resolved executable's path, size and modification time (an upgrade changes them).
QD_FUNC std::string compiler_fingerprint();

// Code-affecting flags, part of every cache key. opt_level 2 (the default) is GCC's -O1 with
// strict aliasing and -O2's vectoriser for GCC (about 0.7x -O2's compile time; run time
// measured in docs/benchmarks.md), and -O2 for other compilers; the other levels are
// -O<opt_level> for every compiler.
QD_FUNC std::vector<std::string> compile_flags(const compile_options& options, bool gcc);

// Compiles `source`; a failure is a qd::compile_error carrying the compiler's
// log and the generated line it points at. `what` names the kernel(s). A compiler
// that runs past the timeout, is killed by a signal, cannot write its files or
// cannot run its own programs is a qd::compile_error that says so.
QD_FUNC std::vector<std::byte> compile_shared_object(std::string_view source, const compile_options& options,
                                                     std::string_view what);

}  // namespace qd::inline v0::backend::cpu

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/cpu/compiler-inl.hpp"
#endif
