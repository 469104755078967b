// The interface every backend implements for the runtime: memory, compiling a
// generated translation unit, loading it, and launching one task.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quadrants/base/error.hpp"
#include "quadrants/codegen/lower.hpp"

namespace qd::backend {

// The array descriptor generated code sees (qd_array in the preludes).
struct array_abi {
  void* data = nullptr;
  void* grad = nullptr;
  std::int64_t shape[4] = {0, 0, 0, 0};
};

// Everything one task launch needs, in task-parameter order.
struct launch_context {
  const array_abi* arrays = nullptr;
  const std::uint64_t* scalars = nullptr;
  std::size_t param_count = 0;
  unsigned char* temps = nullptr;      // device memory, 8-byte slots
  std::uint64_t rng_stream = 0;
  std::int64_t* error = nullptr;       // host [flag, param, dim, index, extent], filled after the launch
  bool check_errors = false;           // bounds checks are on: the backend must fill `error` before returning
  bool wide_bounds = false;            // a loop bound may not fit i32: a GPU must bring its error record back too
};

class loaded_module {
 public:
  virtual ~loaded_module() = default;
  virtual void* entry(const std::string& name) const = 0;
};

class device {
 public:
  virtual ~device() = default;
  virtual std::string_view name() const = 0;  // "cpu", "cuda", ...
  // What compiled code depends on, for cache keys: the target and the compiler.
  // compiler_identity must not load or run the compiler: a warm process never does.
  virtual std::string target() const = 0;
  virtual std::string compiler_identity() const = 0;
  virtual std::string code_options() const = 0;

  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* p) noexcept = 0;
  virtual void copy_from_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes) = 0;

  // Source text that precedes the generated task bodies.
  virtual std::string prelude() const = 0;
  virtual std::vector<std::byte> compile(std::string_view source, std::string_view what) = 0;
  virtual std::unique_ptr<loaded_module> load(std::span<const std::byte> binary, std::string_view what) = 0;
  // Whether compile() runs concurrently when called from several threads (hipRTC
  // does not): if not, misses are not spread over several programs.
  virtual bool compiles_concurrently() const { return true; }

  // A backend that runs the lowered IR itself (the reference interpreter) instead
  // of compiling source: the runtime hands it the tasks, named by `entries`, and
  // caches nothing on disk for it.
  virtual bool runs_ir() const { return false; }
  virtual std::unique_ptr<loaded_module> load_ir(const std::vector<codegen::lowered_task>& tasks,
                                                 const std::vector<std::string>& entries) {
    (void)tasks;
    (void)entries;
    throw internal_error("load_ir called on a backend that compiles source");
  }
  virtual void launch(void* entry, bool parallel, const launch_context& ctx) = 0;
};

}  // namespace qd::backend
