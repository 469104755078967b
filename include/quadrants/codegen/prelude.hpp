// Source text that precedes generated task bodies: shared types and helpers,
// the CPU backend's definitions, and the GPU prelude CUDA and HIP share.
#pragma once

#include <string>
#include <string_view>

namespace qd::codegen {

// Types every backend's generated code uses. No #include anywhere: headers cost
// ~100 ms per compile and GPU compilers lack the host's.
inline constexpr std::string_view prelude_types = R"QD(
typedef bool qd_bool;
typedef unsigned char qd_u8;
typedef int qd_i32;
typedef unsigned int qd_u32;
typedef long long qd_i64;
typedef unsigned long long qd_u64;
typedef float qd_f32;
typedef double qd_f64;
struct qd_array { void* data; void* grad; qd_i64 shape[4]; };
)QD";

// Helpers written once over the backend's QD_FN, math and atomics.
inline constexpr std::string_view prelude_helpers = R"QD(
#define QD_INT_HELPERS(T, BITS)                                                              \
  QD_FN T qd_div(T a, T b) { return b == 0 ? (T)0 : ((T)-1 < 0 && b == (T)-1) ? (T)(0ull - (qd_u64)a) : a / b; } \
  QD_FN T qd_mod(T a, T b) { return b == 0 || ((T)-1 < 0 && b == (T)-1) ? (T)0 : a % b; }    \
  QD_FN T qd_shl(T a, T b) { return (T)((qd_u64)a << (b & (BITS - 1))); }                    \
  QD_FN T qd_shr(T a, T b) { return (T)(a >> (b & (BITS - 1))); }                             \
  QD_FN T qd_min(T a, T b) { return a < b ? a : b; }                                          \
  QD_FN T qd_max(T a, T b) { return a > b ? a : b; }
QD_INT_HELPERS(qd_u8, 8)
QD_INT_HELPERS(qd_i32, 32)
QD_INT_HELPERS(qd_u32, 32)
QD_INT_HELPERS(qd_i64, 64)
#undef QD_INT_HELPERS
QD_FN qd_i32 qd_abs(qd_i32 a) { return a < 0 ? (qd_i32)(0u - (qd_u32)a) : a; }  /* wraps: |MIN| is MIN */
QD_FN qd_i64 qd_abs(qd_i64 a) { return a < 0 ? (qd_i64)(0ull - (qd_u64)a) : a; }
QD_FN qd_u32 qd_abs(qd_u32 a) { return a; }
QD_FN qd_u8 qd_abs(qd_u8 a) { return a; }
QD_FN qd_f32 qd_min(qd_f32 a, qd_f32 b) { return a < b ? a : b; }
QD_FN qd_f32 qd_max(qd_f32 a, qd_f32 b) { return a > b ? a : b; }
QD_FN qd_f64 qd_min(qd_f64 a, qd_f64 b) { return a < b ? a : b; }
QD_FN qd_f64 qd_max(qd_f64 a, qd_f64 b) { return a > b ? a : b; }
QD_FN qd_f32 qd_max_value_f32() { return qd_f32_from_bits(0x7f800000u); }
QD_FN qd_f32 qd_lowest_value_f32() { return qd_f32_from_bits(0xff800000u); }
QD_FN qd_f64 qd_max_value_f64() { return qd_f64_from_bits(0x7ff0000000000000ull); }
QD_FN qd_f64 qd_lowest_value_f64() { return qd_f64_from_bits(0xfff0000000000000ull); }
QD_FN qd_i32 qd_max_value_i32() { return 2147483647; }
QD_FN qd_i32 qd_lowest_value_i32() { return -2147483647 - 1; }
QD_FN qd_u32 qd_max_value_u32() { return 4294967295u; }
QD_FN qd_u32 qd_lowest_value_u32() { return 0u; }
QD_FN qd_i64 qd_max_value_i64() { return 9223372036854775807ll; }
QD_FN qd_i64 qd_lowest_value_i64() { return -9223372036854775807ll - 1; }
QD_FN qd_u8 qd_max_value_u8() { return 255; }
QD_FN qd_u8 qd_lowest_value_u8() { return 0; }
/* Float to integer (docs/dsl.md; base/float_to_int.hpp is the host's copy): truncation
   toward zero, saturating at the target's range, NaN gives 0. The bounds are powers of
   two, exact in f32 and f64; plain comparisons, so loops still vectorise. */
