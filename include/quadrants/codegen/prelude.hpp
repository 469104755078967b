// The device-neutral part of what precedes generated task bodies: the types and
// the helpers every backend's prelude shares (each backend's own is beside it).
#pragma once

#include <string>
#include <string_view>

#include "quadrants/base/limits.hpp"

namespace qd::inline v0::codegen {

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
typedef signed char qd_i8;
typedef short qd_i16;
typedef unsigned short qd_u16;
typedef int qd_i32;
typedef unsigned int qd_u32;
typedef long long qd_i64;
typedef unsigned long long qd_u64;
typedef float qd_f32;
typedef double qd_f64;
/* binary16, kept as its bits: a type of its own, so no arithmetic on it compiles by accident */
struct qd_f16 { qd_u16 bits; };
/* The C library's float functions every backend maps to qd_<name> for f32 and f64. */
#define QD_FOR_MATH1(X) X(sqrt) X(exp) X(log) X(sin) X(cos) X(tanh) X(floor) X(ceil) X(tan) X(asin) X(acos) \
  X(log2) X(exp2) X(round) X(trunc)
#define QD_FOR_MATH2(X) X(pow) X(atan2) X(fmod)
struct qd_array { void* data; void* grad; qd_i64 shape[QD_MAX_NDIM]; };
)QD";

// Helpers written once over the backend's QD_FN, math and atomics.
inline constexpr std::string_view prelude_helpers = R"QD(
/* Templates where one definition serves every integer type: parsed once, instantiated
   only for what a unit uses (a macro per type cost ~15 ms of g++ per compile). */
template <class T> QD_FN T qd_div(T a, T b) { return b == 0 ? (T)0 : ((T)-1 < 0 && b == (T)-1) ? (T)(0ull - (qd_u64)a) : (T)(a / b); }
template <class T> QD_FN T qd_mod(T a, T b) { return b == 0 || ((T)-1 < 0 && b == (T)-1) ? (T)0 : (T)(a % b); }
template <class T> QD_FN T qd_shl(T a, T b) { return (T)((qd_u64)a << (b & (T)(sizeof(T) * 8 - 1))); }
template <class T> QD_FN T qd_shr(T a, T b) { return (T)(a >> (b & (T)(sizeof(T) * 8 - 1))); }
template <class T> QD_FN T qd_min(T a, T b) { return a < b ? a : b; }  /* floats too: a NaN b gives b */
template <class T> QD_FN T qd_max(T a, T b) { return a > b ? a : b; }
/* Python's // and % of integers: the quotient rounded down, the remainder with the
   divisor's sign (x // 0 and x % 0 give 0, as qd_div and qd_mod do). */
template <class T> QD_FN T qd_floordiv(T a, T b) {
  const T q = qd_div(a, b), r = qd_mod(a, b);
  return ((T)-1 < 0 && r != 0 && ((r < (T)0) != (b < (T)0))) ? (T)(q - 1) : q;
}
template <class T> QD_FN T qd_floormod(T a, T b) {
  const T r = qd_mod(a, b);
  return ((T)-1 < 0 && r != 0 && ((r < (T)0) != (b < (T)0))) ? (T)(r + b) : r;
}
QD_FN qd_i32 qd_abs(qd_i32 a) { return a < 0 ? (qd_i32)(0u - (qd_u32)a) : a; }  /* wraps: |MIN| is MIN */
QD_FN qd_i64 qd_abs(qd_i64 a) { return a < 0 ? (qd_i64)(0ull - (qd_u64)a) : a; }
QD_FN qd_u32 qd_abs(qd_u32 a) { return a; }
QD_FN qd_u64 qd_abs(qd_u64 a) { return a; }
QD_FN qd_u8 qd_abs(qd_u8 a) { return a; }
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
QD_FN qd_i8 qd_max_value_i8() { return 127; }
QD_FN qd_i8 qd_lowest_value_i8() { return -128; }
QD_FN qd_i16 qd_max_value_i16() { return 32767; }
QD_FN qd_i16 qd_lowest_value_i16() { return -32768; }
QD_FN qd_u16 qd_max_value_u16() { return 65535; }
QD_FN qd_u16 qd_lowest_value_u16() { return 0; }
QD_FN qd_u64 qd_max_value_u64() { return 18446744073709551615ull; }
QD_FN qd_u64 qd_lowest_value_u64() { return 0ull; }
/* binary16 (base/half.hpp is the host's copy): to f32 exactly; from f32 and f64 rounding
   to nearest even, on the bits, so every backend rounds alike. */
