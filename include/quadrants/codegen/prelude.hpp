// The device-neutral part of what precedes generated task bodies: the types and
// the helpers every backend's prelude shares (each backend's own is beside it).
#pragma once

#include <string>
#include <string_view>

#include "quadrants/base/limits.hpp"

namespace qd::codegen {

// The limits the generated code is sized by (base/limits.hpp), first in every unit.
inline std::string prelude_limits() {
  return "#define QD_MAX_NDIM " + std::to_string(limits::max_ndim) + "\n#define QD_MAX_PARAMS " +
         std::to_string(limits::max_kernel_params) + "\n";
}

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
struct qd_array { void* data; void* grad; qd_i64 shape[QD_MAX_NDIM]; };
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

}  // namespace qd::codegen