#define QD_TO_INT(NAME, T, HI, LO, MAX, MIN)                                                              \
  QD_FN T NAME(qd_f32 x) { return x >= (qd_f32)HI ? MAX : x >= (qd_f32)LO ? (T)x : x != x ? (T)0 : MIN; } \
  QD_FN T NAME(qd_f64 x) { return x >= (qd_f64)HI ? MAX : x >= (qd_f64)LO ? (T)x : x != x ? (T)0 : MIN; }
QD_TO_INT(qd_to_u8, qd_u8, 0x1p8, 0.0, (qd_u8)255, (qd_u8)0)
QD_TO_INT(qd_to_i32, qd_i32, 0x1p31, -0x1p31, 2147483647, -2147483647 - 1)
QD_TO_INT(qd_to_u32, qd_u32, 0x1p32, 0.0, 4294967295u, 0u)
QD_TO_INT(qd_to_i64, qd_i64, 0x1p63, -0x1p63, 9223372036854775807ll, -9223372036854775807ll - 1)
#undef QD_TO_INT
QD_FN qd_i64 qd_clamp_index(qd_i64 i, qd_i64 extent) { return i < 0 ? 0 : (i >= extent ? extent - 1 : i); }
QD_FN qd_bool qd_check_index(const qd_ctx* ctx, qd_i32 param, qd_i32 dim, qd_i64 index, qd_i64 extent) {
  if ((qd_u64)index < (qd_u64)extent) return true;
  qd_report_out_of_bounds(ctx, param, dim, index, extent);
  return false;
}
/* Counter-based random numbers: a draw is a function of (stream, iteration, draw number). */
QD_FN qd_u64 qd_mix64(qd_u64 z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
QD_FN qd_u64 qd_rng_init(qd_u64 stream, qd_u64 index) { return qd_mix64(stream ^ qd_mix64(index + 0x9e3779b97f4a7c15ull)); }
QD_FN qd_u64 qd_rng_next(qd_u64* s) { *s += 0x9e3779b97f4a7c15ull; return qd_mix64(*s); }
QD_FN qd_f32 qd_random_f32(qd_u64* s) { return (qd_f32)(qd_rng_next(s) >> 40) * 0x1p-24f; }
QD_FN qd_f64 qd_random_f64(qd_u64* s) { return (qd_f64)(qd_rng_next(s) >> 11) * 0x1p-53; }
QD_FN qd_i32 qd_random_i32(qd_u64* s) { return (qd_i32)(qd_u32)qd_rng_next(s); }
QD_FN qd_u32 qd_random_u32(qd_u64* s) { return (qd_u32)qd_rng_next(s); }
QD_FN qd_i64 qd_random_i64(qd_u64* s) { return (qd_i64)qd_rng_next(s); }
QD_FN qd_u8 qd_random_u8(qd_u64* s) { return (qd_u8)qd_rng_next(s); }
)QD";

