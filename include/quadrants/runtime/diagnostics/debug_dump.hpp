// print_ir's debug dumps: under debug_dump_path, <kernel>/traced.ir.txt and,
// per variant, <kernel>/<whole|split>/task_<n>.ir.txt, task_<n>.<ext> and program sources (the backend's source_extension).
#pragma once

#include <string>
#include <string_view>

#include "quadrants/base/api.hpp"
#include "quadrants/runtime/config.hpp"

namespace qd::inline v0::detail {

// <debug_dump_path>/<kernel's file stem>: where a kernel's files go.
QD_FUNC std::string kernel_dump_dir(const settings& s, std::string_view kernel_name);

// Writes `text` to <kernel_dump_dir>/<relative> atomically (runtime/diagnostics/text_file.hpp: a new
// temporary file, no link followed below debug_dump_path, which with every directory under
// it must be this user's or root's and not writable by others unless sticky). Logs the dump
// directory once per process (info), and warns once per directory when it cannot write (or
// may not); never throws.
QD_FUNC void dump_debug_file(const settings& s, std::string_view kernel_name, std::string_view relative,
                             std::string_view text);

}  // namespace qd::inline v0::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/diagnostics/debug_dump-inl.hpp"
#endif
