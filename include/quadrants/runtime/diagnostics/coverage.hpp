// Kernel line coverage (kernel_coverage / QD_KERNEL_COVERAGE=1): probes (one
// store of 1 each) record which source lines of a kernel ran and which way each qd::if_
// went; counts are merged (added) into an lcov tracefile when a program ends, at exit, and
// by qd::write_coverage(path).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/ir/node.hpp"

namespace qd::inline v0 {

// Merges the coverage counted so far (this program's kernels included) into the lcov
// tracefile at `path` (adding to the counts already there) and restarts the counts.
// Written through a temporary file and a rename; a qd::error when it cannot be written.
QD_FUNC void write_coverage(const std::string& path);

}  // namespace qd::inline v0

namespace qd::inline v0::backend {
class device;
}

namespace qd::inline v0::detail {

class program;

// One probe: a source line, or one direction of a qd::if_ (lcov BRDA).
struct coverage_probe {
  const char* file = nullptr;
  std::uint32_t line = 0;
  std::int32_t block = -1;  // a branch probe: the if_'s ordinal among the if_s on its line; -1: a line probe
  std::int32_t branch = 0;  // 0: the then-branch, 1: the else-branch
};

// `fn` with a probe before the first statement of each source line in every block and at
// the start of both branches of every if_; the probes store 1 (when still 0) into a new last parameter,
// an ndarray<u8, 1> with one element per probe (listed in `probes`, by slot).
QD_FUNC ir::function instrument_for_coverage(const ir::function& fn, std::vector<coverage_probe>& probes);

// A kernel's probe buffer on a program's device, zeroed; registered so that the program's
// end (qd::reset, qd::init, exit) or qd::write_coverage reads it back.
QD_FUNC void* coverage_buffer(program& p, std::shared_ptr<const std::vector<coverage_probe>> probes);

// Reads back and releases every probe buffer of `p` and merges the counts into
// QD_KERNEL_COVERAGE_FILE (default qd_kernel_coverage.info); called when a program ends.
QD_FUNC void end_program_coverage(program& p);

// The tracefile the counts go to by default.
QD_FUNC std::string default_coverage_file();

}  // namespace qd::inline v0::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/diagnostics/coverage-inl.hpp"
#endif
