// The reference interpreter: runs one lowered task's IR node by node with the semantics
// of the generated C++ (codegen/prelude.hpp), deterministically and always bounds-checked.
#pragma once

#include <cstdint>
#include <vector>

#include "quadrants/backend/device.hpp"
#include "quadrants/codegen/lower.hpp"
#include "quadrants/codegen/reductions.hpp"

namespace qd::inline v0::backend::reference {

// One lowered task, validated once (operand kinds and types, block layout) and run
// any number of times; ill-typed IR is a qd::internal_error here, not a wrong result.
//
// A parallel task runs its iterations one after another, in row-major order, on the
// calling thread. Each iteration evaluates the task's prologue again, as each GPU
// thread does: a split whose recomputed values are only right when the prologue
// runs once before the loop therefore gives different results here.
//
// Reductions into global temporaries accumulate as the CPU backend's do: in its
// fixed chunks (codegen/reductions.hpp), combined in its pairwise tree, so float sums
// agree bitwise with the CPU for any number of CPU threads.
//
// Every index is checked. With ctx.check_errors the first violation goes to the
// error record and the access is skipped (a load gives 0), as compiled code does;
// without it the first violation throws qd::user_error.
class task_interpreter {
 public:
  QD_FUNC explicit task_interpreter(codegen::lowered_task task);

  QD_FUNC void run(const launch_context& ctx) const;
  const codegen::lowered_task& task() const noexcept { return task_; }

  // A temp_atomic the compiled backends accumulate per chunk (codegen/reductions.hpp).
  using reduction = codegen::chunk_reduction;

 private:
  codegen::lowered_task task_;
  ir::id loop_ = ir::none;    // a parallel task's loop: the last top-level node
  bool uses_random_ = false;  // the serial task, or the parallel task's loop body
  std::vector<reduction> reductions_;
  std::vector<std::int32_t> reduction_of_;  // per node: its reduction, or -1
};

}  // namespace qd::inline v0::backend::reference

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/reference/interpreter-inl.hpp"
#endif
