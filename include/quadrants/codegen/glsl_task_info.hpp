// What the Vulkan backend must know of each task in generated GLSL besides the shader
// itself (its entry, workgroup size, print formats): written by the emitter as marker
// comments in the source, and read back from it, so the source alone is compiled.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/base/dtype.hpp"

namespace qd::inline v0::codegen {

// One piece of a qd::print call: text, or a value of a type (printed as %g, %lld, %u or %d).
struct glsl_print_piece {
  bool is_text = true;
  std::string text;
  dtype type = dtype::i32;
  friend bool operator==(const glsl_print_piece&, const glsl_print_piece&) = default;
};

struct glsl_task_info {
  std::string entry;
  unsigned workgroup_size = 1;  // a serial task runs one invocation
  bool parallel = false;
  std::vector<std::vector<glsl_print_piece>> prints;  // by print site, numbered from 0
  friend bool operator==(const glsl_task_info&, const glsl_task_info&) = default;
};

// The macro that selects one task of a source holding several: "QD_TASK_<entry>". Each
// task's code sits in #ifdef QD_TASK_<entry> ... #endif and is compiled on its own.
QD_FUNC std::string glsl_task_macro(std::string_view entry);

// The marker lines of a task: "//@qd_task <entry> <workgroup> parallel|serial <sites>",
// then one "//@qd_print <site> <pieces>" per print site (text pieces hex-encoded).
QD_FUNC std::string glsl_task_markers(const glsl_task_info& task);

// Every task marked in `source`, in order; a malformed marker is a qd::internal_error.
QD_FUNC std::vector<glsl_task_info> glsl_tasks_in(std::string_view source);

}  // namespace qd::inline v0::codegen

#ifdef QD_HEADER_ONLY
#include "quadrants/codegen/glsl_task_info-inl.hpp"
#endif