QD_FN qd_f16 qd_f16_from_bits(qd_u16 b) { qd_f16 h; h.bits = b; return h; }
QD_FN qd_f32 qd_f16_to_f32(qd_f16 h) {
  const qd_u32 sign = (qd_u32)(h.bits & 0x8000u) << 16, e = (h.bits >> 10) & 0x1fu, m = h.bits & 0x3ffu;
  if (e == 31u) return qd_f32_from_bits(sign | 0x7f800000u | (m << 13));
  if (e == 0u) { const qd_f32 v = (qd_f32)m * 0x1p-24f; return sign ? -v : v; }
  return qd_f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}
#define QD_TO_F16(NAME, F, U, BITS, MB, BIAS, W)                                                          \
  QD_FN qd_f16 NAME(F f) {                                                                                \
    const U x = BITS(f), qd_abs_bits = x & (((U)1 << (W - 1)) - 1);                                       \
    const U qd_all = (((U)1 << (W - 1 - MB)) - 1) << MB;                                                  \
    const qd_u16 sign = (qd_u16)((x >> (W - 16)) & 0x8000u);                                             \
    if (qd_abs_bits >= qd_all)                                                                            \
      return qd_f16_from_bits((qd_u16)(sign | (qd_abs_bits == qd_all ? 0x7c00u                            \
                                               : 0x7e00u | (qd_u32)((qd_abs_bits >> (MB - 10)) & 0x3ffu)))); \
    const int e = (int)(qd_abs_bits >> MB), e16 = e - BIAS + 15;                                         \
    const U m = qd_abs_bits & (((U)1 << MB) - 1);                                                         \
    if (e16 >= 31) return qd_f16_from_bits((qd_u16)(sign | 0x7c00u));                                    \
    U units, full; int shift;                                                                             \
    if (e16 >= 1) { shift = MB - 10; full = m; units = ((U)e16 << 10) | (m >> shift); }                  \
    else {                                                                                                \
      shift = MB - 9 - e16;                                                                               \
      if (e == 0 || shift > MB + 1) return qd_f16_from_bits(sign);                                        \
      full = m | ((U)1 << MB); units = full >> shift;                                                     \
    }                                                                                                     \
    const U rest = full & (((U)1 << shift) - 1), halfway = (U)1 << (shift - 1);                           \
    if (rest > halfway || (rest == halfway && (units & 1u))) ++units;                                    \
    return qd_f16_from_bits((qd_u16)(sign | units)); }
QD_TO_F16(qd_f32_to_f16, qd_f32, qd_u32, qd_f32_bits, 23, 127, 32)
QD_TO_F16(qd_f64_to_f16, qd_f64, qd_u64, qd_f64_bits, 52, 1023, 64)
#undef QD_TO_F16
/* On the bits: right under fast math too. */
QD_FN qd_bool qd_isnan(qd_f32 x) { return (qd_f32_bits(x) & 0x7fffffffu) > 0x7f800000u; }
QD_FN qd_bool qd_isinf(qd_f32 x) { return (qd_f32_bits(x) & 0x7fffffffu) == 0x7f800000u; }
QD_FN qd_bool qd_isfinite(qd_f32 x) { return (qd_f32_bits(x) & 0x7fffffffu) < 0x7f800000u; }
QD_FN qd_bool qd_isnan(qd_f64 x) { return (qd_f64_bits(x) & 0x7fffffffffffffffull) > 0x7ff0000000000000ull; }
QD_FN qd_bool qd_isinf(qd_f64 x) { return (qd_f64_bits(x) & 0x7fffffffffffffffull) == 0x7ff0000000000000ull; }
QD_FN qd_bool qd_isfinite(qd_f64 x) { return (qd_f64_bits(x) & 0x7fffffffffffffffull) < 0x7ff0000000000000ull; }
QD_FN qd_f32 qd_rsqrt(qd_f32 x) { return 1.0f / qd_sqrt(x); }
QD_FN qd_f64 qd_rsqrt(qd_f64 x) { return 1.0 / qd_sqrt(x); }
/* Python's float // and % (CPython's float_divmod, step by step). */
#define QD_FLOOR_FLOAT(T, ZERO_LIKE)                                                                        \
  QD_FN T qd_floormod(T a, T b) {                                                                        \
    T m = qd_fmod(a, b);                                                                                  \
    if (m != 0) { if ((b < 0) != (m < 0)) m += b; } else m = ZERO_LIKE(b);                               \
    return m; }                                                                                           \
  QD_FN T qd_floordiv(T a, T b) {                                                                        \
    const T m = qd_fmod(a, b);                                                                            \
    T d = (a - m) / b;                                                                                    \
    if (m != 0 && (b < 0) != (m < 0)) d -= 1;                                                             \
    if (d == 0) return ZERO_LIKE(a / b);                                                                  \
    T f = qd_floor(d);                                                                                    \
    if (d - f > (T)0.5) f += 1;                                                                           \
    return f; }
