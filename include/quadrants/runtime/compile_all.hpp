// qd::compile_all: every kernel of the process made ready for the running program, many
// at once, with the progress of a long cold start shown.
#pragma once

#include "quadrants/base/api.hpp"

namespace qd::inline v0 {

// Traces and compiles (or finds in the cache) every qd::kernel alive in the process that
// is not yet ready for the program of the last qd::init, on up to num_compile_threads
// threads at once; a backend whose compiler is not thread-safe builds one program at a
// time. Kernels with template arguments: the variants launched or compiled so far. A cold
// start that takes over about two seconds shows its progress (docs/caching.md). The
// first kernel's error, if any, is thrown after all others were tried.
QD_FUNC void compile_all();

}  // namespace qd::inline v0

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/compile_all-inl.hpp"
#endif
