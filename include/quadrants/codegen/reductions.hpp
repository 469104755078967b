// Which reductions of a parallel task accumulate privately and are combined at the end,
// and how: fixed-size chunks of the iteration space, each accumulated in order, combined
// in a fixed pairwise tree -- the same bits for any number of CPU threads (docs/dsl.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/ir/node.hpp"

namespace qd::inline v0::codegen {

struct chunk_reduction {
  std::int64_t slot = 0;  // the global temporary it combines into
  ir::atomic_op op = ir::atomic_op::add;
  dtype type = dtype::i32;
};

// The temp_atomics in the loop body `body` whose old value nothing uses, on slots the
// body never loads or stores, always with one op and type per slot: their slots, in
// order of first appearance. Any other atomic on a slot stays a real atomic.
QD_FUNC std::vector<chunk_reduction> find_chunk_reductions(const ir::function& fn, std::int32_t body);

// The index in `reductions` of the accumulator node `n` updates, or -1.
inline int reduction_index(const std::vector<chunk_reduction>& reductions, const ir::node& n) {
  if (n.code != ir::op::temp_atomic) return -1;
  for (std::size_t r = 0; r < reductions.size(); ++r)
    if (reductions[r].slot == n.imm) return static_cast<int>(r);
  return -1;
}

// The type a chunk accumulates in: f64 for an f32 sum (an f32 sum of 10^7 values then
// rounds once, at the end), the reduction's own type otherwise.
constexpr dtype accumulator_type(const chunk_reduction& r) {
  return r.type == dtype::f32 && (r.op == ir::atomic_op::add || r.op == ir::atomic_op::sub) ? dtype::f64 : r.type;
}

// The chunking of a reduction loop of `count` iterations: a function of the count alone,
// never of the thread count. The CPU and the reference use at most cpu_reduction_chunks
// chunks (their partials live on the launching thread's stack); a GPU with
// deterministic_reductions at most gpu_reduction_chunks (one block each at a time).
inline constexpr std::int64_t reduction_chunk_min = 2048;
// A loop whose body holds a loop of its own: its iterations are heavy, so a chunk may be one.
inline constexpr std::int64_t nested_reduction_chunk_min = 1;
inline constexpr std::int64_t cpu_reduction_chunks = 128;
// A chunk of a rank-1 loop on the CPU and the reference accumulates in this many lanes:
// iteration lo + j into lane j % 4 while j < the chunk's length rounded down to a multiple
// of 4, the rest into lane 0; then (l0 + l1) + (l2 + l3). Four independent chains of
// additions run at up to four times the speed of one (an f32 sum in f64 is bound by the
// latency of each addition otherwise). Loops over an ndrange use one lane.
inline constexpr std::int64_t reduction_lanes = 4;
static_assert(reduction_lanes == 4, "the CPU prelude's QD_REDUCE_LANES unrolls four lanes");
inline constexpr std::int64_t gpu_reduction_chunks = 512;
// A GPU task with deterministic reductions keeps each chunk's partial of each reduction in
// a scratch region after the global temporaries: at most this many reductions per loop.
inline constexpr std::int64_t gpu_deterministic_reductions_max = 16;
inline constexpr std::size_t gpu_reduction_scratch_bytes =
    static_cast<std::size_t>(gpu_reduction_chunks * gpu_deterministic_reductions_max) * 8 + 64;

constexpr std::int64_t reduction_chunk_size(std::int64_t count, std::int64_t max_chunks, std::int64_t min_chunk) {
  const std::int64_t even = (count + max_chunks - 1) / max_chunks;
  return even > min_chunk ? even : min_chunk;
}

// Whether the loop body `body` holds a loop (qd::range_for or qd::while_): then each
// iteration is heavy enough that the CPU spreads even a few iterations over its threads.
QD_FUNC bool has_nested_loop(const ir::function& fn, std::int32_t body);

// The constants above as the generated code's macros (first in every prelude that uses them).
inline std::string reduction_prelude() {
  return "#define QD_REDUCTION_CHUNK_MIN " + std::to_string(reduction_chunk_min) +
         "ll\n#define QD_NESTED_REDUCTION_CHUNK_MIN " + std::to_string(nested_reduction_chunk_min) +
         "ll\n#define QD_CPU_REDUCTION_CHUNKS " + std::to_string(cpu_reduction_chunks) +
         "\n#define QD_GPU_REDUCTION_CHUNKS " + std::to_string(gpu_reduction_chunks) +
         "\n#define QD_GPU_DETERMINISTIC_REDUCTIONS_MAX " + std::to_string(gpu_deterministic_reductions_max) + "\n";
}

}  // namespace qd::inline v0::codegen

#ifdef QD_HEADER_ONLY
#include "quadrants/codegen/reductions-inl.hpp"
#endif
