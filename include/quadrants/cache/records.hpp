// What the cache stores besides code: the launch metadata of a whole kernel, of one
// offload and of a split variant (entry names, task kinds, effects), as validated bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/cache/key.hpp"

namespace qd::inline v0::cache {

struct task_record {
  std::string entry;  // the module's entry point
  bool parallel = false;
  bool has_print = false;
  std::vector<std::int32_t> params;  // the task's parameters, as the kernel numbers them (whole kernels)
                                     // or in first-use order (offloads: identity)
  friend bool operator==(const task_record&, const task_record&) = default;
};

// A whole kernel: its module and one task per serial run or loop, in order.
struct kernel_record {
  key module;
  std::uint32_t constructs = 0;
  bool needs_temporaries = false;
  std::vector<task_record> tasks;
  friend bool operator==(const kernel_record&, const kernel_record&) = default;
};

// One construct compiled on its own; identical constructs share it.
struct offload_record {
  key module;
  task_record task;
};

// A split kernel variant as one record (entry_kind::variant), so that a warm start reads
// one file per kernel instead of one per construct and skips lowering: per task, in the
// plan's order, the offload it resolved to, the module holding its code, the offload
// record's task metadata, and what the launch needs from the lowered task. Written after
// the offloads resolved; keyed by cache::variant_key (the traced IR and everything that
// decides the plan and the lowering), so it never outlives what it describes.
struct variant_task {
  key offload;
  key module;
  task_record task;
  bool draws_random = false;
  std::uint32_t block_dim = 0;
  std::vector<std::int32_t> param_map;  // kernel parameter of each of the task's parameters
  friend bool operator==(const variant_task&, const variant_task&) = default;
};
struct variant_record {
  std::vector<variant_task> tasks;
  std::uint64_t reduction_scratch = 0;  // bytes after the temporaries (deterministic GPU reductions)
  friend bool operator==(const variant_record&, const variant_record&) = default;
};

// What a compiled kernel is made of, for `qd-cache explain`: written next to its
// records when a process compiles one of its variants (one entry per variant, so that a
// print_ir or coverage run adds its whole-kernel records to the split's). Never read by a launch.
struct explain_record {
  std::string kernel;         // the kernel's name
  std::string text;           // kernel.explain()
  std::string dot;            // kernel.dot()
  std::vector<key> keys;      // its kernel record (whole) or offload records (split)
  std::string variant;        // "whole", "split", "coverage" (whole, with kernel_coverage's probes)
  key explained;              // the kernel (cache::explained_kernel): the entries of its variants share it
  std::uint64_t written = 0;  // when, in nanoseconds since 1970: the newest variant's text is shown
  friend bool operator==(const explain_record&, const explain_record&) = default;
};

QD_FUNC std::vector<std::byte> encode(const kernel_record& r);
QD_FUNC std::vector<std::byte> encode(const offload_record& r);
QD_FUNC std::vector<std::byte> encode(const explain_record& r);
QD_FUNC std::vector<std::byte> encode(const variant_record& r);
// Malformed bytes give nullopt, never a partial record.
QD_FUNC std::optional<kernel_record> decode_kernel_record(std::span<const std::byte> bytes);
QD_FUNC std::optional<offload_record> decode_offload_record(std::span<const std::byte> bytes);
QD_FUNC std::optional<explain_record> decode_explain_record(std::span<const std::byte> bytes);
QD_FUNC std::optional<variant_record> decode_variant_record(std::span<const std::byte> bytes);

}  // namespace qd::inline v0::cache

#ifdef QD_HEADER_ONLY
#include "quadrants/cache/records-inl.hpp"
#endif
