// The prelude CUDA and HIP share, and its ABI: one launch per task with the task's
// parameters by value (gpu_task_params, checked member by member in every compile),
// grid-stride loops, reductions, atomics. Each dialect defines QD_FN, QD_OFFSET and
// QD_GRID_CONSTANT ahead of it (backend/cuda/prelude.hpp, backend/amdgpu/prelude.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "quadrants/backend/abi_check.hpp"
#include "quadrants/backend/gpu_task_params.hpp"
#include "quadrants/base/limits.hpp"
#include "quadrants/codegen/prelude.hpp"
#include "quadrants/codegen/reductions.hpp"

namespace qd::inline v0::backend {

inline constexpr std::string_view gpu_prelude_source = R"QD(
/* The task's parameters travel by value in the kernel's parameter space (3608 bytes). */
struct qd_ctx {
  qd_array arrays[QD_MAX_PARAMS];
  qd_u64 scalars[QD_MAX_PARAMS];
  unsigned char* temps;
  qd_u64 rng_stream;
  qd_i64* error;
};
#define qd_printf printf
QD_FN qd_f32 qd_f32_from_bits(qd_u32 b) { return __int_as_float((int)b); }
QD_FN qd_f64 qd_f64_from_bits(qd_u64 b) { return __longlong_as_double((long long)b); }
QD_FN qd_u32 qd_f32_bits(qd_f32 f) { return (qd_u32)__float_as_int(f); }
QD_FN qd_u64 qd_f64_bits(qd_f64 f) { return (qd_u64)__double_as_longlong(f); }
#define QD_MATH1(N)                                                            \
  QD_FN qd_f32 qd_##N(qd_f32 x) { return N##f(x); }                          \
  QD_FN qd_f64 qd_##N(qd_f64 x) { return N(x); }
#define QD_MATH2(N)                                                            \
  QD_FN qd_f32 qd_##N(qd_f32 a, qd_f32 b) { return N##f(a, b); }             \
  QD_FN qd_f64 qd_##N(qd_f64 a, qd_f64 b) { return N(a, b); }
QD_FOR_MATH1(QD_MATH1)
QD_FOR_MATH2(QD_MATH2)
#undef QD_MATH1
#undef QD_MATH2
QD_FN qd_f32 qd_abs(qd_f32 x) { return fabsf(x); }
QD_FN qd_f64 qd_abs(qd_f64 x) { return fabs(x); }
QD_FN qd_f32 qd_fma(qd_f32 a, qd_f32 b, qd_f32 c) { return fmaf(a, b, c); }
QD_FN qd_f64 qd_fma(qd_f64 a, qd_f64 b, qd_f64 c) { return fma(a, b, c); }
/* An array extent's low half (extents are below 2^31; GPUs are little-endian), loaded as 32
   bits: the compilers then see a 32x32->64-bit multiply in the offsets. */
QD_FN qd_i32 qd_extent32(const qd_i64* e) { qd_i32 v; memcpy(&v, e, 4); return v; }
/* An element offset where every array has fewer than 2^31 elements (the dialect's choice). */
typedef QD_OFFSET qd_off;
QD_FN qd_i32 qd_popc32(qd_u32 x) { return __popc(x); }
QD_FN qd_i32 qd_popc64(qd_u64 x) { return __popcll(x); }
QD_FN qd_i32 qd_clz32(qd_u32 x) { return __clz((int)x); }
QD_FN qd_i32 qd_clz64(qd_u64 x) { return __clzll((long long)x); }
QD_FN qd_i32 qd_ffs32(qd_u32 x) { return __ffs((int)x); }
QD_FN qd_i32 qd_ffs64(qd_u64 x) { return __ffsll((long long)x); }
/* The first out-of-range access wins the device-side error record. */
QD_FN void qd_report_out_of_bounds(const qd_ctx* ctx, qd_i32 param, qd_i32 dim, qd_i64 index, qd_i64 extent) {
  if (atomicCAS((unsigned long long*)ctx->error, 0ull, 1ull) == 0ull) {
    ctx->error[1] = param; ctx->error[2] = dim; ctx->error[3] = index; ctx->error[4] = extent;
  }
}
/* A loop bound of a type wider than qd_i32 (error code 2 when it does not fit; the
   host reads the record when check_out_of_bound is on). */
QD_FN qd_i32 qd_bound(const qd_ctx* ctx, qd_i64 value, qd_i32 on_overflow) {
  if (value >= -2147483647 - 1 && value <= 2147483647) return (qd_i32)value;
  if (atomicCAS((unsigned long long*)ctx->error, 0ull, 2ull) == 0ull) ctx->error[3] = value;
  return on_overflow;
}
/* One iteration at linear index qd_k of a task's row-major space (the deterministic
   reductions' chunks; a plain loop walks with qd_cursor, below). */
#define QD_GPU_ITERATION(entry, RANK, qd_k)                                                                \
  if (RANK == 1) {                                                                                         \
    entry##_body(ctx, qd_f, &qd_red, (qd_i32)(qd_f.qd_base + qd_k), 0, 0, 0);                              \
  } else {                                                                                                 \
    qd_i32 qd_ix[QD_MAX_NDIM] = {0, 0, 0, 0};                                                              \
    if (qd_f.qd_count <= 0xffffffffll) { /* 32-bit division where the space allows it */                  \
      qd_u32 qd_r = (qd_u32)qd_k;                                                                          \
      for (int qd_d = RANK - 1; qd_d > 0; --qd_d) {                                                        \
        const qd_u32 qd_n = (qd_u32)qd_f.qd_dims[qd_d];                                                    \
        qd_ix[qd_d] = (qd_i32)(qd_r % qd_n);                                                               \
        qd_r /= qd_n;                                                                                      \
      }                                                                                                    \
      qd_ix[0] = (qd_i32)qd_r;                                                                             \
    } else {                                                                                               \
      qd_i64 qd_r = qd_k;                                                                                  \
      for (int qd_d = RANK - 1; qd_d > 0; --qd_d) {                                                        \
        qd_ix[qd_d] = (qd_i32)(qd_r % qd_f.qd_dims[qd_d]);                                                 \
        qd_r /= qd_f.qd_dims[qd_d];                                                                        \
      }                                                                                                    \
      qd_ix[0] = (qd_i32)qd_r;                                                                             \
    }                                                                                                      \
    entry##_body(ctx, qd_f, &qd_red, qd_ix[0], qd_ix[1], qd_ix[2], qd_ix[3]);                              \
  }
/* A thread's walk over a parallel task's row-major space of rank >= 2: its first index from
   its thread number, then the grid's stride added digit by digit with a carry. All 32-bit,
   no division in the loop, no bound on the space's size (indices are below 2^31, the
   stride below 2^31: the host launches at most 2^31 threads). */
template <int RANK> struct qd_cursor {
  qd_u32 n[QD_MAX_NDIM], ix[QD_MAX_NDIM], step[QD_MAX_NDIM];
  QD_FN qd_cursor(const qd_i64* dims, qd_u32 first, qd_u32 stride) {
    for (int d = 0; d < QD_MAX_NDIM; ++d) n[d] = d < RANK ? (qd_u32)dims[d] : 1u, ix[d] = step[d] = 0;
    for (int d = RANK - 1; d > 0; --d) {
      ix[d] = first % n[d], first /= n[d];
      step[d] = stride % n[d], stride /= n[d];
    }
    ix[0] = first, step[0] = stride;
  }
  /* The thread's next index; false past the space. */
  QD_FN bool next() {
    qd_u32 carry = 0;
    for (int d = RANK - 1; d > 0; --d) {
      ix[d] += step[d] + carry;  /* < 2 n[d] */
      carry = ix[d] >= n[d];
      if (carry) ix[d] -= n[d];
    }
    ix[0] += step[0] + carry;
    return ix[0] < n[0];
  }
};
/* Whether a space of rank >= 2 may hold iterations: its extents after the first are
   positive (the cursor divides by them; a thread's first index then says whether it has any). */
template <int RANK> QD_FN bool qd_rows_nonempty(const qd_i64* dims) {
  bool ok = true;
  for (int d = 1; d < RANK; ++d) ok = ok && (qd_i32)dims[d] > 0;
  return ok;
}
/* One launch per task: every thread evaluates the prologue, then grid-strides over
   [0, qd_count) in 32-bit arithmetic (rank 1: qd_k + stride is never formed past the
   count, at most 2^32 - 1 with i32 bounds); a thread reduces into its own accumulators
   and flushes them once, if it ran any iteration; a thread with none returns first. Indices
   are row-major. */
/* BLOCK: the threads per block it is launched with (qd::loop_config{.block_dim}). */
#define QD_GPU_TASK_BEGIN(entry, RANK, BLOCK)                                                              \
  extern "C" __global__ void __launch_bounds__(BLOCK) entry(const QD_GRID_CONSTANT qd_ctx qd_c) {        \
    const qd_ctx* ctx = &qd_c;                                                                             \
    entry##_frame qd_f;                                                                                    \
    entry##_prologue(ctx, &qd_f);                                                                          \
    const qd_u32 qd_t = blockIdx.x * blockDim.x + threadIdx.x;                                             \
    if (RANK == 1 ? qd_t >= (qd_u32)qd_f.qd_count : !qd_rows_nonempty<RANK>(qd_f.qd_dims)) return;       \
    const qd_u32 qd_stride = blockDim.x * gridDim.x;                                                       \
    qd_cursor<RANK> qd_at(qd_f.qd_dims, qd_t, qd_stride); /* rank 1: unused */                            \
    if (RANK > 1 && (qd_i32)qd_at.ix[0] >= (qd_i32)qd_f.qd_dims[0]) return;
#define QD_PARALLEL_TASK_BLOCK(entry, RANK, BLOCK)                                                         \
  QD_GPU_TASK_BEGIN(entry, RANK, BLOCK)                                                                    \
    entry##_red qd_red;                                                                                    \
    entry##_red_init(&qd_red);                                                                             \
    if (RANK == 1) {                                                                                       \
      const qd_u32 qd_n = (qd_u32)qd_f.qd_count;                                                           \
      const qd_u32 qd_last = qd_n > qd_stride ? qd_n - qd_stride : 0u;                                     \
      /* Not unrolled: NVVM's 4x unrolling doubles ptxas's time per construct. */                         \
      _Pragma("unroll 1") for (qd_u32 qd_k = qd_t;; qd_k += qd_stride) {                                   \
        entry##_body(ctx, qd_f, &qd_red, (qd_i32)((qd_u32)qd_f.qd_base + qd_k), 0, 0, 0);                  \
        if (qd_k >= qd_last) break;                                                                        \
      }                                                                                                    \
    } else {                                                                                               \
      _Pragma("unroll 1") do {                                                                             \
        entry##_body(ctx, qd_f, &qd_red, (qd_i32)qd_at.ix[0], (qd_i32)qd_at.ix[1], (qd_i32)qd_at.ix[2],    \
                     (qd_i32)qd_at.ix[3]);                                                                 \
      } while (qd_at.next());                                                                              \
    }                                                                                                      \
    entry##_red_flush(ctx, &qd_red);                                                                       \
  }