QD_FN qd_f32 qd_zero_like_f32(qd_f32 x) { return qd_f32_from_bits(qd_f32_bits(x) & 0x80000000u); }
QD_FN qd_f64 qd_zero_like_f64(qd_f64 x) { return qd_f64_from_bits(qd_f64_bits(x) & 0x8000000000000000ull); }
QD_FLOOR_FLOAT(qd_f32, qd_zero_like_f32)
QD_FLOOR_FLOAT(qd_f64, qd_zero_like_f64)
#undef QD_FLOOR_FLOAT
/* Bit counts of an integer's own width, from the backend's 32- and 64-bit ones. */
template <class T> QD_FN qd_u32 qd_low_bits(T x) { return (qd_u32)((qd_u64)x & (~0ull >> (64 - 8 * sizeof(T)))); }
template <class T> QD_FN qd_i32 qd_popcnt(T x) { return sizeof(T) == 8 ? qd_popc64((qd_u64)x) : qd_popc32(qd_low_bits(x)); }
template <class T> QD_FN qd_i32 qd_clz(T x) {
  return sizeof(T) == 8 ? qd_clz64((qd_u64)x) : qd_clz32(qd_low_bits(x)) - (32 - 8 * (qd_i32)sizeof(T));
}
template <class T> QD_FN qd_i32 qd_ffs(T x) { return sizeof(T) == 8 ? qd_ffs64((qd_u64)x) : qd_ffs32(qd_low_bits(x)); }
/* What every atomic leaves in memory given the old value: one definition of their
   semantics, used by the backends' atomics, task-local variables and reductions.
   Integers wrap; min and max of floats are IEEE minNum/maxNum (a NaN operand never
   replaces a number, a stored NaN is replaced); cas compares bits; f16 computes in f32
   and rounds once. Templates only (a function per type, or a wrapper that instantiates
   one, is parsed and checked in every compile: 10 ms of g++ for these). */
template <class T> constexpr bool qd_is_float = false;
template <> constexpr bool qd_is_float<qd_f16> = true;
template <> constexpr bool qd_is_float<qd_f32> = true;
template <> constexpr bool qd_is_float<qd_f64> = true;
QD_FN qd_u16 qd_bits_of(qd_f16 f) { return f.bits; }
QD_FN qd_u32 qd_bits_of(qd_f32 f) { return qd_f32_bits(f); }
QD_FN qd_u64 qd_bits_of(qd_f64 f) { return qd_f64_bits(f); }
QD_FN void qd_from_bits(qd_f16* f, qd_u16 b) { f->bits = b; }
QD_FN void qd_from_bits(qd_f32* f, qd_u32 b) { *f = qd_f32_from_bits(b); }
QD_FN void qd_from_bits(qd_f64* f, qd_u64 b) { *f = qd_f64_from_bits(b); }
QD_FN qd_f32 qd_wide(qd_f16 x) { return qd_f16_to_f32(x); }
template <class T> QD_FN T qd_wide(T x) { return x; }
template <class T, class W> QD_FN T qd_narrow(W x) {
  if constexpr (sizeof(T) == 2 && qd_is_float<T>) return qd_f32_to_f16(x);
  else return (T)x;
}
/* o op v: in the float (f16: f32) type, rounded once; integers wrap through qd_u64. */
#define QD_RMW_ARITH(NAME, OP)                                                                              \
  template <class T> QD_FN T NAME(T o, T v) {                                                              \
    if constexpr (qd_is_float<T>) return qd_narrow<T>(qd_wide(o) OP qd_wide(v));                           \
    else return (T)((qd_u64)o OP (qd_u64)v);                                                               \
  }
