// The CPU backend's compiler: the host C++ compiler (QD_CXX, else c++) turns a
// generated translation unit into a shared object, returned as bytes.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quadrants/base/api.hpp"

namespace qd::backend::cpu {

struct compile_options {
  int opt_level = 2;
  bool fast_math = false;
};

// The compiler command (QD_CXX split on spaces, else "c++") and its --version
// line; resolved once per process, on first use.
struct compiler_identity {
  std::vector<std::string> command;
  std::string version;
};
QD_FUNC const compiler_identity& host_compiler();

// Identifies the compiler for cache keys without running it: the command, and the
// resolved executable's path, size and modification time (an upgrade changes them).
QD_FUNC std::string compiler_fingerprint();

// Code-affecting flags, part of every cache key.
QD_FUNC std::vector<std::string> compile_flags(const compile_options& options);

// Compiles `source`; a failure is a qd::compile_error carrying the compiler's
// log and the generated line it points at. `what` names the kernel(s).
QD_FUNC std::vector<std::byte> compile_shared_object(std::string_view source, const compile_options& options,
                                                     std::string_view what);

}  // namespace qd::backend::cpu

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/cpu/compiler-inl.hpp"
#endif
