// GLSL math for generated Vulkan shaders: exp, log, sin, cos, tanh, pow, fma, tan, asin,
// acos, atan2, log2 and exp2 in f32 and f64, and f16 to f32 (the operations on the bits --
// trunc, round, fmod, Python's // and %, rounding to f16 -- are generated per type in
// glsl_helpers-inl.hpp), written here because GLSL has no f64 versions, Vulkan's precision rules
// for its f32 built-ins are loose (sin and cos are defined only on [-pi, pi], atan within
// 4096 ulp) and its fma() need not be fused. Accuracy and argument ranges are in
// docs/backends.md; tests compare them with <cmath>.
#pragma once

#include <string_view>

namespace qd::inline v0::codegen {

// One GLSL helper: its name, the helpers it calls (space-separated), and its code. Some
// names have two versions: one for devices with f64 (`wide`) and one without.
struct glsl_snippet {
  enum class when : unsigned char { always, with_f64, without_f64 };
  std::string_view name;
  std::string_view deps;
  when applies;
  std::string_view code;
};

// Every temporary is `precise`: no contraction into fused operations and no reordering,
// which the range reductions and the exact products rely on.
inline constexpr glsl_snippet glsl_math_snippets[] = {
    {"scale_f32", "", glsl_snippet::when::always, R"(
/* v * 2^k with one rounding, for k in [-151, 128]. */
float qd_scale_f32(float v, int k) {
  precise float r;
  if (k > 127) r = v * uintBitsToFloat(0x7f000000u) * uintBitsToFloat(uint(k) << 23);
  else if (k < -126) r = v * uintBitsToFloat(uint(k + 191) << 23) * uintBitsToFloat(0x1f800000u);
  else r = v * uintBitsToFloat(uint(k + 127) << 23);
  return r;
}
)"},
    {"exp_f32", "scale_f32", glsl_snippet::when::always, R"(
/* e^x: x = k ln2 + r, |r| <= ln2/2 (ln2 in two parts, k ln2_hi exact), Taylor to r^7. */
float qd_exp_f32(float x) {
  if (isnan(x)) return x;
  if (x > 88.72283935546875) return uintBitsToFloat(0x7f800000u);
  if (x < -103.972084) return 0.0;
  precise float k = floor(x * uintBitsToFloat(0x3fb8aa3bu) + 0.5);
  precise float r = (x - k * uintBitsToFloat(0x3f317200u)) - k * uintBitsToFloat(0x35bfbe8eu);
  precise float q = 0.5 + r * (0.166666667 + r * (0.0416666667 + r * (0.00833333333 + r * (0.00138888889 +
                    r * 0.000198412698))));
  precise float e = 1.0 + (r + r * r * q);
  return qd_scale_f32(e, int(k));
}
)"},
    {"log_f32", "", glsl_snippet::when::always, R"(
/* log(x): x = 2^e m, m in [sqrt(1/2), sqrt(2)], f = m - 1, s = f / (2 + f);
   log(1 + f) = f - (f^2/2 - s (f^2/2 + R(s^2))), R from the atanh series. */
float qd_log_f32(float x) {
  if (isnan(x) || x < 0.0) return uintBitsToFloat(0x7fc00000u);
  if (x == 0.0) return uintBitsToFloat(0xff800000u);
  if (isinf(x)) return x;
  int e = 0;
  if (x < uintBitsToFloat(0x00800000u)) { x *= 8388608.0; e = -23; }
  uint b = floatBitsToUint(x);
  e += int(b >> 23) - 127;
  precise float m = uintBitsToFloat((b & 0x007fffffu) | 0x3f800000u);
  if (m > uintBitsToFloat(0x3fb504f3u)) { m *= 0.5; e += 1; }
  precise float f = m - 1.0;
  precise float s = f / (2.0 + f);
  precise float z = s * s;
  precise float R = z * (0.666666667 + z * (0.4 + z * (0.285714286 + z * 0.222222222)));
  precise float h = 0.5 * f * f;
  precise float fe = float(e);
  precise float l = fe * uintBitsToFloat(0x3f317200u) + (f - (h - (s * (h + R) + fe * uintBitsToFloat(0x35bfbe8eu))));
  return l;
}
)"},
    {"reduce_f32", "", glsl_snippet::when::always, R"(
/* x = k pi/2 + r, |r| <= pi/4; q = k mod 4. Below 6433: pi/2 in three parts (k c1 and k c2
   exact). Above: Payne and Hanek's reduction, exact to 2^-39: |x| = m 2^e times 96 bits of
   2/pi chosen by e, in 64-bit integers. */
const uint qd_two_over_pi[6] = uint[6](0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0xdb629599u, 0x3c439041u);
uint qd_two_over_pi_word(int j) { return j < 0 ? 0u : qd_two_over_pi[j]; }
float qd_reduce_f32(float x, out int q) {
  if (abs(x) <= 6433.0) {
    precise float k = floor(x * uintBitsToFloat(0x3f22f983u) + 0.5);
    precise float k4 = k - 4.0 * floor(k * 0.25);
    q = int(k4);
    precise float r = ((x - k * uintBitsToFloat(0x3fc90000u)) - k * uintBitsToFloat(0x39fda000u)) -
                      k * uintBitsToFloat(0x33a22169u);
    return r;
  }
  uint b = floatBitsToUint(x) & 0x7fffffffu;
  uint64_t m = uint64_t((b & 0x007fffffu) | 0x00800000u);
  int e = int(b >> 23) - 150;
  int j = e >= 2 ? (e - 2) / 32 : -1;
  uint64_t p0 = m * uint64_t(qd_two_over_pi_word(j));
  uint64_t p1 = m * uint64_t(qd_two_over_pi_word(j + 1));
  uint64_t p2 = m * uint64_t(qd_two_over_pi_word(j + 2));
  uint64_t lo = p2 + (p1 << 32);
  uint64_t hi = p0 + (p1 >> 32) + (lo < p2 ? 1ul : 0ul);
  int shift = 34 - (e - 32 * j);
  uint64_t f = (hi << (64 - shift)) | (lo >> shift);  /* (|x| 2/pi) mod 4: 2 integer bits, 62 fraction bits */
  q = int(f >> 62);
  int64_t frac = int64_t(f & 0x3ffffffffffffffful);
  if (frac >= 0x2000000000000000l) { frac -= 0x4000000000000000l; q = (q + 1) & 3; }
  precise float r = float(frac) * uintBitsToFloat(0x20c90fdbu);
  if (x < 0.0) { r = -r; q = (4 - q) & 3; }
  return r;
}
)"},
    {"sincos_f32", "reduce_f32", glsl_snippet::when::always, R"(
/* Taylor polynomials on |r| <= pi/4: sin to r^9, cos to r^10. */
float qd_sin_poly_f32(float r) {
  precise float z = r * r;
  precise float s = r + r * z * (-0.166666667 + z * (0.00833333333 + z * (-0.000198412698 + z * 2.75573192e-06)));
  return s;
}
float qd_cos_poly_f32(float r) {
  precise float z = r * r;
  precise float c = 1.0 - 0.5 * z + z * z * (0.0416666667 + z * (-0.00138888889 + z * (2.48015873e-05 +
                    z * -2.75573192e-07)));
  return c;
}
float qd_sin_f32(float x) {
  if (isnan(x)) return x;
  if (isinf(x)) return uintBitsToFloat(0x7fc00000u);
  int q;
  float r = qd_reduce_f32(x, q);
  float s = (q & 1) == 0 ? qd_sin_poly_f32(r) : qd_cos_poly_f32(r);
  return q >= 2 ? -s : s;
}
float qd_cos_f32(float x) {
  if (isnan(x)) return x;
  if (isinf(x)) return uintBitsToFloat(0x7fc00000u);
  int q;
  float r = qd_reduce_f32(x, q);
  float c = (q & 1) == 0 ? qd_cos_poly_f32(r) : qd_sin_poly_f32(r);
  return q == 1 || q == 2 ? -c : c;
}
)"},
    {"tanh_f32", "exp_f32", glsl_snippet::when::always, R"(
/* tanh: Taylor to x^17 below 0.55, else 1 - 2 / (e^2|x| + 1). */
float qd_tanh_f32(float x) {
  if (isnan(x)) return x;
  precise float a = abs(x);
  if (a < 0.55) {
    precise float z = x * x;
    precise float t = x + x * z * (-0.333333333 + z * (0.133333333 + z * (-0.053968254 + z * (0.0218694885 +
                      z * (-0.00886323553 + z * (0.00359212804 + z * (-0.00145583439 + z * 0.000590027441)))))));
    return t;
  }
  precise float r = a > 20.0 ? 1.0 : 1.0 - 2.0 / (qd_exp_f32(2.0 * a) + 1.0);
  return x < 0.0 ? -r : r;
}
)"},
    {"pow_core_f32", "powpos_f64", glsl_snippet::when::with_f64, R"(
/* |x|^y for finite a > 0 and y: in f64 (about 1 ulp once rounded). */
float qd_pow_core_f32(float a, float y) { return float(qd_powpos_f64(double(a), double(y))); }
)"},
    {"pow_core_f32", "exp_f32 log_f32", glsl_snippet::when::without_f64, R"(
/* |x|^y for finite a > 0 and y: e^(y log a) in f32 (error grows with |y log a|). */
float qd_pow_core_f32(float a, float y) { precise float p = y * qd_log_f32(a); return qd_exp_f32(p); }
)"},
    {"pow_f32", "pow_core_f32", glsl_snippet::when::always, R"(
/* pow with C's special cases (pow(x, 0) = 1, pow(1, y) = 1, negative x with integer y). */
float qd_pow_f32(float x, float y) {
  if (y == 0.0 || x == 1.0) return 1.0;
  if (isnan(x) || isnan(y)) return uintBitsToFloat(0x7fc00000u);
  precise float a = abs(x);
  if (isinf(y)) return a == 1.0 ? 1.0 : ((a < 1.0) == (y > 0.0) ? 0.0 : uintBitsToFloat(0x7f800000u));
  bool y_int = floor(y) == y;
  bool y_odd = y_int && abs(y) < 16777216.0 && (int(abs(y)) & 1) == 1;
  bool negative = floatBitsToUint(x) >= 0x80000000u;
  if (isinf(x) || x == 0.0) {
    float r = (y > 0.0) == isinf(x) ? uintBitsToFloat(0x7f800000u) : 0.0;
    return negative && y_odd ? -r : r;
  }
  if (negative && !y_int) return uintBitsToFloat(0x7fc00000u);
  float r = qd_pow_core_f32(a, y);
  return negative && y_odd ? -r : r;
}
)"},
    {"fma_f32", "", glsl_snippet::when::with_f64, R"(
/* a b + c with one rounding, where fma() is not fused: the exact product in f64, the sum
   rounded to odd in f64 (its error recovered exactly), then rounded once to f32. */
float qd_fma_f32(float a, float b, float c) {
  precise double p = double(a) * double(b);
  precise double s = p + double(c);
  if (isinf(s) || isnan(s)) return float(s);
  precise double t = s - p;
  precise double e = (p - (s - t)) + (double(c) - t);
  uint64_t bits = doubleBitsToUint64(s);
  if (e != 0.0lf && (bits & 1ul) == 0ul) bits = (e > 0.0lf) == (s > 0.0lf) ? bits + 1ul : bits - 1ul;
  return float(uint64BitsToDouble(bits));
}
)"},
    {"fma_f32", "", glsl_snippet::when::without_f64, R"(
/* a b + c with one rounding, where fma() is not fused (Boldo and Melquiond's emulation):
   the product exactly as hi + lo, c + hi exactly as th + tl, then th + RO(tl + lo). */
float qd_fma_f32(float a, float b, float c) {
  precise float uh = a * b;
  if (isinf(uh) || isnan(uh) || isinf(c) || isnan(c) || abs(a) > 1e30 || abs(b) > 1e30) return fma(a, b, c);
  if (uh == 0.0 || c == 0.0) return uh + c;
  precise float ca = 4097.0 * a;
  precise float ah = ca - (ca - a);
  precise float al = a - ah;
  precise float cb = 4097.0 * b;
  precise float bh = cb - (cb - b);
  precise float bl = b - bh;
  precise float ul = ((ah * bh - uh) + ah * bl + al * bh) + al * bl;
  precise float th = c + uh;
  precise float t1 = th - c;
  precise float tl = (c - (th - t1)) + (uh - t1);
  precise float v = tl + ul;
  precise float t2 = v - tl;
  precise float ve = (tl - (v - t2)) + (ul - t2);
  uint bits = floatBitsToUint(v);
  if (ve != 0.0 && (bits & 1u) == 0u) bits = (ve > 0.0) == (v > 0.0) ? bits + 1u : bits - 1u;
  precise float z = th + uintBitsToFloat(bits);
  return z;
}
)"},
    {"fma_f64", "two_prod_f64", glsl_snippet::when::always, R"(
/* a b + c with one rounding, where fma() is not fused (Boldo and Melquiond's emulation):
   the product exactly as hi + lo, c + hi exactly as th + tl, then th + RO(tl + lo). */
double qd_fma_f64(double a, double b, double c) {
  if (isinf(a) || isnan(a) || isinf(b) || isnan(b) || isinf(c) || isnan(c) || abs(a) > 1e300lf || abs(b) > 1e300lf)
    return fma(a, b, c);
  double ul;
  precise double uh = qd_two_prod_f64(a, b, ul);
  if (isinf(uh)) return fma(a, b, c);
  if (uh == 0.0lf || c == 0.0lf) return uh + c;
  precise double th = c + uh;
  precise double t1 = th - c;
  precise double tl = (c - (th - t1)) + (uh - t1);
  precise double v = tl + ul;
  precise double t2 = v - tl;
  precise double ve = (tl - (v - t2)) + (ul - t2);
  uint64_t bits = doubleBitsToUint64(v);
  if (ve != 0.0lf && (bits & 1ul) == 0ul) bits = (ve > 0.0lf) == (v > 0.0lf) ? bits + 1ul : bits - 1ul;
  precise double z = th + uint64BitsToDouble(bits);
  return z;
}
)"},
    {"scale_f64", "", glsl_snippet::when::always, R"(
/* v * 2^k with one rounding, for k in [-1076, 1025]. */
double qd_scale_f64(double v, int k) {
  precise double r;
  if (k > 1023) r = v * uint64BitsToDouble(0x7fe0000000000000ul) * uint64BitsToDouble(uint64_t(k) << 52);
  else if (k < -1022) r = v * uint64BitsToDouble(uint64_t(k + 1151) << 52) * uint64BitsToDouble(0x37f0000000000000ul);
  else r = v * uint64BitsToDouble(uint64_t(k + 1023) << 52);
  return r;
}
)"},
    {"expc_f64", "scale_f64", glsl_snippet::when::always, R"(
/* e^(x + c) for a small correction c: x = k ln2 + r (ln2 in two parts), Taylor to r^13. */
const double qd_exp_taylor_f64[12] = double[12](0.5lf, 0.16666666666666666lf, 0.041666666666666664lf,
    0.0083333333333333332lf, 0.0013888888888888889lf, 0.00019841269841269841lf, 2.4801587301587302e-05lf,
    2.7557319223985893e-06lf, 2.7557319223985888e-07lf, 2.505210838544172e-08lf, 2.08767569878681e-09lf,
    1.6059043836821613e-10lf);
double qd_expc_f64(double x, double c) {
  if (isnan(x)) return x;
  if (x > 710.0lf) return uint64BitsToDouble(0x7ff0000000000000ul);
  if (x < -746.0lf) return 0.0lf;
  precise double k = floor(x * uint64BitsToDouble(0x3ff71547652b82feul) + 0.5lf);
  precise double r = ((x - k * uint64BitsToDouble(0x3fe62e42fee00000ul)) - k * uint64BitsToDouble(0x3dea39ef35793c76ul)) + c;
  precise double q = qd_exp_taylor_f64[11];
  for (int i = 10; i >= 0; --i) q = qd_exp_taylor_f64[i] + r * q;
  precise double e = 1.0lf + (r + r * r * q);
  return qd_scale_f64(e, int(k));
}
)"},
    {"exp_f64", "expc_f64", glsl_snippet::when::always, R"(
double qd_exp_f64(double x) { return qd_expc_f64(x, 0.0lf); }
)"},
    {"two_prod_f64", "", glsl_snippet::when::always, R"(
/* a b = hi + lo exactly (Veltkamp's split and Dekker's product: no fused operation needed). */
double qd_two_prod_f64(double a, double b, out double lo) {
  precise double p = a * b;
  precise double ca = 134217729.0lf * a;
  precise double ah = ca - (ca - a);
  precise double al = a - ah;
  precise double cb = 134217729.0lf * b;
  precise double bh = cb - (cb - b);
  precise double bl = b - bh;
  precise double l = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
  lo = l;
  return p;
}
)"},
    {"log_dd_f64", "two_prod_f64", glsl_snippet::when::always, R"(
/* log(x) = hi + lo for finite x > 0, to about 2^-60: x = 2^e m, m in [sqrt(1/2), sqrt(2)],
   s = (m - 1) / (m + 1) kept as s + sl, log m = 2 s + s R(s^2) (the atanh series). */
const double qd_log_atanh_f64[10] = double[10](0.66666666666666663lf, 0.40000000000000002lf, 0.2857142857142857lf,
    0.22222222222222221lf, 0.18181818181818182lf, 0.15384615384615385lf, 0.13333333333333333lf,
    0.11764705882352941lf, 0.10526315789473684lf, 0.095238095238095233lf);
double qd_log_dd_f64(double x, out double lo) {
  int e = 0;
  if (x < uint64BitsToDouble(0x0010000000000000ul)) { x *= 18014398509481984.0lf; e = -54; }
  uint64_t b = doubleBitsToUint64(x);
  e += int(b >> 52) - 1023;
  precise double m = uint64BitsToDouble((b & 0x000ffffffffffffful) | 0x3ff0000000000000ul);
  if (m > uint64BitsToDouble(0x3ff6a09e667f3bcdul)) { m *= 0.5lf; e += 1; }
  precise double f = m - 1.0lf;
  precise double uh = 2.0lf + f;
  precise double ul = f - (uh - 2.0lf);
  precise double s = f / uh;
  double perr;
  precise double p = qd_two_prod_f64(s, uh, perr);
  precise double sl = (((f - p) - perr) - s * ul) / uh;
  precise double z = s * s;
  precise double R = qd_log_atanh_f64[9];
  for (int i = 8; i >= 0; --i) R = qd_log_atanh_f64[i] + z * R;
  R = z * R;
  precise double fe = double(e);
  precise double a = fe * uint64BitsToDouble(0x3fe62e42fee00000ul);
  precise double s2 = 2.0lf * s;
  precise double sum = a + s2;
  precise double bb = sum - a;
  precise double err = (a - (sum - bb)) + (s2 - bb);
  precise double tail = err + (fe * uint64BitsToDouble(0x3dea39ef35793c76ul) + 2.0lf * sl + s * R);
  precise double hi = sum + tail;
  precise double l = tail - (hi - sum);
  lo = l;
  return hi;
}
)"},
    {"log_f64", "log_dd_f64", glsl_snippet::when::always, R"(
double qd_log_f64(double x) {
  if (isnan(x) || x < 0.0lf) return uint64BitsToDouble(0x7ff8000000000000ul);
  if (x == 0.0lf) return uint64BitsToDouble(0xfff0000000000000ul);
  if (isinf(x)) return x;
  double lo;
  return qd_log_dd_f64(x, lo);
}
)"},
    {"sincos_f64", "", glsl_snippet::when::always, R"(
/* x = k pi/2 + r with pi/2 in five parts (exact products for |x| < 2.1e8); Taylor
   polynomials on |r| <= pi/4: sin to r^17, cos to r^18. */
const double qd_sin_taylor_f64[8] = double[8](-0.16666666666666666lf, 0.0083333333333333332lf,
    -0.00019841269841269841lf, 2.7557319223985893e-06lf, -2.505210838544172e-08lf, 1.6059043836821613e-10lf,
    -7.6471637318198164e-13lf, 2.8114572543455206e-15lf);
const double qd_cos_taylor_f64[8] = double[8](0.041666666666666664lf, -0.0013888888888888889lf,
    2.4801587301587302e-05lf, -2.7557319223985888e-07lf, 2.08767569878681e-09lf, -1.1470745597729725e-11lf,
    4.7794773323873853e-14lf, -1.5619206968586225e-16lf);
double qd_reduce_f64(double x, out int q) {
  precise double k = floor(x * uint64BitsToDouble(0x3fe45f306dc9c883ul) + 0.5lf);
  precise double k4 = k - 4.0lf * floor(k * 0.25lf);
  q = int(k4);
  precise double r = ((((x - k * uint64BitsToDouble(0x3ff921fb50000000ul)) - k * uint64BitsToDouble(0x3e5110b460000000ul)) -
                       k * uint64BitsToDouble(0x3c91a62630000000ul)) - k * uint64BitsToDouble(0x3ae8a2e030000000ul)) -
                     k * uint64BitsToDouble(0x394c1cd129024e09ul);
  /* Past 2.1e8 the products are no longer exact and r loses accuracy; keep it in range. */
  if (abs(r) > 1.0lf) r -= uint64BitsToDouble(0x401921fb54442d18ul) * floor(r * uint64BitsToDouble(0x3fc45f306dc9c883ul) + 0.5lf);
  return r;
}
double qd_sin_poly_f64(double r) {
  precise double z = r * r;
  precise double p = qd_sin_taylor_f64[7];
  for (int i = 6; i >= 0; --i) p = qd_sin_taylor_f64[i] + z * p;
  precise double s = r + r * z * p;
  return s;
}
double qd_cos_poly_f64(double r) {
  precise double z = r * r;
  precise double p = qd_cos_taylor_f64[7];
  for (int i = 6; i >= 0; --i) p = qd_cos_taylor_f64[i] + z * p;
  precise double c = 1.0lf - 0.5lf * z + z * z * p;
  return c;
}
double qd_sin_f64(double x) {
  if (isnan(x)) return x;
  if (isinf(x)) return uint64BitsToDouble(0x7ff8000000000000ul);
  int q;
  double r = qd_reduce_f64(x, q);
  double s = (q & 1) == 0 ? qd_sin_poly_f64(r) : qd_cos_poly_f64(r);
  return q >= 2 ? -s : s;
}
double qd_cos_f64(double x) {
  if (isnan(x)) return x;
  if (isinf(x)) return uint64BitsToDouble(0x7ff8000000000000ul);
  int q;
  double r = qd_reduce_f64(x, q);
  double c = (q & 1) == 0 ? qd_cos_poly_f64(r) : qd_sin_poly_f64(r);
  return q == 1 || q == 2 ? -c : c;
}
)"},
    {"tanh_f64", "expc_f64", glsl_snippet::when::always, R"(
/* tanh: e / (e + 2) with e = e^2|x| - 1 (Taylor to the 20th power) below 0.55, else
   1 - 2 / (e^2|x| + 1). */
const double qd_expm1_taylor_f64[19] = double[19](0.5lf, 0.16666666666666666lf, 0.041666666666666664lf,
    0.0083333333333333332lf, 0.0013888888888888889lf, 0.00019841269841269841lf, 2.4801587301587302e-05lf,
    2.7557319223985893e-06lf, 2.7557319223985888e-07lf, 2.505210838544172e-08lf, 2.08767569878681e-09lf,
    1.6059043836821613e-10lf, 1.1470745597729725e-11lf, 7.6471637318198164e-13lf, 4.7794773323873853e-14lf,
    2.8114572543455206e-15lf, 1.5619206968586225e-16lf, 8.2206352466243295e-18lf, 4.1103176233121648e-19lf);
double qd_tanh_f64(double x) {
  if (isnan(x) || x == 0.0lf) return x;
  precise double a = abs(x);
  precise double r;
  if (a > 22.0lf) {
    r = 1.0lf;
  } else if (a < 0.55lf) {
    precise double y = 2.0lf * a;
    precise double q = qd_expm1_taylor_f64[18];
    for (int i = 17; i >= 0; --i) q = qd_expm1_taylor_f64[i] + y * q;
    precise double e = y + y * y * q;
    r = e / (e + 2.0lf);
  } else {
    r = 1.0lf - 2.0lf / (qd_expc_f64(2.0lf * a, 0.0lf) + 1.0lf);
  }
  return x < 0.0lf ? -r : r;
}
)"},
    {"powpos_f64", "log_dd_f64 two_prod_f64 expc_f64", glsl_snippet::when::always, R"(
/* a^y for finite a > 0 and finite y: e^(y log a) with log a and the product in double-double. */
double qd_powpos_f64(double a, double y) {
  double llo;
  precise double lhi = qd_log_dd_f64(a, llo);
  precise double estimate = y * lhi;
  if (abs(estimate) > 746.0lf) return estimate > 0.0lf ? uint64BitsToDouble(0x7ff0000000000000ul) : 0.0lf;
  double perr;
  precise double p = qd_two_prod_f64(y, lhi, perr);
  precise double plo = perr + y * llo;
  return qd_expc_f64(p, plo);
}
)"},
    {"pow_f64", "powpos_f64", glsl_snippet::when::always, R"(
/* pow with C's special cases (pow(x, 0) = 1, pow(1, y) = 1, negative x with integer y). */
double qd_pow_f64(double x, double y) {
  if (y == 0.0lf || x == 1.0lf) return 1.0lf;
  if (isnan(x) || isnan(y)) return uint64BitsToDouble(0x7ff8000000000000ul);
  precise double a = abs(x);
  if (isinf(y)) return a == 1.0lf ? 1.0lf : ((a < 1.0lf) == (y > 0.0lf) ? 0.0lf : uint64BitsToDouble(0x7ff0000000000000ul));
  bool y_int = floor(y) == y;
  bool y_odd = y_int && abs(y) < 9007199254740992.0lf && (floor(abs(y) * 0.5lf) * 2.0lf != abs(y));
  bool negative = doubleBitsToUint64(x) >= 0x8000000000000000ul;
  if (isinf(x) || x == 0.0lf) {
    double r = (y > 0.0lf) == isinf(x) ? uint64BitsToDouble(0x7ff0000000000000ul) : 0.0lf;
    return negative && y_odd ? -r : r;
  }
  if (negative && !y_int) return uint64BitsToDouble(0x7ff8000000000000ul);
  double r = qd_powpos_f64(a, y);
  return negative && y_odd ? -r : r;
}
)"},
    {"f16", "f16_from_f32", glsl_snippet::when::always, R"(
/* binary16 kept as its bits in a uint, as codegen/prelude.hpp's qd_f16: to f32 exactly (from f32
   and f64 by the generated f16_from_f32 and f16_from_f64). */
float qd_f16_to_f32(uint h) {
  uint sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 31u) return uintBitsToFloat(sign | 0x7f800000u | (m << 13));
  if (e == 0u) { precise float v = float(m) * uintBitsToFloat(0x33800000u); return sign != 0u ? -v : v; }
  return uintBitsToFloat(sign | ((e + 112u) << 23) | (m << 13));
}
)"},
    {"tan_f64", "sincos_f64", glsl_snippet::when::always, R"(
/* tan from the sine and cosine polynomials of the reduced argument: s / c, or -c / s for odd q. */
double qd_tan_kernel_f64(double r, int q) {
  double s = qd_sin_poly_f64(r), c = qd_cos_poly_f64(r);
  precise double t = (q & 1) == 0 ? s / c : -c / s;
  return t;
}
double qd_tan_f64(double x) {
  if (isnan(x) || x == 0.0lf) return x;
  if (isinf(x)) return uint64BitsToDouble(0x7ff8000000000000ul);
  int q;
  double r = qd_reduce_f64(x, q);
  return qd_tan_kernel_f64(r, q);
}
)"},
    {"tan_f32", "tan_f64 reduce_f32", glsl_snippet::when::with_f64, R"(
/* In f64: its five-part reduction is exact below 2.1e8; past it, f32's exact reduction. */
float qd_tan_f32(float x) {
  if (abs(x) < 1e8) return float(qd_tan_f64(double(x)));
  if (isnan(x) || isinf(x)) return uintBitsToFloat(0x7fc00000u);
  int q;
  float r = qd_reduce_f32(x, q);
  return float(qd_tan_kernel_f64(double(r), q));
}
)"},
    {"atan_f64", "", glsl_snippet::when::always, R"(
/* atan(u) for |u| <= tan(pi/8) by its Taylor series to u^47; atan(t) for t in [0, 1] as hi + lo:
   above tan(pi/8), pi/4 + atan((t - 1) / (t + 1)). atan2 by octant, asin and acos through it. */
const double qd_atan_taylor_f64[23] = double[23](-0.3333333333333333lf, 0.2lf, -0.14285714285714285lf,
    0.1111111111111111lf, -0.09090909090909091lf, 0.07692307692307693lf, -0.06666666666666667lf,
    0.058823529411764705lf, -0.05263157894736842lf, 0.047619047619047616lf, -0.043478260869565216lf, 0.04lf,
    -0.037037037037037035lf, 0.034482758620689655lf, -0.03225806451612903lf, 0.030303030303030304lf,
    -0.02857142857142857lf, 0.02702702702702703lf, -0.02564102564102564lf, 0.024390243902439025lf,
    -0.023255813953488372lf, 0.022222222222222223lf, -0.02127659574468085lf);
double qd_atan_poly_f64(double u) {
  precise double z = u * u;
  precise double p = qd_atan_taylor_f64[22];
  for (int i = 21; i >= 0; --i) p = qd_atan_taylor_f64[i] + z * p;
  precise double a = u + u * z * p;
  return a;
}
double qd_atan01_f64(double t, out double lo) {
  if (t > 0.41421356237309503lf) {
    precise double u = (t - 1.0lf) / (t + 1.0lf);
    precise double a = qd_atan_poly_f64(u);
    precise double hi = uint64BitsToDouble(0x3fe921fb54442d18ul) + a;
    precise double l = ((uint64BitsToDouble(0x3fe921fb54442d18ul) - hi) + a) + uint64BitsToDouble(0x3c81a62633145c07ul);
    lo = l;
    return hi;
  }
  lo = 0.0lf;
  return qd_atan_poly_f64(t);
}
double qd_atan2_f64(double y, double x) {
  if (isnan(x) || isnan(y)) return uint64BitsToDouble(0x7ff8000000000000ul);
  bool ny = doubleBitsToUint64(y) >= 0x8000000000000000ul, nx = doubleBitsToUint64(x) >= 0x8000000000000000ul;
  double ay = abs(y), ax = abs(x);
  double pi_hi = uint64BitsToDouble(0x400921fb54442d18ul), pi_lo = uint64BitsToDouble(0x3ca1a62633145c07ul);
  double pio2_hi = uint64BitsToDouble(0x3ff921fb54442d18ul), pio2_lo = uint64BitsToDouble(0x3c91a62633145c07ul);
  precise double r;
  if (ay == 0.0lf) r = nx ? pi_hi : 0.0lf;
  else if (isinf(ay) && isinf(ax)) r = nx ? uint64BitsToDouble(0x4002d97c7f3321d2ul) : uint64BitsToDouble(0x3fe921fb54442d18ul);
  else if (ax == 0.0lf || isinf(ay)) r = pio2_hi;
  else if (isinf(ax)) r = nx ? pi_hi : 0.0lf;
  else {
    double lo;
    if (ay <= ax) {
      precise double hi = qd_atan01_f64(ay / ax, lo);
      r = nx ? (pi_hi - hi) + (pi_lo - lo) : hi + lo;
    } else {
      precise double hi = qd_atan01_f64(ax / ay, lo);
      r = nx ? (pio2_hi + hi) + (pio2_lo + lo) : (pio2_hi - hi) + (pio2_lo - lo);
    }
  }
  return ny ? -r : r;
}
double qd_asin_f64(double x) {
  if (isnan(x) || abs(x) > 1.0lf) return uint64BitsToDouble(0x7ff8000000000000ul);
  if (x == 0.0lf) return x;
  precise double c = sqrt((1.0lf - x) * (1.0lf + x));
  return qd_atan2_f64(x, c);
}
double qd_acos_f64(double x) {
  if (isnan(x) || abs(x) > 1.0lf) return uint64BitsToDouble(0x7ff8000000000000ul);
  precise double r = 2.0lf * qd_atan2_f64(sqrt(1.0lf - x), sqrt(1.0lf + x));
  return r;
}
)"},
    {"atan_f32", "atan_f64", glsl_snippet::when::with_f64, R"(
float qd_atan2_f32(float y, float x) { return float(qd_atan2_f64(double(y), double(x))); }
float qd_asin_f32(float x) { return float(qd_asin_f64(double(x))); }
float qd_acos_f32(float x) { return float(qd_acos_f64(double(x))); }
)"},
    {"log2_f64", "log_dd_f64 two_prod_f64", glsl_snippet::when::always, R"(
/* log2(x) = e + log(m) / ln 2 with log(m) in double-double (m in [sqrt(1/2), sqrt(2)]):
   exact for powers of two. */
double qd_log2_f64(double x) {
  if (isnan(x) || x < 0.0lf) return uint64BitsToDouble(0x7ff8000000000000ul);
  if (x == 0.0lf) return uint64BitsToDouble(0xfff0000000000000ul);
  if (isinf(x)) return x;
  int e = 0;
  if (x < uint64BitsToDouble(0x0010000000000000ul)) { x *= 18014398509481984.0lf; e = -54; }
  uint64_t b = doubleBitsToUint64(x);
  e += int(b >> 52) - 1023;
  precise double m = uint64BitsToDouble((b & 0x000ffffffffffffful) | 0x3ff0000000000000ul);
  if (m > uint64BitsToDouble(0x3ff6a09e667f3bcdul)) { m *= 0.5lf; e += 1; }
  double lo, plo;
  precise double hi = qd_log_dd_f64(m, lo);
  precise double p = qd_two_prod_f64(hi, uint64BitsToDouble(0x3ff71547652b82feul), plo);
  precise double tail = plo + (hi * uint64BitsToDouble(0x3c7777d0ffda0d24ul) + lo * uint64BitsToDouble(0x3ff71547652b82feul));
  precise double fe = double(e);
  precise double s = fe + p;
  precise double bb = s - fe;
  precise double err = (fe - (s - bb)) + (p - bb);
  precise double r = s + (err + tail);
  return r;
}
)"},
    {"exp2_f64", "expc_f64 two_prod_f64", glsl_snippet::when::always, R"(
/* 2^x = e^(x ln 2) with x ln 2 in double-double: exact for integers. */
double qd_exp2_f64(double x) {
  if (isnan(x)) return x;
  if (x >= 1024.0lf) return uint64BitsToDouble(0x7ff0000000000000ul);
  if (x < -1080.0lf) return 0.0lf;
  double plo;
  precise double p = qd_two_prod_f64(x, uint64BitsToDouble(0x3fe62e42fefa39eful), plo);
  precise double c = plo + x * uint64BitsToDouble(0x3c7abc9e3b39803ful);
  return qd_expc_f64(p, c);
}
)"},
    {"log2_f32", "log2_f64", glsl_snippet::when::with_f64, R"(
float qd_log2_f32(float x) { return float(qd_log2_f64(double(x))); }
)"},
    {"exp2_f32", "exp2_f64", glsl_snippet::when::with_f64, R"(
float qd_exp2_f32(float x) { return float(qd_exp2_f64(double(x))); }
)"},
};

}  // namespace qd::inline v0::codegen
