// File names for print_ir's debug dumps: a kernel's name made safe to use as one, so that
// a kernel named "../x" or "a/b" still writes inside debug_dump_path.
#pragma once

#include <string>
#include <string_view>

#include "quadrants/base/api.hpp"

namespace qd::inline v0::detail {

// `kernel_name` with every character outside [A-Za-z0-9_.-] and a leading '.' replaced by
// '_', at most 80 characters; a name that had to change gets "-<8 hex digits of its hash>"
// so that two kernels never share a file. Never empty, ".", ".." or a path.
QD_FUNC std::string dump_file_stem(std::string_view kernel_name);

// The info line for print_ir when a kernel was not compiled (it came from a cache): its
// dumped program is the source the cached code was compiled from.
QD_FUNC void log_nothing_dumped(std::string_view kernel_name);

}  // namespace qd::inline v0::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/diagnostics/dump_path-inl.hpp"
#endif