/* A loop without reductions or atomic updates: the emitter writes its body between
   QD_PARALLEL_BEGIN(entry, RANK, BLOCK) and QD_PARALLEL_END(entry, RANK, NESTED), straight into
   the thread's grid-stride loop above (the same walk, without a function per iteration),
   the indices in qd_i0..qd_i3; `goto qd_next` continues. */
#define QD_PARALLEL_BEGIN(entry, RANK, BLOCK)                                                              \
  QD_GPU_TASK_BEGIN(entry, RANK, BLOCK)                                                                    \
    QD_PARALLEL_LOOP_##RANK(RANK)
#define QD_PARALLEL_LOOP_1(RANK)                                                                           \
  const qd_u32 qd_last = (qd_u32)qd_f.qd_count > qd_stride ? (qd_u32)qd_f.qd_count - qd_stride : 0u;      \
  _Pragma("unroll 1") for (qd_u32 qd_k = qd_t;; qd_k += qd_stride) {                                       \
    const qd_i32 qd_i0 = (qd_i32)((qd_u32)qd_f.qd_base + qd_k), qd_i1 = 0, qd_i2 = 0, qd_i3 = 0;            \
    {
#define QD_PARALLEL_LOOP_N(RANK)                                                                           \
  _Pragma("unroll 1") do {                                                                                 \
    const qd_i32 qd_i0 = (qd_i32)qd_at.ix[0], qd_i1 = (qd_i32)qd_at.ix[1], qd_i2 = (qd_i32)qd_at.ix[2],    \
                 qd_i3 = (qd_i32)qd_at.ix[3];                                                              \
    {
#define QD_PARALLEL_LOOP_2 QD_PARALLEL_LOOP_N
#define QD_PARALLEL_LOOP_3 QD_PARALLEL_LOOP_N
#define QD_PARALLEL_LOOP_4 QD_PARALLEL_LOOP_N
#define QD_PARALLEL_END(entry, RANK, NESTED) QD_PARALLEL_CLOSE_##RANK
#define QD_PARALLEL_CLOSE_1 } qd_next: if (qd_k >= qd_last) break; } }
#define QD_PARALLEL_CLOSE_2 } qd_next:; } while (qd_at.next()); }
#define QD_PARALLEL_CLOSE_3 QD_PARALLEL_CLOSE_2
#define QD_PARALLEL_CLOSE_4 QD_PARALLEL_CLOSE_2
/* A loop with reductions into top-level variables. DET 0: as any loop (each thread
   flushes its accumulators with atomics: the order varies from run to run). DET 1
   (deterministic_reductions): fixed chunks of the space (their size a function of the
   count), one block per chunk at a time, its threads' accumulators combined in a fixed
   tree in shared memory; each chunk's partial goes to the scratch region after the global
   temporaries (at offset SCRATCH: a ticket, then the partials), and the last block to
   finish combines them in a fixed pairwise tree and flushes. Same bits run to run. */
QD_FN qd_i64 qd_reduction_chunk_size(qd_i64 count, qd_i64 max_chunks, qd_i64 min_chunk) {
  const qd_i64 even = (count + max_chunks - 1) / max_chunks;
  return even > min_chunk ? even : min_chunk;
}
/* Many threads update at once on a GPU: atomic updates stay atomic. */
#define QD_PLAIN(frame) 0
#define QD_PRIVATE_SCATTER 0 /* native atomics: no chunk-private copies (the CPU's) */
#define QD_PARALLEL_SCATTER_TASK(entry, RANK, BLOCK, NESTED, PRIVATE) QD_PARALLEL_TASK_BLOCK(entry, RANK, BLOCK)
/* CHUNK_MIN (heavy iterations on the CPU) does not change the GPU's chunks. */
#define QD_PARALLEL_REDUCE_TASK(entry, RANK, BLOCK, DET, SCRATCH, CHUNK_MIN, SCATTER) QD_PARALLEL_REDUCE_TASK_##DET(entry, RANK, BLOCK, SCRATCH)
#define QD_PARALLEL_REDUCE_TASK_0(entry, RANK, BLOCK, SCRATCH) QD_PARALLEL_TASK_BLOCK(entry, RANK, BLOCK)
#define QD_PARALLEL_REDUCE_TASK_1(entry, RANK, BLOCK, SCRATCH)                                             \
  extern "C" __global__ void __launch_bounds__(BLOCK) entry(const QD_GRID_CONSTANT qd_ctx qd_c) {        \
    const qd_ctx* ctx = &qd_c;                                                                             \
    entry##_frame qd_f;                                                                                    \
    entry##_prologue(ctx, &qd_f);                                                                          \
    if (qd_f.qd_count <= 0) return;                                                                        \
    __shared__ entry##_red qd_block[BLOCK];                                                                \
    __shared__ int qd_last;                                                                                \
    unsigned char* qd_scratch = ctx->temps + QD_TEMP_BYTES + (SCRATCH);                                    \
    entry##_red* qd_parts = (entry##_red*)(qd_scratch + 64);                                               \
    const qd_i64 qd_size = qd_reduction_chunk_size(qd_f.qd_count, QD_GPU_REDUCTION_CHUNKS, QD_REDUCTION_CHUNK_MIN); \
    const qd_i64 qd_chunks = (qd_f.qd_count + qd_size - 1) / qd_size;                                      \
    const unsigned qd_t = threadIdx.x;                                                                     \
    for (qd_i64 qd_c = blockIdx.x; qd_c < qd_chunks; qd_c += gridDim.x) {                                  \
      entry##_red qd_red;                                                                                  \
      entry##_red_init(&qd_red);                                                                           \
      const qd_i64 qd_end = qd_f.qd_count - qd_c * qd_size < qd_size ? qd_f.qd_count : (qd_c + 1) * qd_size; \
      _Pragma("unroll 1") for (qd_i64 qd_k = qd_c * qd_size + qd_t; qd_k < qd_end; qd_k += blockDim.x) {  \
        QD_GPU_ITERATION(entry, RANK, qd_k)                                                                \
      }                                                                                                    \
      qd_block[qd_t] = qd_red;                                                                             \
      __syncthreads();                                                                                     \
      for (unsigned qd_w = 1; qd_w < blockDim.x; qd_w *= 2) {                                              \
        if (qd_t % (2 * qd_w) == 0 && qd_t + qd_w < blockDim.x) entry##_red_merge(&qd_block[qd_t], &qd_block[qd_t + qd_w]); \
        __syncthreads();                                                                                   \
      }                                                                                                    \
      if (qd_t == 0) qd_parts[qd_c] = qd_block[0];                                                         \
      __syncthreads();                                                                                     \
    }                                                                                                      \
    if (qd_t == 0) {                                                                                       \
      __threadfence();                                                                                     \
      qd_last = atomicAdd((unsigned int*)qd_scratch, 1u) == gridDim.x - 1;                                 \
    }                                                                                                      \
    __syncthreads();                                                                                       \
    if (!qd_last || qd_t != 0) return;                                                                     \
    __threadfence();                                                                                       \
    for (qd_i64 qd_w = 1; qd_w < qd_chunks; qd_w *= 2)                                                     \
      for (qd_i64 qd_i = 0; qd_i + qd_w < qd_chunks; qd_i += 2 * qd_w) {                                   \
        entry##_red qd_a, qd_b;                                                                            \
        entry##_red_load(&qd_a, &qd_parts[qd_i]);                                                          \
        entry##_red_load(&qd_b, &qd_parts[qd_i + qd_w]);                                                   \
        entry##_red_merge(&qd_a, &qd_b);                                                                   \
        qd_parts[qd_i] = qd_a;                                                                             \
      }                                                                                                    \
    entry##_red qd_total;                                                                                  \
    entry##_red_load(&qd_total, &qd_parts[0]);                                                             \
    entry##_red_flush(ctx, &qd_total);                                                                     \
    *(volatile unsigned int*)qd_scratch = 0u;                                                              \
  }
/* A serial task runs on the single thread of a one-thread launch. */
#define QD_SERIAL_TASK(entry)                                                                              \
  extern "C" __global__ void __launch_bounds__(QD_BLOCK) entry(const QD_GRID_CONSTANT qd_ctx qd_c) {     \
    entry##_run(&qd_c);                                                                                    \
  }
#define QD_SERIAL_SCATTER_TASK(entry)                                                                      \
  extern "C" __global__ void __launch_bounds__(QD_BLOCK) entry(const QD_GRID_CONSTANT qd_ctx qd_c) {     \
    entry##_run(&qd_c, 0);                                                                                 \
  }
)QD";

// Atomics, after the shared helpers (codegen/prelude.hpp) whose qd_rmw_* define what they
// store: native where CUDA and HIP both have the operation, else compare-and-swap loops.
inline constexpr std::string_view gpu_prelude_atomics = R"QD(
/* The word atomicCAS swaps for an element: its bits (32 and 64 bits), or the aligned
   32-bit word holding it (8 and 16 bits, f16: device allocations are rounded up to 8
   bytes, so that word is always mapped). */
QD_FN unsigned int qd_word(qd_i32 v) { return (unsigned int)v; }
QD_FN unsigned int qd_word(qd_u32 v) { return v; }
QD_FN unsigned int qd_word(qd_f32 v) { return qd_f32_bits(v); }
QD_FN unsigned long long qd_word(qd_i64 v) { return (unsigned long long)v; }
QD_FN unsigned long long qd_word(qd_u64 v) { return v; }
QD_FN unsigned long long qd_word(qd_f64 v) { return qd_f64_bits(v); }
QD_FN unsigned int qd_word(qd_u8 v) { return v; }
QD_FN unsigned int qd_word(qd_i8 v) { return (qd_u8)v; }
QD_FN unsigned int qd_word(qd_u16 v) { return v; }
QD_FN unsigned int qd_word(qd_i16 v) { return (qd_u16)v; }
QD_FN unsigned int qd_word(qd_f16 v) { return v.bits; }
template <class T, class W> QD_FN void qd_unword(T* v, W w) { *v = (T)w; }  /* integers: the low bits */
QD_FN void qd_unword(qd_f32* v, unsigned int w) { *v = qd_f32_from_bits(w); }
QD_FN void qd_unword(qd_f64* v, unsigned long long w) { *v = qd_f64_from_bits(w); }
QD_FN void qd_unword(qd_f16* v, unsigned int w) { v->bits = (qd_u16)w; }
/* qd_rmw<OP>(old, v, e) stored in place of old by compare-and-swap; returns old. Every
   operation a type has no native atomic for. */
template <int OP, class T> QD_FN T qd_cas_update(T* p, T v, T e) {
  if constexpr (sizeof(T) >= 4) {
    typedef decltype(qd_word(v)) W;
    W* qd_q = (W*)p;
    T qd_old;
    if constexpr (OP == 9) {  /* cas: one native compare-and-swap */
      qd_unword(&qd_old, atomicCAS(qd_q, qd_word(e), qd_word(v)));
      return qd_old;
    }
    W qd_seen = *(volatile W*)qd_q, qd_prev;
    do {
      qd_prev = qd_seen;
      qd_unword(&qd_old, qd_prev);
      qd_seen = atomicCAS(qd_q, qd_prev, qd_word(qd_rmw<OP>(qd_old, v, e)));
    } while (qd_seen != qd_prev);
    return qd_old;
  } else {
    unsigned int* qd_q = (unsigned int*)((unsigned long long)p & ~3ull);
    const unsigned int qd_shift = ((unsigned int)(unsigned long long)p & 3u) * 8u;
    const unsigned int qd_mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << qd_shift;
    unsigned int qd_seen = *(volatile unsigned int*)qd_q, qd_prev;
    T qd_old;
    do {
      qd_prev = qd_seen;
      qd_unword(&qd_old, (qd_prev & qd_mask) >> qd_shift);
      const unsigned int qd_new = qd_word(qd_rmw<OP>(qd_old, v, e));
      qd_seen = atomicCAS(qd_q, qd_prev, (qd_prev & ~qd_mask) | (qd_new << qd_shift));
    } while (qd_seen != qd_prev);
    return qd_old;
  }
}
/* Templates for what has no native atomic; the native overloads below are chosen first. */
template <class T> QD_FN T qd_atomic_add(T* p, T v) { return qd_cas_update<0>(p, v, v); }
template <class T> QD_FN T qd_atomic_sub(T* p, T v) { return qd_cas_update<1>(p, v, v); }
template <class T> QD_FN T qd_atomic_min(T* p, T v) { return qd_cas_update<2>(p, v, v); }
template <class T> QD_FN T qd_atomic_max(T* p, T v) { return qd_cas_update<3>(p, v, v); }
template <class T> QD_FN T qd_atomic_mul(T* p, T v) { return qd_cas_update<4>(p, v, v); }
template <class T> QD_FN T qd_atomic_bit_and(T* p, T v) { return qd_cas_update<5>(p, v, v); }
template <class T> QD_FN T qd_atomic_bit_or(T* p, T v) { return qd_cas_update<6>(p, v, v); }
template <class T> QD_FN T qd_atomic_bit_xor(T* p, T v) { return qd_cas_update<7>(p, v, v); }
template <class T> QD_FN T qd_atomic_exchange(T* p, T v) { return qd_cas_update<8>(p, v, v); }
template <class T> QD_FN T qd_atomic_cas(T* p, T v, T e) { return qd_cas_update<9>(p, v, e); }
/* Native where CUDA and HIP both have the operation for the type. */
#define QD_ATOMIC_NATIVE(T, W, ZERO)                                                                      \
  QD_FN T qd_atomic_add(T* p, T v) { return (T)atomicAdd((W*)p, (W)v); }                                  \
  QD_FN T qd_atomic_sub(T* p, T v) { return (T)atomicAdd((W*)p, (W)(ZERO - (W)v)); }                      \
  QD_FN T qd_atomic_bit_and(T* p, T v) { return (T)atomicAnd((W*)p, (W)v); }                               \
  QD_FN T qd_atomic_bit_or(T* p, T v) { return (T)atomicOr((W*)p, (W)v); }                                 \
  QD_FN T qd_atomic_bit_xor(T* p, T v) { return (T)atomicXor((W*)p, (W)v); }                               \
  QD_FN T qd_atomic_exchange(T* p, T v) { return (T)atomicExch((W*)p, (W)v); }
QD_ATOMIC_NATIVE(qd_i32, unsigned int, 0u)
QD_ATOMIC_NATIVE(qd_u32, unsigned int, 0u)
QD_ATOMIC_NATIVE(qd_i64, unsigned long long, 0ull)
QD_ATOMIC_NATIVE(qd_u64, unsigned long long, 0ull)
#undef QD_ATOMIC_NATIVE
QD_FN qd_i32 qd_atomic_min(qd_i32* p, qd_i32 v) { return atomicMin(p, v); }
QD_FN qd_i32 qd_atomic_max(qd_i32* p, qd_i32 v) { return atomicMax(p, v); }
QD_FN qd_u32 qd_atomic_min(qd_u32* p, qd_u32 v) { return atomicMin(p, v); }
QD_FN qd_u32 qd_atomic_max(qd_u32* p, qd_u32 v) { return atomicMax(p, v); }
QD_FN qd_f32 qd_atomic_add(qd_f32* p, qd_f32 v) { return atomicAdd(p, v); }
QD_FN qd_f32 qd_atomic_sub(qd_f32* p, qd_f32 v) { return atomicAdd(p, -v); }
QD_FN qd_f32 qd_atomic_exchange(qd_f32* p, qd_f32 v) { return atomicExch(p, v); }
QD_FN qd_f64 qd_atomic_add(qd_f64* p, qd_f64 v) { return atomicAdd(p, v); }
QD_FN qd_f64 qd_atomic_sub(qd_f64* p, qd_f64 v) { return atomicAdd(p, -v); }
)QD";

// Checks, in the generated code itself, that qd_ctx is laid out as gpu_task_params.
inline std::string gpu_abi_checks() {
  return array_abi_checks() + member_at("qd_ctx", "arrays", offsetof(gpu_task_params, arrays)) +
         member_at("qd_ctx", "scalars", offsetof(gpu_task_params, scalars)) +
         member_at("qd_ctx", "temps", offsetof(gpu_task_params, temps)) +
         member_at("qd_ctx", "rng_stream", offsetof(gpu_task_params, rng_stream)) +
         member_at("qd_ctx", "error", offsetof(gpu_task_params, error)) + size_is("qd_ctx", sizeof(gpu_task_params));
}

// A whole GPU translation unit's prelude: the dialect's definitions of QD_FN and
// QD_GRID_CONSTANT, its element offset type (QD_OFFSET: 64-bit with `wide_offsets`, else
// 32-bit), then everything shared. A launch runs gpu_threads_per_block threads per block
// (the host launches with the same number).
inline std::string gpu_translation_unit_prelude(std::string_view banner, std::string_view dialect, bool wide_offsets) {
  std::string s = "/* Quadrants generated code: ";
  s += banner;
  s += " */\n";
  s += dialect;
  s += wide_offsets ? "#define QD_OFFSET qd_i64\n" : "#define QD_OFFSET qd_i32\n";
  s += "#define QD_BLOCK " + std::to_string(limits::gpu_threads_per_block) + "\n";
  s += codegen::prelude_limits();
  s += codegen::reduction_prelude();
  s += "#define QD_TEMP_BYTES " +
       std::to_string(limits::temp_slot_count * static_cast<std::int64_t>(limits::temp_slot_bytes)) + "\n";
  s += codegen::prelude_types;
  s += gpu_prelude_source;
  s += codegen::prelude_helpers;
  s += gpu_prelude_atomics;
  s += gpu_abi_checks();
  return s;
}

}  // namespace qd::inline v0::backend