// The CPU backend: the host compiler's builtins, __atomic operations, and task
// entry points that hand loops to the runtime's thread pool.
inline constexpr std::string_view cpu_prelude = R"QD(
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
};
extern "C" int printf(const char*, ...);
#define qd_printf printf
QD_FN qd_f32 qd_f32_from_bits(qd_u32 b) { qd_f32 f; __builtin_memcpy(&f, &b, 4); return f; }
QD_FN qd_f64 qd_f64_from_bits(qd_u64 b) { qd_f64 f; __builtin_memcpy(&f, &b, 8); return f; }
QD_FN qd_f32 qd_sqrt(qd_f32 x) { return __builtin_sqrtf(x); }
QD_FN qd_f64 qd_sqrt(qd_f64 x) { return __builtin_sqrt(x); }
QD_FN qd_f32 qd_exp(qd_f32 x) { return __builtin_expf(x); }
QD_FN qd_f64 qd_exp(qd_f64 x) { return __builtin_exp(x); }
QD_FN qd_f32 qd_log(qd_f32 x) { return __builtin_logf(x); }
QD_FN qd_f64 qd_log(qd_f64 x) { return __builtin_log(x); }
QD_FN qd_f32 qd_sin(qd_f32 x) { return __builtin_sinf(x); }
QD_FN qd_f64 qd_sin(qd_f64 x) { return __builtin_sin(x); }
QD_FN qd_f32 qd_cos(qd_f32 x) { return __builtin_cosf(x); }
QD_FN qd_f64 qd_cos(qd_f64 x) { return __builtin_cos(x); }
QD_FN qd_f32 qd_tanh(qd_f32 x) { return __builtin_tanhf(x); }
QD_FN qd_f64 qd_tanh(qd_f64 x) { return __builtin_tanh(x); }
QD_FN qd_f32 qd_abs(qd_f32 x) { return __builtin_fabsf(x); }
QD_FN qd_f64 qd_abs(qd_f64 x) { return __builtin_fabs(x); }
QD_FN qd_f32 qd_floor(qd_f32 x) { return __builtin_floorf(x); }
QD_FN qd_f64 qd_floor(qd_f64 x) { return __builtin_floor(x); }
QD_FN qd_f32 qd_ceil(qd_f32 x) { return __builtin_ceilf(x); }
QD_FN qd_f64 qd_ceil(qd_f64 x) { return __builtin_ceil(x); }
QD_FN qd_f32 qd_pow(qd_f32 a, qd_f32 b) { return __builtin_powf(a, b); }
QD_FN qd_f64 qd_pow(qd_f64 a, qd_f64 b) { return __builtin_pow(a, b); }
QD_FN qd_f32 qd_fma(qd_f32 a, qd_f32 b, qd_f32 c) { return __builtin_fmaf(a, b, c); }
QD_FN qd_f64 qd_fma(qd_f64 a, qd_f64 b, qd_f64 c) { return __builtin_fma(a, b, c); }
#define QD_ATOMIC_INT(T)                                                                                   \
  QD_FN T qd_atomic_add(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }                 \
  QD_FN T qd_atomic_sub(T* p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }                 \
  QD_FN T qd_atomic_min(T* p, T v) { T o = __atomic_load_n(p, __ATOMIC_RELAXED);                            \
    while (v < o && !__atomic_compare_exchange_n(p, &o, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {} return o; } \
  QD_FN T qd_atomic_max(T* p, T v) { T o = __atomic_load_n(p, __ATOMIC_RELAXED);                            \
    while (v > o && !__atomic_compare_exchange_n(p, &o, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {} return o; }
QD_ATOMIC_INT(qd_u8)
QD_ATOMIC_INT(qd_i32)
QD_ATOMIC_INT(qd_u32)
QD_ATOMIC_INT(qd_i64)
#undef QD_ATOMIC_INT
#define QD_ATOMIC_FLOAT(T, U, OP, EXPR)                                                                    \
  QD_FN T OP(T* p, T v) {                                                                                  \
    U* q = (U*)p; U o = __atomic_load_n(q, __ATOMIC_RELAXED), n; T f, r;                                    \
    do { __builtin_memcpy(&f, &o, sizeof(T)); r = EXPR; __builtin_memcpy(&n, &r, sizeof(T)); }             \
    while (!__atomic_compare_exchange_n(q, &o, n, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));              \
    return f; }
QD_ATOMIC_FLOAT(qd_f32, qd_u32, qd_atomic_add, f + v)
QD_ATOMIC_FLOAT(qd_f32, qd_u32, qd_atomic_sub, f - v)
QD_ATOMIC_FLOAT(qd_f32, qd_u32, qd_atomic_min, (v < f ? v : f))
QD_ATOMIC_FLOAT(qd_f32, qd_u32, qd_atomic_max, (v > f ? v : f))
QD_ATOMIC_FLOAT(qd_f64, qd_u64, qd_atomic_add, f + v)
QD_ATOMIC_FLOAT(qd_f64, qd_u64, qd_atomic_sub, f - v)
QD_ATOMIC_FLOAT(qd_f64, qd_u64, qd_atomic_min, (v < f ? v : f))
QD_ATOMIC_FLOAT(qd_f64, qd_u64, qd_atomic_max, (v > f ? v : f))
#undef QD_ATOMIC_FLOAT
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
#define QD_PARALLEL_TASK(entry, RANK)                                                                      \
  static void entry##_chunk(const void* qd_fp, const qd_ctx* ctx, qd_i64 qd_lo, qd_i64 qd_hi) {           \
    const entry##_frame qd_f = *(const entry##_frame*)qd_fp;                                               \
    entry##_red qd_red;                                                                                    \
    entry##_red_init(&qd_red);                                                                             \
    /* Indices are i32 induction variables, as the IR types them: widening them is free. */               \
    if (RANK == 1) {                                                                                       \
      const qd_i32 qd_end = (qd_i32)(qd_f.qd_base + qd_hi);                                                \
      for (qd_i32 qd_v = (qd_i32)(qd_f.qd_base + qd_lo); qd_v < qd_end; ++qd_v)                            \
        entry##_body(ctx, qd_f, &qd_red, qd_v, 0, 0, 0);                                                   \
      entry##_red_flush(ctx, &qd_red);                                                                     \
      return;                                                                                              \
    }                                                                                                      \
    /* Row by row: one division per row, then a plain loop over the last dimension. */                    \
    const qd_i64 qd_last = qd_f.qd_dims[RANK - 1];                                                         \
    for (qd_i64 qd_k = qd_lo; qd_k < qd_hi;) {                                                             \
      qd_i64 qd_outer = qd_k / qd_last, qd_j = qd_k - qd_outer * qd_last;                                   \
      qd_i64 qd_n = qd_last - qd_j < qd_hi - qd_k ? qd_last - qd_j : qd_hi - qd_k;                          \
      qd_i32 qd_ix[4] = {0, 0, 0, 0};                                                                      \
      for (int qd_d = RANK - 2; qd_d > 0; --qd_d) {                                                        \
        qd_ix[qd_d] = (qd_i32)(qd_outer % qd_f.qd_dims[qd_d]);                                             \
        qd_outer /= qd_f.qd_dims[qd_d];                                                                    \
      }                                                                                                    \
      qd_ix[0] = (qd_i32)qd_outer;                                                                         \
      const qd_i32 qd_e_end = (qd_i32)(qd_j + qd_n);                                                       \
      for (qd_i32 qd_e = (qd_i32)qd_j; qd_e < qd_e_end; ++qd_e) {                                          \
        qd_ix[RANK - 1] = qd_e;                                                                            \
        entry##_body(ctx, qd_f, &qd_red, qd_ix[0], qd_ix[1], qd_ix[2], qd_ix[3]);                           \
      }                                                                                                    \
      qd_k += qd_n;                                                                                        \
    }                                                                                                      \
    entry##_red_flush(ctx, &qd_red);                                                                       \
  }                                                                                                        \
  QD_EXPORT void entry(const qd_ctx* ctx) {                                                                \
    entry##_frame qd_f;                                                                                    \
    entry##_prologue(ctx, &qd_f);                                                                          \
    if (qd_f.qd_count > 0) ((const qd_cpu_runtime*)ctx->runtime)->parallel_for(ctx, 0, qd_f.qd_count, &entry##_chunk, &qd_f); \
  }
#define QD_SERIAL_TASK(entry) QD_EXPORT void entry(const qd_ctx* ctx) { entry##_run(ctx); }
)QD";

// The whole prelude of a CPU translation unit.
inline std::string cpu_translation_unit_prelude() {
  std::string s = "/* Quadrants generated code: CPU */\n";
  s += prelude_types;
  s += cpu_prelude;
  s += prelude_helpers;
  return s;
}

// CUDA and HIP share one GPU prelude: only QD_FN and QD_GRID_CONSTANT differ,
// defined ahead of it by the backend. A launch runs gpu_threads_per_block threads
// per block (the host launches with the same number).
inline constexpr unsigned gpu_threads_per_block = 256;

inline constexpr std::string_view gpu_prelude = R"QD(
/* The task's parameters travel by value in the kernel's parameter space (3608 bytes). */
#define QD_MAX_PARAMS 64
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
QD_FN qd_f32 qd_sqrt(qd_f32 x) { return sqrtf(x); }
QD_FN qd_f64 qd_sqrt(qd_f64 x) { return sqrt(x); }
QD_FN qd_f32 qd_exp(qd_f32 x) { return expf(x); }
QD_FN qd_f64 qd_exp(qd_f64 x) { return exp(x); }
QD_FN qd_f32 qd_log(qd_f32 x) { return logf(x); }
QD_FN qd_f64 qd_log(qd_f64 x) { return log(x); }
QD_FN qd_f32 qd_sin(qd_f32 x) { return sinf(x); }
QD_FN qd_f64 qd_sin(qd_f64 x) { return sin(x); }
QD_FN qd_f32 qd_cos(qd_f32 x) { return cosf(x); }
QD_FN qd_f64 qd_cos(qd_f64 x) { return cos(x); }
QD_FN qd_f32 qd_tanh(qd_f32 x) { return tanhf(x); }
QD_FN qd_f64 qd_tanh(qd_f64 x) { return tanh(x); }
QD_FN qd_f32 qd_abs(qd_f32 x) { return fabsf(x); }
QD_FN qd_f64 qd_abs(qd_f64 x) { return fabs(x); }
QD_FN qd_f32 qd_floor(qd_f32 x) { return floorf(x); }
QD_FN qd_f64 qd_floor(qd_f64 x) { return floor(x); }
QD_FN qd_f32 qd_ceil(qd_f32 x) { return ceilf(x); }
QD_FN qd_f64 qd_ceil(qd_f64 x) { return ceil(x); }
QD_FN qd_f32 qd_pow(qd_f32 a, qd_f32 b) { return powf(a, b); }
QD_FN qd_f64 qd_pow(qd_f64 a, qd_f64 b) { return pow(a, b); }
QD_FN qd_f32 qd_fma(qd_f32 a, qd_f32 b, qd_f32 c) { return fmaf(a, b, c); }
QD_FN qd_f64 qd_fma(qd_f64 a, qd_f64 b, qd_f64 c) { return fma(a, b, c); }
/* Atomics: native where CUDA and HIP both have them, else compare-and-swap loops. */
QD_FN qd_i32 qd_atomic_add(qd_i32* p, qd_i32 v) { return atomicAdd(p, v); }
QD_FN qd_i32 qd_atomic_sub(qd_i32* p, qd_i32 v) { return atomicSub(p, v); }
QD_FN qd_i32 qd_atomic_min(qd_i32* p, qd_i32 v) { return atomicMin(p, v); }
QD_FN qd_i32 qd_atomic_max(qd_i32* p, qd_i32 v) { return atomicMax(p, v); }
QD_FN qd_u32 qd_atomic_add(qd_u32* p, qd_u32 v) { return atomicAdd(p, v); }
QD_FN qd_u32 qd_atomic_sub(qd_u32* p, qd_u32 v) { return atomicSub(p, v); }
QD_FN qd_u32 qd_atomic_min(qd_u32* p, qd_u32 v) { return atomicMin(p, v); }
QD_FN qd_u32 qd_atomic_max(qd_u32* p, qd_u32 v) { return atomicMax(p, v); }
QD_FN qd_i64 qd_atomic_add(qd_i64* p, qd_i64 v) { return (qd_i64)atomicAdd((unsigned long long*)p, (unsigned long long)v); }
QD_FN qd_i64 qd_atomic_sub(qd_i64* p, qd_i64 v) { return (qd_i64)atomicAdd((unsigned long long*)p, 0ull - (unsigned long long)v); }
QD_FN qd_f32 qd_atomic_add(qd_f32* p, qd_f32 v) { return atomicAdd(p, v); }
QD_FN qd_f32 qd_atomic_sub(qd_f32* p, qd_f32 v) { return atomicAdd(p, -v); }
QD_FN qd_f64 qd_atomic_add(qd_f64* p, qd_f64 v) { return atomicAdd(p, v); }
QD_FN qd_f64 qd_atomic_sub(qd_f64* p, qd_f64 v) { return atomicAdd(p, -v); }
/* 64-bit read-modify-write by compare-and-swap; OLD is the value replaced. */
QD_FN qd_i64 qd_from_bits_qd_i64(unsigned long long b) { return (qd_i64)b; }
QD_FN unsigned long long qd_to_bits_qd_i64(qd_i64 v) { return (unsigned long long)v; }
QD_FN qd_f64 qd_from_bits_qd_f64(unsigned long long b) { return qd_f64_from_bits(b); }
QD_FN unsigned long long qd_to_bits_qd_f64(qd_f64 v) { return qd_f64_bits(v); }
#define QD_CAS64(T, OP, EXPR)                                                                              \
  QD_FN T OP(T* p, T v) {                                                                                \
    unsigned long long* qd_q = (unsigned long long*)p;                                                   \
    unsigned long long qd_seen = *(volatile unsigned long long*)qd_q, qd_prev;                            \
    T OLD;                                                                                               \
    do { qd_prev = qd_seen; OLD = qd_from_bits_##T(qd_prev);                                             \
         qd_seen = atomicCAS(qd_q, qd_prev, qd_to_bits_##T(EXPR)); } while (qd_seen != qd_prev);          \
    return OLD; }
QD_CAS64(qd_i64, qd_atomic_min, v < OLD ? v : OLD)
QD_CAS64(qd_i64, qd_atomic_max, v > OLD ? v : OLD)
QD_CAS64(qd_f64, qd_atomic_min, v < OLD ? v : OLD)
QD_CAS64(qd_f64, qd_atomic_max, v > OLD ? v : OLD)
#undef QD_CAS64
#define QD_CAS_F32(OP, EXPR)                                                                               \
  QD_FN qd_f32 OP(qd_f32* p, qd_f32 v) {                                                                 \
    unsigned int* qd_q = (unsigned int*)p;                                                               \
    unsigned int qd_seen = *(volatile unsigned int*)qd_q, qd_prev; qd_f32 OLD;                            \
    do { qd_prev = qd_seen; OLD = qd_f32_from_bits(qd_prev);                                             \
         qd_seen = atomicCAS(qd_q, qd_prev, qd_f32_bits(EXPR)); } while (qd_seen != qd_prev);             \
    return OLD; }
QD_CAS_F32(qd_atomic_min, v < OLD ? v : OLD)
QD_CAS_F32(qd_atomic_max, v > OLD ? v : OLD)
#undef QD_CAS_F32
/* u8: compare-and-swap on the aligned 32-bit word holding the byte (device
   allocations are rounded up to 8 bytes, so the word is always mapped). */
#define QD_CAS_U8(OP, EXPR)                                                                                \
  QD_FN qd_u8 OP(qd_u8* p, qd_u8 v) {                                                                    \
    unsigned int* qd_q = (unsigned int*)((unsigned long long)p & ~3ull);                                  \
    const unsigned int qd_shift = ((unsigned int)(unsigned long long)p & 3u) * 8u;                        \
    unsigned int qd_seen = *(volatile unsigned int*)qd_q, qd_prev; qd_u8 OLD;                             \
    do { qd_prev = qd_seen; OLD = (qd_u8)(qd_prev >> qd_shift);                                           \
         const unsigned int qd_new = (unsigned int)(qd_u8)(EXPR);                                        \
         qd_seen = atomicCAS(qd_q, qd_prev, (qd_prev & ~(0xffu << qd_shift)) | (qd_new << qd_shift)); }   \
    while (qd_seen != qd_prev);                                                                          \
    return OLD; }
QD_CAS_U8(qd_atomic_add, OLD + v)
QD_CAS_U8(qd_atomic_sub, OLD - v)
QD_CAS_U8(qd_atomic_min, v < OLD ? v : OLD)
QD_CAS_U8(qd_atomic_max, v > OLD ? v : OLD)
#undef QD_CAS_U8
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
/* One launch per task: every thread evaluates the prologue, then a grid-stride
   loop over [0, qd_count); a thread reduces into its own accumulators and
   flushes them once, if it ran any iteration. Indices are row-major. */
#define QD_PARALLEL_TASK(entry, RANK)                                                                      \
  extern "C" __global__ void __launch_bounds__(QD_BLOCK) entry(const QD_GRID_CONSTANT qd_ctx qd_c) {     \
    const qd_ctx* ctx = &qd_c;                                                                             \
    entry##_frame qd_f;                                                                                    \
    entry##_prologue(ctx, &qd_f);                                                                          \
    qd_i64 qd_k = (qd_i64)blockIdx.x * blockDim.x + threadIdx.x;                                           \
    if (qd_k >= qd_f.qd_count) return;                                                                     \
    const qd_i64 qd_stride = (qd_i64)blockDim.x * gridDim.x;                                               \
    entry##_red qd_red;                                                                                    \
    entry##_red_init(&qd_red);                                                                             \
    /* Not unrolled: NVVM's 4x unrolling doubles ptxas's time per construct. */                           \
    _Pragma("unroll 1") for (; qd_k < qd_f.qd_count; qd_k += qd_stride) {                                  \
      if (RANK == 1) {                                                                                     \
        entry##_body(ctx, qd_f, &qd_red, (qd_i32)(qd_f.qd_base + qd_k), 0, 0, 0);                          \
        continue;                                                                                          \
      }                                                                                                    \
      qd_i32 qd_ix[4] = {0, 0, 0, 0};                                                                      \
      if (qd_f.qd_count <= 0xffffffffll) { /* 32-bit division where the space allows it */                \
        qd_u32 qd_r = (qd_u32)qd_k;                                                                        \
        for (int qd_d = RANK - 1; qd_d > 0; --qd_d) {                                                      \
          const qd_u32 qd_n = (qd_u32)qd_f.qd_dims[qd_d];                                                  \
          qd_ix[qd_d] = (qd_i32)(qd_r % qd_n);                                                             \
          qd_r /= qd_n;                                                                                    \
        }                                                                                                  \
        qd_ix[0] = (qd_i32)qd_r;                                                                           \
      } else {                                                                                             \
        qd_i64 qd_r = qd_k;                                                                                \
        for (int qd_d = RANK - 1; qd_d > 0; --qd_d) {                                                      \
          qd_ix[qd_d] = (qd_i32)(qd_r % qd_f.qd_dims[qd_d]);                                               \
          qd_r /= qd_f.qd_dims[qd_d];                                                                      \
        }                                                                                                  \
        qd_ix[0] = (qd_i32)qd_r;                                                                           \
      }                                                                                                    \
      entry##_body(ctx, qd_f, &qd_red, qd_ix[0], qd_ix[1], qd_ix[2], qd_ix[3]);                            \
    }                                                                                                      \
    entry##_red_flush(ctx, &qd_red);                                                                       \
  }
/* A serial task runs on the single thread of a one-thread launch. */
#define QD_SERIAL_TASK(entry)                                                                              \
  extern "C" __global__ void __launch_bounds__(QD_BLOCK) entry(const QD_GRID_CONSTANT qd_ctx qd_c) {     \
    entry##_run(&qd_c);                                                                                    \
  }
)QD";

// The whole prelude of a CUDA translation unit (NVRTC declares the built-ins).
inline std::string cuda_translation_unit_prelude() {
  std::string s = "/* Quadrants generated code: CUDA */\n";
  s += "#define QD_FN __device__ __forceinline__\n";
  s += "#define QD_GRID_CONSTANT __grid_constant__\n";  // its address is taken without a copy
  s += "#define QD_BLOCK " + std::to_string(gpu_threads_per_block) + "\n";
  s += prelude_types;
  s += gpu_prelude;
  s += prelude_helpers;
  return s;
}

// The whole prelude of a HIP translation unit (hipRTC includes the HIP built-ins).
inline std::string amdgpu_translation_unit_prelude() {
  std::string s = "/* Quadrants generated code: HIP */\n";
  s += "#define QD_FN __device__ inline __attribute__((always_inline))\n";
  s += "#define QD_GRID_CONSTANT\n";  // kernel arguments are read in place from the kernarg segment
  s += "#define QD_BLOCK " + std::to_string(gpu_threads_per_block) + "\n";
  s += prelude_types;
  s += gpu_prelude;
  s += prelude_helpers;
  return s;
}

}  // namespace qd::codegen