QD_RMW_ARITH(qd_rmw_add, +)
QD_RMW_ARITH(qd_rmw_sub, -)
QD_RMW_ARITH(qd_rmw_mul, *)
#undef QD_RMW_ARITH
template <class T> QD_FN T qd_rmw_min(T o, T v) {
  if constexpr (qd_is_float<T>) return (qd_wide(v) < qd_wide(o) || qd_wide(o) != qd_wide(o)) ? v : o;
  else return v < o ? v : o;
}
template <class T> QD_FN T qd_rmw_max(T o, T v) {
  if constexpr (qd_is_float<T>) return (qd_wide(v) > qd_wide(o) || qd_wide(o) != qd_wide(o)) ? v : o;
  else return v > o ? v : o;
}
template <class T> QD_FN T qd_rmw_bit_and(T o, T v) { return (T)(o & v); }
template <class T> QD_FN T qd_rmw_bit_or(T o, T v) { return (T)(o | v); }
template <class T> QD_FN T qd_rmw_bit_xor(T o, T v) { return (T)(o ^ v); }
template <class T> QD_FN T qd_rmw_exchange(T o, T v) { (void)o; return v; }
template <class T> QD_FN T qd_rmw_cas(T o, T v, T e) {
  if constexpr (qd_is_float<T>) return qd_bits_of(o) == qd_bits_of(e) ? v : o;
  else return o == e ? v : o;
}
template <int OP, class T> QD_FN T qd_rmw(T o, T v, T e) {
  if constexpr (OP == 0) return qd_rmw_add(o, v);
  else if constexpr (OP == 1) return qd_rmw_sub(o, v);
  else if constexpr (OP == 2) return qd_rmw_min(o, v);
  else if constexpr (OP == 3) return qd_rmw_max(o, v);
  else if constexpr (OP == 4) return qd_rmw_mul(o, v);
  else if constexpr (OP == 5) return qd_rmw_bit_and(o, v);
  else if constexpr (OP == 6) return qd_rmw_bit_or(o, v);
  else if constexpr (OP == 7) return qd_rmw_bit_xor(o, v);
  else if constexpr (OP == 8) return qd_rmw_exchange(o, v);
  else return qd_rmw_cas(o, v, e);
}
/* Float to integer (docs/dsl.md; base/float_to_int.hpp is the host's copy): truncation
   toward zero, saturating at the target's range, NaN gives 0. The bounds are powers of
   two, exact in f32 and f64. */
#define QD_TO_INT(NAME, T, HI, LO, MAX, MIN)                                                              \
  QD_FN T NAME(qd_f32 x) { return x >= (qd_f32)HI ? MAX : x >= (qd_f32)LO ? (T)x : x != x ? (T)0 : MIN; } \
  QD_FN T NAME(qd_f64 x) { return x >= (qd_f64)HI ? MAX : x >= (qd_f64)LO ? (T)x : x != x ? (T)0 : MIN; }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC_RTC__) && \
    !defined(__CUDA_ARCH__) && !defined(__HIPCC_RTC__) && !defined(__HIP_DEVICE_COMPILE__)
/* x86-64 hosts: one truncating conversion, whose only out-of-range answer (the most
   negative value, also given for NaN) is then corrected, and a clamp for the narrow types.
   The comparisons above cost a scatter that converts positions to cells 1.4x its time;
   this form costs values that are mostly out of range more (a mispredicted branch) and
   does not vectorise at -O3 (docs/benchmarks.md). */
