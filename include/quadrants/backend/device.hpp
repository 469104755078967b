// The interface every backend implements for the runtime: memory, its build (lowered
// tasks to loadable code: emit, compile, load), and launching one task.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quadrants/backend/loaded_module.hpp"
#include "quadrants/base/api.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/limits.hpp"

namespace qd::inline v0::codegen {
struct lowered_task;
struct emit_options;
}  // namespace qd::inline v0::codegen

namespace qd::inline v0::backend {

// The array descriptor generated code sees (qd_array in the preludes).
struct array_abi {
  void* data = nullptr;
  void* grad = nullptr;
  std::int64_t shape[limits::max_ndim] = {0, 0, 0, 0};
};

class launch_queue;

// Everything one task launch needs, in task-parameter order.
struct launch_context {
  const array_abi* arrays = nullptr;
  const std::uint64_t* scalars = nullptr;
  std::size_t param_count = 0;
  unsigned char* temps = nullptr;  // device memory, 8-byte slots
  std::uint64_t rng_stream = 0;
  std::int64_t* error = nullptr;  // host [flag, param, dim, index, extent], filled after the launch
  bool check_errors = false;      // bounds checks are on: the backend must fill `error` before returning
  bool wide_bounds = false;       // a loop bound may not fit i32: a GPU must bring its error record back too
  unsigned block_dim = 0;         // a parallel task's GPU threads per block (qd::loop_config); 0: the default
  launch_queue* queue = nullptr;  // not null: launch there (a recording: record it, do not run it)
};

// Where launches go other than the default queue, opaque to the runtime and released by
// destroying it: a recording (a CUDA or HIP graph, replayed as one submission) or a fork
// branch's stream.
class launch_queue {
 public:
  virtual ~launch_queue() = default;
};

// A program to build: its tasks in order, their entry points, and its text (program()).
struct program_source {
  std::span<const codegen::lowered_task* const> tasks;
  std::span<const std::string> entries;
  std::string_view text;
};

// What a build made: the bytes the cache stores and loads again (empty: nothing worth
// storing, as for an interpreter), and the module ready to launch.
struct built_program {
  std::vector<std::byte> binary;
  std::unique_ptr<loaded_module> module;
};

// What the runtime needs to know about a backend, declared by the backend itself,
// so that the runtime branches on data and a new backend touches no runtime code.
struct device_traits {
  bool splits_by_default = false;     // per-offload caching is the default (CUDA and AMD GPUs)
  bool concurrent_compile = true;     // compile() may run on several threads at once (hipRTC cannot)
  bool always_checks_bounds = false;  // checks every access whatever check_out_of_bound says
  bool concurrent_launches = false;   // launch() may run on several host threads at once (concurrent
                                      // regions run on threads; else one after the other)
  bool records_launches = false;      // begin_recording / end_recording / replay: device graphs
  bool device_loops = false;          // begin_loop_recording: a do_while runs on the device (CUDA 12.3+:
                                      // a conditional WHILE node), no flag read back per pass
  bool branch_queues = false;         // make_branch_queue / fork / join: fork branches on streams of their own
  bool wide_offsets = false;          // element offsets are 64-bit in every variant (HIP's prelude): an
                                      // array of 2^31 elements or more needs no variant of its own
};

class device {
 public:
  virtual ~device() = default;
  virtual std::string_view name() const = 0;  // "cpu", "cuda", ...
  virtual device_traits traits() const = 0;
  // What compiled code depends on, for cache keys: the target and the compiler.
  // compiler_identity must not load or run the compiler: a warm process never does.
  virtual std::string target() const = 0;
  virtual std::string compiler_identity() const = 0;
  virtual std::string code_options() const = 0;

  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* p) noexcept = 0;
  virtual void copy_from_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes) = 0;

  // The build: lowered tasks to loadable code. The runtime emits each task, keys it
  // (cache/key_recipe.hpp), and on a miss builds a program of several tasks. The defaults
  // (backend/device-inl.hpp) are the C++ dialects': codegen::emit_task bodies after
  // prelude(), compiled by compile() and loaded by load(). A backend with another source
  // language overrides emit() and program(); one that builds no binary overrides build().
  //
  // One task's code, its entry point named `entry`: what a cache key covers with its IR.
  QD_FUNC virtual std::string emit(const codegen::lowered_task& t, std::string_view entry,
                                   const codegen::emit_options& options) const;
  // The text of a program of tasks whose code is `codes`, in order: what a module key
  // covers, and what print_ir writes.
  QD_FUNC virtual std::string program(std::span<const std::string> codes) const;
  // Builds `source`: compile(source.text) and load() by default.
  QD_FUNC virtual built_program build(const program_source& source, std::string_view what);

  // Text that precedes the generated task code (a cache key covers it).
  virtual std::string prelude() const = 0;
  virtual std::vector<std::byte> compile(std::string_view source, std::string_view what) = 0;
  virtual std::unique_ptr<loaded_module> load(std::span<const std::byte> binary, std::string_view what) = 0;
  virtual void launch(void* entry, bool parallel, const launch_context& ctx) = 0;

  // Device graphs (traits().records_launches; docs/graphs.md). Launches whose context
  // names the recording are recorded into it, in order, instead of run; end_recording
  // makes it replayable; replay submits it after the work already queued, ordered like
  // a launch. The recorded launches keep the arguments they were recorded with.
  virtual std::unique_ptr<launch_queue> begin_recording() {
    throw internal_error("begin_recording called on a backend without device graphs");
  }
  // A recording whose launches are the body of a loop: on replay the body runs, then
  // again while the 0-d i32 at `flag` (device memory) is non-zero (traits().device_loops).
  virtual std::unique_ptr<launch_queue> begin_loop_recording(const void* flag) {
    (void)flag;
    throw internal_error("begin_loop_recording called on a backend without device loops");
  }
  virtual void end_recording(launch_queue& r) {
    (void)r;
    throw internal_error("end_recording called on a backend without device graphs");
  }
  virtual void replay(launch_queue& r) {
    (void)r;
    throw internal_error("replay called on a backend without device graphs");
  }
  // New arguments for a recording in place, without recording it again: after
  // begin_update (false: this recording cannot be updated), launches whose context names
  // it (or a branch queue forked from it) give its recorded launches their new parameters,
  // one by one in the order they were recorded, instead of recording or running;
  // end_update says whether every recorded launch got its own entry point's parameters
  // (false: the recording is partly updated and must be recorded again).
  virtual bool begin_update(launch_queue& r) {
    (void)r;
    return false;
  }
  virtual bool end_update(launch_queue& r) {
    (void)r;
    return false;
  }

  // Fork branches on queues of their own (traits().branch_queues): after fork, launches
  // on each branch queue start after the work queued on `origin` (null: the default
  // queue; or a recording, which then records the branches as parallel paths); after
  // join, work queued on `origin` starts after theirs. The branches run at once.
  virtual std::unique_ptr<launch_queue> make_branch_queue() {
    throw internal_error("make_branch_queue called on a backend without branch queues");
  }
  virtual void fork(launch_queue* origin, std::span<launch_queue* const> branches) {
    (void)origin;
    (void)branches;
    throw internal_error("fork called on a backend without branch queues");
  }
  virtual void join(launch_queue* origin, std::span<launch_queue* const> branches) {
    (void)origin;
    (void)branches;
    throw internal_error("join called on a backend without branch queues");
  }
};

}  // namespace qd::inline v0::backend

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/device-inl.hpp"
#endif
