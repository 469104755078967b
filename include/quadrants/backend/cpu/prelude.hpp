// The CPU backend's prelude and ABI: generated code's definitions for the host
// compiler (builtins, __atomic, entry points handing loops to the thread pool), and
// the C++ structs the runtime passes it, checked member by member in every compile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "quadrants/backend/abi_check.hpp"
#include "quadrants/backend/device.hpp"
#include "quadrants/codegen/prelude.hpp"
#include "quadrants/codegen/reductions.hpp"

namespace qd::inline v0::backend::cpu {

class thread_pool;

// qd_ctx and qd_cpu_runtime of the prelude below.
struct ctx_abi {
  const array_abi* arrays;
  const std::uint64_t* scalars;
  unsigned char* temps;
  std::uint64_t rng_stream;
  std::int64_t* error;
  const void* runtime;
};
using chunk_abi = void (*)(const void* frame, const ctx_abi* ctx, std::int64_t lo, std::int64_t hi);
struct runtime_abi {
  void (*parallel_for)(const ctx_abi* ctx, std::int64_t begin, std::int64_t end, chunk_abi chunk, const void* frame);
  void (*parallel_chunks)(const ctx_abi* ctx, std::int64_t count, chunk_abi chunk, const void* job);
  void (*parallel_for_nested)(const ctx_abi* ctx, std::int64_t begin, std::int64_t end, chunk_abi chunk,
                              const void* frame);
  // A task with atomic updates of array elements (backend/cpu/scatter_gate.hpp): 1 when it
  // may update plainly (it runs on this thread alone and holds the gate alone), else 0
  // (it holds the gate shared). `kind`: 0 parallel_for, 1 parallel_for_nested, 2 serial,
  // 3 never alone (chunked reductions).
  int (*scatter_begin)(const ctx_abi* ctx, std::int64_t count, int kind);
  void (*scatter_end)(const ctx_abi* ctx, int plain);
  thread_pool* pool;  // the runtime's own: generated code never reads it
};

inline constexpr std::string_view prelude_source = R"QD(
#define QD_FN static inline __attribute__((always_inline, unused))
struct qd_ctx {
  const qd_array* arrays;
  const qd_u64* scalars;
  unsigned char* temps;
  qd_u64 rng_stream;
  qd_i64* error;
  const void* runtime;
};
typedef void (*qd_chunk_fn)(const void* frame, const qd_ctx* ctx, qd_i64 lo, qd_i64 hi);
struct qd_cpu_runtime {
  void (*parallel_for)(const qd_ctx* ctx, qd_i64 begin, qd_i64 end, qd_chunk_fn chunk, const void* frame);
  /* chunk(job, ctx, c, c + 1) for every c in [0, count), spread over the threads. */
  void (*parallel_chunks)(const qd_ctx* ctx, qd_i64 count, qd_chunk_fn chunk, const void* job);
  /* parallel_for for heavy iterations: small chunks, inline only for one iteration. */
  void (*parallel_for_nested)(const qd_ctx* ctx, qd_i64 begin, qd_i64 end, qd_chunk_fn chunk, const void* frame);
  /* A task with atomic updates of array elements: 1 when it runs alone and may update
     plainly, else 0; kind 0 parallel_for, 1 nested, 2 serial, 3 never alone. */
  int (*scatter_begin)(const qd_ctx* ctx, qd_i64 count, int kind);
  void (*scatter_end)(const qd_ctx* ctx, int plain);
};
extern "C" int printf(const char*, ...);
#define qd_printf printf
QD_FN qd_f32 qd_f32_from_bits(qd_u32 b) { qd_f32 f; __builtin_memcpy(&f, &b, 4); return f; }
QD_FN qd_f64 qd_f64_from_bits(qd_u64 b) { qd_f64 f; __builtin_memcpy(&f, &b, 8); return f; }
QD_FN qd_u32 qd_f32_bits(qd_f32 f) { qd_u32 b; __builtin_memcpy(&b, &f, 4); return b; }
QD_FN qd_u64 qd_f64_bits(qd_f64 f) { qd_u64 b; __builtin_memcpy(&b, &f, 8); return b; }
/* An array extent (below 2^31) as 32 bits: a typed load, so that the compiler knows a float
   store cannot change it and keeps it in a register (read through memcpy, a byte-wise access
   any store may alias, it was reloaded and multiplied for every element: a 4x slower stencil). */
QD_FN qd_i32 qd_extent32(const qd_i64* e) { return (qd_i32)*e; }
/* An element offset where every array has fewer than 2^31 elements. */
typedef qd_i32 qd_off;
#define QD_MATH1(N)                                                            \
  QD_FN qd_f32 qd_##N(qd_f32 x) { return __builtin_##N##f(x); }                          \
  QD_FN qd_f64 qd_##N(qd_f64 x) { return __builtin_##N(x); }
#define QD_MATH2(N)                                                            \
  QD_FN qd_f32 qd_##N(qd_f32 a, qd_f32 b) { return __builtin_##N##f(a, b); }             \
  QD_FN qd_f64 qd_##N(qd_f64 a, qd_f64 b) { return __builtin_##N(a, b); }
QD_FOR_MATH1(QD_MATH1)
QD_FOR_MATH2(QD_MATH2)
#undef QD_MATH1
#undef QD_MATH2
QD_FN qd_f32 qd_abs(qd_f32 x) { return __builtin_fabsf(x); }
QD_FN qd_f64 qd_abs(qd_f64 x) { return __builtin_fabs(x); }
QD_FN qd_f32 qd_fma(qd_f32 a, qd_f32 b, qd_f32 c) { return __builtin_fmaf(a, b, c); }
QD_FN qd_f64 qd_fma(qd_f64 a, qd_f64 b, qd_f64 c) { return __builtin_fma(a, b, c); }
QD_FN qd_i32 qd_popc32(qd_u32 x) { return __builtin_popcount(x); }
QD_FN qd_i32 qd_popc64(qd_u64 x) { return __builtin_popcountll(x); }
QD_FN qd_i32 qd_clz32(qd_u32 x) { return x ? __builtin_clz(x) : 32; }
QD_FN qd_i32 qd_clz64(qd_u64 x) { return x ? __builtin_clzll(x) : 64; }
QD_FN qd_i32 qd_ffs32(qd_u32 x) { return __builtin_ffs((int)x); }
QD_FN qd_i32 qd_ffs64(qd_u64 x) { return __builtin_ffsll((long long)x); }
QD_FN void qd_report_out_of_bounds(const qd_ctx* ctx, qd_i32 param, qd_i32 dim, qd_i64 index, qd_i64 extent) {
  qd_i64 expected = 0;
  if (__atomic_compare_exchange_n(&ctx->error[0], &expected, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
    ctx->error[1] = param; ctx->error[2] = dim; ctx->error[3] = index; ctx->error[4] = extent;
  }
}
/* A loop bound of a type wider than qd_i32: its value, or else the launch fails
   (error code 2) and the loop gets on_overflow, which leaves it empty. */
QD_FN qd_i32 qd_bound(const qd_ctx* ctx, qd_i64 value, qd_i32 on_overflow) {
  if (value >= -2147483647 - 1 && value <= 2147483647) return (qd_i32)value;
  qd_i64 expected = 0;
  if (__atomic_compare_exchange_n(&ctx->error[0], &expected, 2, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    ctx->error[3] = value;
  return on_overflow;
}
#define QD_EXPORT extern "C" __attribute__((visibility("default")))
/* Rank 2 and up, [qd_lo, qd_hi) of qd_f's space row by row: one division per row, then a plain
   loop over the last dimension, the indices in qd_ix; opens two loops for the caller to close. */
#define QD_ROWS_BEGIN(RANK)                                                                                \
  const qd_i64 qd_last = qd_f.qd_dims[RANK - 1];                                                           \
  for (qd_i64 qd_k = qd_lo; qd_k < qd_hi;) {                                                               \
    qd_i64 qd_outer = qd_k / qd_last;                                                                      \
    const qd_i64 qd_j = qd_k - qd_outer * qd_last;                                                         \
    const qd_i64 qd_n = qd_last - qd_j < qd_hi - qd_k ? qd_last - qd_j : qd_hi - qd_k;                     \
    qd_i32 qd_ix[QD_MAX_NDIM] = {0, 0, 0, 0};                                                              \
    for (int qd_d = RANK - 2; qd_d > 0; --qd_d) {                                                          \
      qd_ix[qd_d] = (qd_i32)(qd_outer % qd_f.qd_dims[qd_d]);                                               \
      qd_outer /= qd_f.qd_dims[qd_d];                                                                      \
    }                                                                                                      \
    qd_ix[0] = (qd_i32)qd_outer;                                                                           \
    qd_k += qd_n;                                                                                          \
    const qd_i32 qd_e_end = (qd_i32)(qd_j + qd_n);                                                         \
    for (qd_i32 qd_e = (qd_i32)qd_j; qd_e < qd_e_end; ++qd_e) {                                            \
      qd_ix[RANK - 1] = qd_e;
/* The iterations [qd_lo, qd_hi) of a task's linearised space, in order, into qd_red. */
#define QD_PARALLEL_RANGE(entry, RANK)                                                                     \
  QD_FN void entry##_range(const qd_ctx* ctx, const entry##_frame qd_f, entry##_red* qd_red, qd_i64 qd_lo,  \
                           qd_i64 qd_hi) {                                                                 \
    /* Indices are i32 induction variables, as the IR types them: widening them is free. */               \
    if (RANK == 1) {                                                                                       \
      const qd_i32 qd_end = (qd_i32)(qd_f.qd_base + qd_hi);                                                \
      for (qd_i32 qd_v = (qd_i32)(qd_f.qd_base + qd_lo); qd_v < qd_end; ++qd_v)                            \
        entry##_body(ctx, qd_f, qd_red, qd_v, 0, 0, 0);                                                    \
      return;                                                                                              \
    }                                                                                                      \
    QD_ROWS_BEGIN(RANK)                                                                                    \
        entry##_body(ctx, qd_f, qd_red, qd_ix[0], qd_ix[1], qd_ix[2], qd_ix[3]);                            \
      }                                                                                                    \
    }                                                                                                      \
  }
/* A loop without reductions or atomic updates: the emitter writes its body between
   QD_PARALLEL_BEGIN(entry, RANK, BLOCK) and QD_PARALLEL_END(entry, RANK, NESTED), straight into
   the chunk's loop over [qd_lo, qd_hi) of the linearised space, the indices in qd_i0..qd_i3
   (i32 induction variables, as the IR types them: widening them is free); `goto qd_next`
   continues. The frame is copied: the body's stores cannot change what it holds. BLOCK
   (qd::loop_config{.block_dim}) only shapes GPU launches; NESTED 1, a body with a loop of its
   own: even a few iterations go to several threads. */
#define QD_PARALLEL_BEGIN(entry, RANK, BLOCK)                                                              \
  static void entry##_chunk(const void* qd_fp, const qd_ctx* ctx, qd_i64 qd_lo, qd_i64 qd_hi) {           \
    const entry##_frame qd_f = *(const entry##_frame*)qd_fp;                                               \
    QD_PARALLEL_LOOP_##RANK(RANK)
#define QD_PARALLEL_LOOP_1(RANK)                                                                           \
  const qd_i32 qd_end = (qd_i32)(qd_f.qd_base + qd_hi);                                                    \
  for (qd_i32 qd_i0 = (qd_i32)(qd_f.qd_base + qd_lo); qd_i0 < qd_end; ++qd_i0) {                           \
    const qd_i32 qd_i1 = 0, qd_i2 = 0, qd_i3 = 0;                                                          \
    {
#define QD_PARALLEL_LOOP_N(RANK)                                                                           \
  QD_ROWS_BEGIN(RANK)                                                                                      \
      const qd_i32 qd_i0 = qd_ix[0], qd_i1 = qd_ix[1], qd_i2 = qd_ix[2], qd_i3 = qd_ix[3];                 \
      {
#define QD_PARALLEL_LOOP_2 QD_PARALLEL_LOOP_N
#define QD_PARALLEL_LOOP_3 QD_PARALLEL_LOOP_N
#define QD_PARALLEL_LOOP_4 QD_PARALLEL_LOOP_N
#define QD_PARALLEL_END(entry, RANK, NESTED) QD_PARALLEL_CLOSE_##RANK QD_PARALLEL_ENTRY_##NESTED(entry)
#define QD_PARALLEL_CLOSE_1 } qd_next:; } }
#define QD_PARALLEL_CLOSE_2 } qd_next:; } } }
#define QD_PARALLEL_CLOSE_3 QD_PARALLEL_CLOSE_2
#define QD_PARALLEL_CLOSE_4 QD_PARALLEL_CLOSE_2
#define QD_PARALLEL_ENTRY_0(entry) QD_PARALLEL_ENTRY(entry, parallel_for)
#define QD_PARALLEL_ENTRY_1(entry) QD_PARALLEL_ENTRY(entry, parallel_for_nested)
#define QD_PARALLEL_ENTRY(entry, SPREAD)                                                                   \
  QD_EXPORT void entry(const qd_ctx* ctx) {                                                                \
    entry##_frame qd_f;                                                                                    \
    entry##_prologue(ctx, &qd_f);                                                                          \
    if (qd_f.qd_count > 0) ((const qd_cpu_runtime*)ctx->runtime)->SPREAD(ctx, 0, qd_f.qd_count, &entry##_chunk, &qd_f); \
  }
/* A loop with atomic updates of array elements (QD_PLAIN): run on this thread alone, when
   the runtime says it may, with plain updates; else spread, with atomics. */
#define QD_PLAIN(frame) ((frame).qd_plain)
/* Spread, a chunk adds into its own zeroed copies of small arrays that the loop's inner
   loops only add into (the emitter's _priv_begin takes those that fit), then adds them
   into the arrays. */
#define QD_PRIVATE_SCATTER 1
#define QD_PRIVATE_SCATTER_BYTES 65536
/* PRIVATE is the emitter's literal 0 or 1: a task without private copies names no
   _priv_begin/_priv_end (the emitter writes them only for one that has them). */
#define QD_SCATTER_PRIVATE_0(entry)
#define QD_SCATTER_PRIVATE_1(entry)                                                                        \
  else if (1) {                                                                                            \
    qd_f.qd_plain = 0;                                                                                     \
    alignas(64) unsigned char qd_store[QD_PRIVATE_SCATTER_BYTES];                                          \
    entry##_priv_begin(ctx, &qd_red, qd_store, QD_PRIVATE_SCATTER_BYTES);                                  \
    entry##_range(ctx, qd_f, &qd_red, qd_lo, qd_hi);                                                       \
    entry##_priv_end(ctx, &qd_red, qd_lo);                                                                 \
  }
#define QD_PARALLEL_SCATTER_TASK(entry, RANK, BLOCK, NESTED, PRIVATE)                                      \
  QD_PARALLEL_RANGE(entry, RANK)                                                                           \
  /* Two copies of the loop, qd_plain a constant in each: the plain one keeps the arrays' */             \
  /* addresses in registers (no atomic in the loop), and neither branches per update. */                  \
  static void entry##_chunk(const void* qd_fp, const qd_ctx* ctx, qd_i64 qd_lo, qd_i64 qd_hi) {           \
    entry##_red qd_red;                                                                                    \
    entry##_red_init(&qd_red);                                                                             \
    entry##_frame qd_f = *(const entry##_frame*)qd_fp;                                                     \
    if (qd_f.qd_plain) {                                                                                   \
      qd_f.qd_plain = 1;                                                                                   \
      entry##_range(ctx, qd_f, &qd_red, qd_lo, qd_hi);                                                     \
    }                                                                                                      \
    QD_SCATTER_PRIVATE_##PRIVATE(entry)                                                                    \
    else {                                                                                                 \
      qd_f.qd_plain = 0;                                                                                   \
      entry##_range(ctx, qd_f, &qd_red, qd_lo, qd_hi);                                                     \
    }                                                                                                      \
    entry##_red_flush(ctx, &qd_red);                                                                       \
  }                                                                                                        \
  QD_EXPORT void entry(const qd_ctx* ctx) {                                                                \
    entry##_frame qd_f;                                                                                    \
    entry##_prologue(ctx, &qd_f);                                                                          \
    if (qd_f.qd_count <= 0) return;                                                                        \
    const qd_cpu_runtime* qd_rt = (const qd_cpu_runtime*)ctx->runtime;                                     \
    qd_f.qd_plain = qd_rt->scatter_begin(ctx, qd_f.qd_count, NESTED);                                      \
    if (qd_f.qd_plain) entry##_chunk(&qd_f, ctx, 0, qd_f.qd_count);                                        \
    else if (NESTED) qd_rt->parallel_for_nested(ctx, 0, qd_f.qd_count, &entry##_chunk, &qd_f);             \
    else qd_rt->parallel_for(ctx, 0, qd_f.qd_count, &entry##_chunk, &qd_f);                                \
    qd_rt->scatter_end(ctx, qd_f.qd_plain);                                                                \
  }
/* A loop with reductions into top-level variables: fixed chunks of the iteration space
   (their size a function of the count alone), each accumulated in order (in lanes, above)
   by whichever thread takes it, then combined in a fixed pairwise tree on the launching thread. The
   same bits for any number of threads, and the reference backend's. */
QD_FN qd_i64 qd_reduction_chunk_size(qd_i64 count, qd_i64 max_chunks, qd_i64 min_chunk) {
  const qd_i64 even = (count + max_chunks - 1) / max_chunks;
  return even > min_chunk ? even : min_chunk;
}
/* A rank-1 chunk accumulates in four lanes: iteration lo + j into lane j % 4 while four
   remain, the rest into lane 0, combined as (l0 + l1) + (l2 + l3): four independent chains
   of additions instead of one (codegen/reductions.hpp, reduction_lanes). */
#define QD_REDUCE_LANES(entry, RANK)                                                                       \
  QD_FN void entry##_lanes(const qd_ctx* ctx, const entry##_frame qd_f, entry##_red* qd_red, qd_i64 qd_lo,  \
                           qd_i64 qd_hi) {                                                                 \
    if (RANK != 1) {                                                                                       \
      entry##_range(ctx, qd_f, qd_red, qd_lo, qd_hi);                                                      \
      return;                                                                                              \
    }                                                                                                      \
    entry##_red qd_l1, qd_l2, qd_l3;                                                                       \
    entry##_red_init(&qd_l1);                                                                              \
    entry##_red_init(&qd_l2);                                                                              \
    entry##_red_init(&qd_l3);                                                                              \
    qd_i32 qd_v = (qd_i32)(qd_f.qd_base + qd_lo);                                                          \
    const qd_i32 qd_end = (qd_i32)(qd_f.qd_base + qd_hi);                                                  \
    for (; qd_end - qd_v >= 4; qd_v += 4) {                                                                \
      entry##_body(ctx, qd_f, qd_red, qd_v, 0, 0, 0);                                                      \
      entry##_body(ctx, qd_f, &qd_l1, qd_v + 1, 0, 0, 0);                                                  \
      entry##_body(ctx, qd_f, &qd_l2, qd_v + 2, 0, 0, 0);                                                  \
      entry##_body(ctx, qd_f, &qd_l3, qd_v + 3, 0, 0, 0);                                                  \
    }                                                                                                      \
    for (; qd_v < qd_end; ++qd_v) entry##_body(ctx, qd_f, qd_red, qd_v, 0, 0, 0);                          \
    entry##_red_merge(qd_red, &qd_l1);                                                                     \
    entry##_red_merge(&qd_l2, &qd_l3);                                                                     \
    entry##_red_merge(qd_red, &qd_l2);                                                                     \
  }
#define QD_PARALLEL_REDUCE_TASK(entry, RANK, BLOCK, DET, SCRATCH, CHUNK_MIN, SCATTER)                               \
  QD_PARALLEL_RANGE(entry, RANK)                                                                           \
  QD_REDUCE_LANES(entry, RANK)                                                                             \
  struct entry##_job { entry##_frame f; entry##_red* parts; qd_i64 size; qd_i64 count; };                  \
  static void entry##_chunk(const void* qd_jp, const qd_ctx* ctx, qd_i64 qd_c0, qd_i64 qd_c1) {           \
    const entry##_job* qd_j = (const entry##_job*)qd_jp;                                                   \
    for (qd_i64 qd_c = qd_c0; qd_c < qd_c1; ++qd_c) {                                                      \
      entry##_red qd_red;                                                                                  \
      entry##_red_init(&qd_red);                                                                           \
      const qd_i64 qd_lo = qd_c * qd_j->size;                                                              \
      const qd_i64 qd_hi = qd_j->count - qd_lo < qd_j->size ? qd_j->count : qd_lo + qd_j->size;            \
      entry##_lanes(ctx, qd_j->f, &qd_red, qd_lo, qd_hi);                                                  \
      qd_j->parts[qd_c] = qd_red;                                                                          \
    }                                                                                                      \
  }                                                                                                        \
  QD_EXPORT void entry(const qd_ctx* ctx) {                                                                \
    entry##_job qd_j;                                                                                      \
    entry##_prologue(ctx, &qd_j.f);                                                                        \
    if (qd_j.f.qd_count <= 0) return;                                                                      \
    entry##_red qd_parts[QD_CPU_REDUCTION_CHUNKS];                                                         \
    qd_j.parts = qd_parts;                                                                                 \
    qd_j.count = qd_j.f.qd_count;                                                                          \
    qd_j.size = qd_reduction_chunk_size(qd_j.count, QD_CPU_REDUCTION_CHUNKS, CHUNK_MIN);                   \
    const qd_i64 qd_n = (qd_j.count + qd_j.size - 1) / qd_j.size;                                          \
    const qd_cpu_runtime* qd_rt = (const qd_cpu_runtime*)ctx->runtime;                                     \
    if (SCATTER) qd_rt->scatter_begin(ctx, qd_j.count, 3);                                                 \
    qd_rt->parallel_chunks(ctx, qd_n, &entry##_chunk, &qd_j);                                              \
    if (SCATTER) qd_rt->scatter_end(ctx, 0);                                                               \
    for (qd_i64 qd_w = 1; qd_w < qd_n; qd_w *= 2)                                                          \
      for (qd_i64 qd_i = 0; qd_i + qd_w < qd_n; qd_i += 2 * qd_w) entry##_red_merge(&qd_parts[qd_i], &qd_parts[qd_i + qd_w]); \
    entry##_red_flush(ctx, &qd_parts[0]);                                                                  \
  }
#define QD_SERIAL_TASK(entry) QD_EXPORT void entry(const qd_ctx* ctx) { entry##_run(ctx); }
#define QD_SERIAL_SCATTER_TASK(entry)                                                                      \
  QD_EXPORT void entry(const qd_ctx* ctx) {                                                                \
    const qd_cpu_runtime* qd_rt = (const qd_cpu_runtime*)ctx->runtime;                                     \
    const int qd_plain = qd_rt->scatter_begin(ctx, 1, 2);                                                  \
    entry##_run(ctx, qd_plain);                                                                            \
    qd_rt->scatter_end(ctx, qd_plain);                                                                     \
  }
)QD";

// Atomics, after the shared helpers (codegen/prelude.hpp) whose qd_rmw_* define what they
// store: __atomic built-ins where the host has the operation, else compare-and-swap.
inline constexpr std::string_view prelude_atomics = R"QD(
/* Every type's atomics as templates (nothing is instantiated, or checked, unless a task
   uses it): the __atomic built-ins where the host has the operation, else a
   compare-and-swap loop, of a float's bits (so cas compares bits, NaNs round-trip). */
template <int OP, class T> QD_FN T qd_update(T* p, T v, T e) {
  if constexpr (qd_is_float<T>) {
    typedef decltype(qd_bits_of(v)) U;
    U* q = (U*)p;
    U o = __atomic_load_n(q, __ATOMIC_RELAXED);
    T f;
    do { qd_from_bits(&f, o); }
    while (!__atomic_compare_exchange_n(q, &o, qd_bits_of(qd_rmw<OP>(f, v, e)), true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return f;
  } else {
    T o = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(p, &o, qd_rmw<OP>(o, v, e), true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return o;
  }
}
#define QD_ATOMIC(NAME, OP, INT_BUILTIN)                                                                   \
  template <class T> QD_FN T NAME(T* p, T v) {                                                              \
    if constexpr (qd_is_float<T>) return qd_update<OP>(p, v, v);                                            \
    else return INT_BUILTIN(p, v, __ATOMIC_RELAXED);                                                        \
  }
QD_ATOMIC(qd_atomic_add, 0, __atomic_fetch_add)
QD_ATOMIC(qd_atomic_sub, 1, __atomic_fetch_sub)
#undef QD_ATOMIC
/* min and max of integers leave the loop as soon as v would not change the value. */
template <class T> QD_FN T qd_atomic_min(T* p, T v) {
  if constexpr (qd_is_float<T>) {
    return qd_update<2>(p, v, v);
  } else {
    T o = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v < o && !__atomic_compare_exchange_n(p, &o, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return o;
  }
}
template <class T> QD_FN T qd_atomic_max(T* p, T v) {
  if constexpr (qd_is_float<T>) {
    return qd_update<3>(p, v, v);
  } else {
    T o = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > o && !__atomic_compare_exchange_n(p, &o, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return o;
  }
}
template <class T> QD_FN T qd_atomic_mul(T* p, T v) { return qd_update<4>(p, v, v); }
template <class T> QD_FN T qd_atomic_bit_and(T* p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }
template <class T> QD_FN T qd_atomic_bit_or(T* p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
template <class T> QD_FN T qd_atomic_bit_xor(T* p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); }
template <class T> QD_FN T qd_atomic_exchange(T* p, T v) {
  if constexpr (qd_is_float<T>) {
    T f;
    qd_from_bits(&f, __atomic_exchange_n((decltype(qd_bits_of(v))*)p, qd_bits_of(v), __ATOMIC_RELAXED));
    return f;
  } else {
    return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);
  }
}
template <class T> QD_FN T qd_atomic_cas(T* p, T v, T e) {
  if constexpr (qd_is_float<T>) {
    decltype(qd_bits_of(v)) b = qd_bits_of(e);
    T f;
    __atomic_compare_exchange_n((decltype(b)*)p, &b, qd_bits_of(v), false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    qd_from_bits(&f, b);
    return f;
  } else {
    __atomic_compare_exchange_n(p, &e, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return e;
  }
}
)QD";

// Checks, in the generated code itself, that its structs are laid out as ctx_abi and runtime_abi.
inline std::string abi_checks() {
  return array_abi_checks() + member_at("qd_ctx", "arrays", offsetof(ctx_abi, arrays)) +
         member_at("qd_ctx", "scalars", offsetof(ctx_abi, scalars)) +
         member_at("qd_ctx", "temps", offsetof(ctx_abi, temps)) +
         member_at("qd_ctx", "rng_stream", offsetof(ctx_abi, rng_stream)) +
         member_at("qd_ctx", "error", offsetof(ctx_abi, error)) +
         member_at("qd_ctx", "runtime", offsetof(ctx_abi, runtime)) + size_is("qd_ctx", sizeof(ctx_abi)) +
         member_at("qd_cpu_runtime", "parallel_for", offsetof(runtime_abi, parallel_for)) +
         member_at("qd_cpu_runtime", "parallel_chunks", offsetof(runtime_abi, parallel_chunks)) +
         member_at("qd_cpu_runtime", "parallel_for_nested", offsetof(runtime_abi, parallel_for_nested)) +
         member_at("qd_cpu_runtime", "scatter_begin", offsetof(runtime_abi, scatter_begin)) +
         member_at("qd_cpu_runtime", "scatter_end", offsetof(runtime_abi, scatter_end));
}

// The whole prelude of a CPU translation unit.
inline std::string translation_unit_prelude() {
  std::string s = "/* Quadrants generated code: CPU */\n";
  s += codegen::prelude_limits();
  s += codegen::reduction_prelude();
  s += codegen::prelude_types;
  s += prelude_source;
  s += codegen::prelude_helpers;
  s += prelude_atomics;
  s += abi_checks();
  return s;
}

}  // namespace qd::inline v0::backend::cpu