typedef float qd_x86_f4 __attribute__((__vector_size__(16)));
typedef double qd_x86_d2 __attribute__((__vector_size__(16)));
QD_FN qd_i32 qd_cvt32(qd_f32 x) { return __builtin_ia32_cvttss2si((qd_x86_f4){x, 0, 0, 0}); }
QD_FN qd_i32 qd_cvt32(qd_f64 x) { return __builtin_ia32_cvttsd2si((qd_x86_d2){x, 0}); }
QD_FN qd_i64 qd_cvt64(qd_f32 x) { return __builtin_ia32_cvttss2si64((qd_x86_f4){x, 0, 0, 0}); }
QD_FN qd_i64 qd_cvt64(qd_f64 x) { return __builtin_ia32_cvttsd2si64((qd_x86_d2){x, 0}); }
#define QD_TO_INT_X86(NAME, T, MAX, MIN, CVT, W, WMAX)                                                   \
  template <class F> QD_FN T NAME(F x) {                                                                  \
    W r = CVT(x);                                                                                         \
    if (__builtin_expect(r == -WMAX - 1, 0)) r = x > 0 ? WMAX : x == x ? -WMAX - 1 : 0;                  \
    return r <= (W)(MIN) ? MIN : r >= (W)(MAX) ? MAX : (T)r;                                              \
  }
QD_TO_INT_X86(qd_to_u8, qd_u8, (qd_u8)255, (qd_u8)0, qd_cvt32, qd_i32, 2147483647)
QD_TO_INT_X86(qd_to_i8, qd_i8, (qd_i8)127, (qd_i8)-128, qd_cvt32, qd_i32, 2147483647)
QD_TO_INT_X86(qd_to_i16, qd_i16, (qd_i16)32767, (qd_i16)-32768, qd_cvt32, qd_i32, 2147483647)
QD_TO_INT_X86(qd_to_u16, qd_u16, (qd_u16)65535, (qd_u16)0, qd_cvt32, qd_i32, 2147483647)
QD_TO_INT_X86(qd_to_i32, qd_i32, 2147483647, -2147483647 - 1, qd_cvt32, qd_i32, 2147483647)
QD_TO_INT_X86(qd_to_u32, qd_u32, 4294967295u, 0u, qd_cvt64, qd_i64, 9223372036854775807ll)
QD_TO_INT_X86(qd_to_i64, qd_i64, 9223372036854775807ll, -9223372036854775807ll - 1, qd_cvt64, qd_i64,
              9223372036854775807ll)
#undef QD_TO_INT_X86
#else
QD_TO_INT(qd_to_u8, qd_u8, 0x1p8, 0.0, (qd_u8)255, (qd_u8)0)
QD_TO_INT(qd_to_i8, qd_i8, 0x1p7, -0x1p7, (qd_i8)127, (qd_i8)-128)
QD_TO_INT(qd_to_i16, qd_i16, 0x1p15, -0x1p15, (qd_i16)32767, (qd_i16)-32768)
QD_TO_INT(qd_to_u16, qd_u16, 0x1p16, 0.0, (qd_u16)65535, (qd_u16)0)
QD_TO_INT(qd_to_i32, qd_i32, 0x1p31, -0x1p31, 2147483647, -2147483647 - 1)
QD_TO_INT(qd_to_u32, qd_u32, 0x1p32, 0.0, 4294967295u, 0u)
QD_TO_INT(qd_to_i64, qd_i64, 0x1p63, -0x1p63, 9223372036854775807ll, -9223372036854775807ll - 1)
#endif
QD_TO_INT(qd_to_u64, qd_u64, 0x1p64, 0.0, 18446744073709551615ull, 0ull)
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
QD_FN qd_i8 qd_random_i8(qd_u64* s) { return (qd_i8)qd_rng_next(s); }
QD_FN qd_i16 qd_random_i16(qd_u64* s) { return (qd_i16)qd_rng_next(s); }
QD_FN qd_u16 qd_random_u16(qd_u64* s) { return (qd_u16)qd_rng_next(s); }
QD_FN qd_u64 qd_random_u64(qd_u64* s) { return qd_rng_next(s); }
/* 11 random bits: exact in binary16, below 1 */
QD_FN qd_f16 qd_random_f16(qd_u64* s) { return qd_f32_to_f16((qd_f32)(qd_rng_next(s) >> 53) * 0x1p-11f); }
)QD";

}  // namespace qd::inline v0::codegen
