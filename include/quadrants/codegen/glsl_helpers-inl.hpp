// Implementation of codegen/glsl_helpers.hpp.
#pragma once

#include "quadrants/base/error.hpp"
#include "quadrants/codegen/glsl_emitter.hpp"
#include "quadrants/codegen/glsl_helpers.hpp"
#include "quadrants/codegen/glsl_math.hpp"
#include "quadrants/codegen/glsl_prelude.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::codegen {

QD_FUNC std::string glsl_narrow(dtype t, const std::string& x) {
  switch (t) {
    case dtype::i8: return fmt::format("bitfieldExtract({}, 0, 8)", x);
    case dtype::i16: return fmt::format("bitfieldExtract({}, 0, 16)", x);
    case dtype::u8: return fmt::format("({} & 0xffu)", x);
    case dtype::u16: return fmt::format("({} & 0xffffu)", x);
    case dtype::boolean:
    case dtype::i32:
    case dtype::u32:
    case dtype::i64:
    case dtype::u64:
    case dtype::f16:
    case dtype::f32:
    case dtype::f64: break;
  }
  return x;
}

QD_FUNC std::string glsl_update(ir::atomic_op o, dtype t, const std::string& old, const std::string& v,
                                const std::string& expected) {
  const bool half = t == dtype::f16;
  auto wide = [&](const std::string& x) { return half ? fmt::format("qd_f16_to_f32({})", x) : x; };
  auto arithmetic = [&](std::string_view op) {
    if (half) return fmt::format("qd_f32_to_f16({} {} {})", wide(old), op, wide(v));
    return glsl_narrow(t, fmt::format("({} {} {})", old, op, v));
  };
  auto extreme = [&](std::string_view cmp) {
    if (is_float(t))  // minNum/maxNum: a NaN operand never replaces a number; a stored NaN is replaced
      return fmt::format("(({0} {1} {2} || isnan({2})) ? {3} : {4})", wide(v), cmp, wide(old), v, old);
    return fmt::format("({0} {1} {2} ? {0} : {2})", v, cmp, old);
  };
  switch (o) {
    case ir::atomic_op::add: return arithmetic("+");
    case ir::atomic_op::sub: return arithmetic("-");
    case ir::atomic_op::mul: return arithmetic("*");
    case ir::atomic_op::min: return extreme("<");
    case ir::atomic_op::max: return extreme(">");
    case ir::atomic_op::bit_and: return fmt::format("({} & {})", old, v);
    case ir::atomic_op::bit_or: return fmt::format("({} | {})", old, v);
    case ir::atomic_op::bit_xor: return fmt::format("({} ^ {})", old, v);
    case ir::atomic_op::exchange: return v;
    case ir::atomic_op::cas:
      if (t == dtype::f32)
        return fmt::format("(floatBitsToUint({}) == floatBitsToUint({}) ? {} : {})", old, expected, v, old);
      if (t == dtype::f64)
        return fmt::format("(doubleBitsToUint64({}) == doubleBitsToUint64({}) ? {} : {})", old, expected, v, old);
      return fmt::format("({} == {} ? {} : {})", old, expected, v, old);  // f16: its bits
  }
  return v;
}

namespace detail {

QD_FUNC dtype dtype_named(std::string_view s) {
  for (dtype t : {dtype::boolean, dtype::u8, dtype::i32, dtype::u32, dtype::i64, dtype::f32, dtype::f64, dtype::i8,
                  dtype::i16, dtype::u16, dtype::u64, dtype::f16})
    if (name(t) == s) return t;
  throw internal_error(fmt::format("GLSL helpers: no type '{}'", s));
}

// atomic_<op>_<type>(address, value[, expected], out old). <op>: add sub min max mul and or
// xor xchg cas. The old value comes back through an `out` parameter, not as the return
// value: glslang's propagation of `precise` into a function whose return value is an
// atomic's (a `precise` value assigned from such a call) ran out of memory (over 20 GB). Native atomics for 32- and 64-bit integers (64-bit ones need
// shaderBufferInt64Atomics, checked by the emitter), float add where the device has it,
// float exchange and cas on the bits; the rest a compare-and-swap loop on the element's
// word, or for 8- and 16-bit types on the aligned 32-bit word holding it (allocations are
// rounded up to 8 bytes).
QD_FUNC glsl_helper atomic_helper(const std::string& name, const glsl_target& target) {
  const std::size_t split = name.rfind('_');
  const std::string_view op = std::string_view(name).substr(7, split - 7);
  const std::string_view t = std::string_view(name).substr(split + 1);
  const dtype type = dtype_named(t);
  const std::string_view vt = glsl_type(type);
  const bool cas = op == "cas";
  const std::string header = fmt::format("void qd_atomic_{1}_{2}(uint64_t p, {0} v{3}, out {0} result)", vt, op, t,
                                         cas ? fmt::format(", {} e", vt) : std::string());
  const int size = size_of(type);
  const bool integer = is_integral(type), wide = size == 8;
  // An operand of the atomic instruction itself (glsl_target::lavapipe_workarounds).
  auto operand = [&](const std::string& x) { return target.lavapipe_workarounds ? "qd_opaque(" + x + ")" : x; };
  const std::string_view ref = wide ? "qd_u64_ref" : "qd_u32_ref";
  const std::string_view word = wide ? "uint64_t" : "uint";
  if (integer && size >= 4 && op != "mul") {
    const std::string_view iref = type == dtype::i32   ? "qd_i32_ref"
                                  : type == dtype::u32 ? "qd_u32_ref"
                                  : type == dtype::i64 ? "qd_i64_ref"
                                                       : "qd_u64_ref";
    std::string call;
    if (op == "add" || op == "sub") {
      const std::string_view zero = type == dtype::u32 ? "0u" : type == dtype::u64 ? "0ul" : "";
      call = fmt::format("atomicAdd({}(p).v, {})", iref, operand(op == "add" ? "v" : fmt::format("{} - v", zero)));
    } else if (cas) {
      call = fmt::format("atomicCompSwap({}(p).v, {}, {})", iref, operand("e"), operand("v"));
    } else {
      const std::string_view f = op == "min"   ? "atomicMin"
                                 : op == "max" ? "atomicMax"
                                 : op == "and" ? "atomicAnd"
                                 : op == "or"  ? "atomicOr"
                                 : op == "xor" ? "atomicXor"
                                               : "atomicExchange";
      call = fmt::format("{}({}(p).v, {})", f, iref, operand("v"));
    }
    return fmt::format("{} {{ result = {}; }}\n", header, call);
  }
  if ((type == dtype::f32 && target.f32_atomic_add) || (type == dtype::f64 && target.f64_atomic_add))
    if (op == "add" || op == "sub")
      return fmt::format("{} {{ result = atomicAdd({}(p).v, {}v); }}\n", header, wide ? "qd_f64_ref" : "qd_f32_ref",
                         op == "sub" ? "-" : "");
  const std::string_view to_bits = wide ? "doubleBitsToUint64" : "floatBitsToUint";
  const std::string_view from_bits = wide ? "uint64BitsToDouble" : "uintBitsToFloat";
  if ((type == dtype::f32 || type == dtype::f64) && (op == "xchg" || cas)) {
    const std::string bits_v = operand(fmt::format("{}(v)", to_bits));
    const std::string call =
        cas ? fmt::format("atomicCompSwap({}(p).v, {}, {})", ref, operand(fmt::format("{}(e)", to_bits)), bits_v)
            : fmt::format("atomicExchange({}(p).v, {})", ref, bits_v);
    return fmt::format("{} {{ result = {}({}); }}\n", header, from_bits, call);
  }
  // A compare-and-swap loop: `old` is the value replaced.
  const ir::atomic_op o = op == "add"    ? ir::atomic_op::add
                          : op == "sub"  ? ir::atomic_op::sub
                          : op == "min"  ? ir::atomic_op::min
                          : op == "max"  ? ir::atomic_op::max
                          : op == "mul"  ? ir::atomic_op::mul
                          : op == "and"  ? ir::atomic_op::bit_and
                          : op == "or"   ? ir::atomic_op::bit_or
                          : op == "xor"  ? ir::atomic_op::bit_xor
                          : op == "xchg" ? ir::atomic_op::exchange
                                         : ir::atomic_op::cas;
  const std::string next = glsl_update(o, type, "old", "v", "e");
  std::vector<std::string> calls;
  if (type == dtype::f16) calls.emplace_back("f16");
  const std::string_view qualifier = type == dtype::f32 || type == dtype::f64 ? "precise " : "";
  if (size >= 4) {
    const std::string decode =
        type == dtype::f32 || type == dtype::f64 ? fmt::format("{}(prev)", from_bits) : fmt::format("{}(prev)", vt);
    const std::string encode =
        type == dtype::f32 || type == dtype::f64 ? fmt::format("{}(next)", to_bits) : fmt::format("{}(next)", word);
    return {fmt::format(R"({0} {{
  {1} r = {1}(p);
  {2} seen = r.v, prev;
  {3} old;
  do {{ prev = seen; old = {4}; {5}{3} next = {6}; seen = atomicCompSwap(r.v, prev, {7}); }} while (seen != prev);
  result = old;
}}
)",
                        header, ref, word, vt, decode, qualifier, next, encode),
            calls};
  }
  const std::string_view mask = size == 1 ? "0xffu" : "0xffffu";
  const std::string decode = is_signed(type) && type != dtype::f16
                                 ? glsl_narrow(type, "int((prev >> shift) & " + std::string(mask) + ")")
                                 : fmt::format("((prev >> shift) & {})", mask);
  return {fmt::format(R"({0} {{
  qd_u32_ref r = qd_u32_ref(p & ~3ul);
  uint shift = uint(p & 3ul) * 8u;
  uint seen = r.v, prev;
  {1} old;
  do {{
    prev = seen;
    old = {2};
    {1} next = {3};
    seen = atomicCompSwap(r.v, prev, (prev & ~({4} << shift)) | ((uint(next) & {4}) << shift));
  }} while (seen != prev);
  result = old;
}}
)",
                      header, vt, decode, next, mask),
          calls};
}

// Float to integer: truncation, saturating at the target's range, NaN gives 0
// (codegen/prelude.hpp's QD_TO_INT). to_<int>_<float>.
QD_FUNC std::string to_int_helper(const std::string& name) {
  const std::string_view to = std::string_view(name).substr(3, name.find('_', 3) - 3);
  const std::string_view from = std::string_view(name).substr(name.find('_', 3) + 1);
  const bool wide = from == "f64";
  const std::string_view ft = wide ? "double" : "float", fs = wide ? "lf" : "";
  std::string_view type = "int", hi = "2147483648.0", lo = "-2147483648.0", max = "2147483647",
                   min = "(-2147483647 - 1)", zero = "0";
  if (to == "u8") type = "uint", hi = "256.0", lo = "0.0", max = "255u", min = "0u", zero = "0u";
  if (to == "i8") hi = "128.0", lo = "-128.0", max = "127", min = "-128";
  if (to == "i16") hi = "32768.0", lo = "-32768.0", max = "32767", min = "-32768";
  if (to == "u16") type = "uint", hi = "65536.0", lo = "0.0", max = "65535u", min = "0u", zero = "0u";
  if (to == "u32") type = "uint", hi = "4294967296.0", lo = "0.0", max = "4294967295u", min = "0u", zero = "0u";
  if (to == "i64")
    type = "int64_t", hi = "9223372036854775808.0", lo = "-9223372036854775808.0", max = "9223372036854775807l",
    min = "(-9223372036854775807l - 1l)", zero = "0l";
  if (to == "u64")
    type = "uint64_t", hi = "18446744073709551616.0", lo = "0.0", max = "18446744073709551615ul", min = "0ul",
    zero = "0ul";
  return fmt::format(
      "{0} qd_to_{1}_{2}({3} x) {{ return x >= {4}{8} ? {6} : x >= {5}{8} ? {0}(x) : isnan(x) ? {9} : {7}; }}\n", type,
      to, from, ft, hi, lo, max, min, fs, zero);
}

// The operations on a float's bits, written once for f32 and f64: trunc (lavapipe's f64
// trunc() loses the sign of -0.5), C's round, C's fmod (exact: the significands' remainder
// by shift and subtract), Python's // and % (CPython's float_divmod, step by step, as
// codegen/prelude.hpp), and rounding to f16 (the prelude's QD_TO_F16). <op>_<f32|f64>.
QD_FUNC glsl_helper float_bits_helper(std::string_view op, std::string_view t) {
  const bool d = t == "f64";
  auto text = [&](std::string_view code) {
    return fmt::format(fmt::runtime(code), fmt::arg("T", t), fmt::arg("F", d ? "double" : "float"),
                       fmt::arg("U", d ? "uint64_t" : "uint"), fmt::arg("S", d ? "ul" : "u"),
                       fmt::arg("L", d ? "lf" : ""), fmt::arg("TO", d ? "doubleBitsToUint64" : "floatBitsToUint"),
                       fmt::arg("FROM", d ? "uint64BitsToDouble" : "uintBitsToFloat"), fmt::arg("M", d ? 52 : 23),
                       fmt::arg("MS", d ? 42 : 13), fmt::arg("HS", d ? 48 : 16), fmt::arg("EM", d ? "0x7ff" : "0xff"),
                       fmt::arg("B", d ? 1023 : 127), fmt::arg("SIGN", d ? "0x8000000000000000ul" : "0x80000000u"),
                       fmt::arg("ABS", d ? "0x7ffffffffffffffful" : "0x7fffffffu"),
                       fmt::arg("MANT", d ? "0x000ffffffffffffful" : "0x7fffffu"),
                       fmt::arg("TOP", d ? "0x0010000000000000ul" : "0x800000u"),
                       fmt::arg("INF", d ? "0x7ff0000000000000ul" : "0x7f800000u"),
                       fmt::arg("NAN", d ? "0xfff8000000000000ul" : "0xffc00000u"),
                       fmt::arg("QUIET", d ? "0x0008000000000000ul" : "0x00400000u"));
  };
  if (op == "trunc")
    return text(R"({F} qd_trunc_{T}({F} x) {{
  {U} b = {TO}(x);
  int e = int((b >> {M}) & {EM}{S}) - {B};
  if (e >= {M}) return x;
  if (e < 0) return {FROM}(b & {SIGN});
  return {FROM}(b & ~({MANT} >> uint(e)));
}}
)");
  if (op == "round")  // halfway cases away from zero; x - trunc(x) is exact
    return {text(R"({F} qd_round_{T}({F} x) {{
  precise {F} t = qd_trunc_{T}(x);
  precise {F} d = abs(x - t);
  return d >= 0.5{L} ? t + (x < 0.0{L} ? -1.0{L} : 1.0{L}) : t;
}}
)"),
            {fmt::format("trunc_{}", t)}};
  if (op == "fmod")
    return text(R"({F} qd_fmod_{T}({F} x, {F} y) {{
  {U} ux = {TO}(x), uy = {TO}(y) & {ABS}, sx = ux & {SIGN};
  ux &= {ABS};
  if (ux > {INF}) return {FROM}({TO}(x) | {QUIET});  /* NaNs as x86 makes them: an operand's, quieted, */
  if (uy > {INF}) return {FROM}({TO}(y) | {QUIET});
  if (uy == 0{S} || ux == {INF}) return {FROM}({NAN});  /* else the default NaN (negative) */
  if (ux < uy) return x;
  if (ux == uy) return {FROM}(sx);
  int ex = int(ux >> {M}), ey = int(uy >> {M});
  {U} mx = ux & {MANT}, my = uy & {MANT};
  if (ex == 0) {{ ex = 1; while ((mx & {TOP}) == 0{S}) {{ mx <<= 1; --ex; }} }} else mx |= {TOP};
  if (ey == 0) {{ ey = 1; while ((my & {TOP}) == 0{S}) {{ my <<= 1; --ey; }} }} else my |= {TOP};
  for (; ex > ey; --ex) {{ if (mx >= my) mx -= my; mx <<= 1; }}
  if (mx >= my) mx -= my;
  if (mx == 0{S}) return {FROM}(sx);
  while ((mx & {TOP}) == 0{S}) {{ mx <<= 1; --ex; }}
  return {FROM}(sx | (ex > 0 ? ({U}(ex) << {M}) | (mx & {MANT}) : mx >> uint(1 - ex)));
}}
)");
  if (op == "floor_ops")
    return {text(R"({F} qd_zero_like_{T}({F} x) {{ return {FROM}({TO}(x) & {SIGN}); }}
{F} qd_floormod_{T}({F} a, {F} b) {{
  precise {F} m = qd_fmod_{T}(a, b);
  if (m != 0.0{L}) {{ if ((b < 0.0{L}) != (m < 0.0{L})) m += b; }} else m = qd_zero_like_{T}(b);
  return m;
}}
{F} qd_floordiv_{T}({F} a, {F} b) {{
  precise {F} m = qd_fmod_{T}(a, b);
  precise {F} d = (a - m) / b;
  if (m != 0.0{L} && (b < 0.0{L}) != (m < 0.0{L})) d -= 1.0{L};
  if (d == 0.0{L}) {{ precise {F} q = a / b; return qd_zero_like_{T}(q); }}
  precise {F} f = floor(d);
  if (d - f > 0.5{L}) f += 1.0{L};
  return f;
}}
)"),
            {fmt::format("fmod_{}", t)}};
  if (op == "f16_from")  // to nearest even, on the bits
    return text(R"(uint qd_{T}_to_f16({F} f) {{
  {U} x = {TO}(f), a = x & {ABS}, units, full;
  uint sign = uint(x >> {HS}) & 0x8000u;
  if (a >= {INF}) return sign | (a == {INF} ? 0x7c00u : 0x7e00u | uint((a >> {MS}) & 0x3ff{S}));
  int e = int(a >> {M}), e16 = e - {B} + 15, shift;
  {U} m = a & {MANT};
  if (e16 >= 31) return sign | 0x7c00u;
  if (e16 >= 1) {{ shift = {MS}; full = m; units = ({U}(e16) << 10) | (m >> {MS}); }}
  else {{
    shift = {M} - 9 - e16;
    if (e == 0 || shift > {M} + 1) return sign;
    full = m | {TOP}; units = full >> uint(shift);
  }}
  {U} rest = full & ((1{S} << uint(shift)) - 1{S}), halfway = 1{S} << uint(shift - 1);
  if (rest > halfway || (rest == halfway && (units & 1{S}) != 0{S})) ++units;
  return sign | uint(units);
}}
)");
  throw internal_error(fmt::format("GLSL helpers: no helper '{}_{}'", op, t));
}

// The helpers generated per type and target (the math comes from glsl_math.hpp).
QD_FUNC glsl_helper generated_helper(const std::string& name, const glsl_target& target) {
  if (name == "report")
    return R"(
/* The first failed check wins the error record: a flag (1 index or assertion, 2 loop bound), then param, dim, index, extent. */
void qd_report(uint code, int64_t param, int64_t dim, int64_t index, int64_t extent) {
  if (atomicCompSwap(qd_u32_ref(qd_push.error).v, 0u, code) != 0u) return;
  qd_i64_ref(qd_push.error + 8ul).v = param;
  qd_i64_ref(qd_push.error + 16ul).v = dim;
  qd_i64_ref(qd_push.error + 24ul).v = index;
  qd_i64_ref(qd_push.error + 32ul).v = extent;
}
bool qd_check_index(int param, int dim, int64_t index, int64_t extent) {
  if (uint64_t(index) < uint64_t(extent)) return true;
  qd_report(1u, int64_t(param), int64_t(dim), index, extent);
  return false;
}
int qd_bound(int64_t value, int on_overflow) {
  if (value >= -2147483648l && value <= 2147483647l) return int(value);
  qd_report(2u, 0l, 0l, value, 0l);
  return on_overflow;
}
)";
  if (name == "print")
    return fmt::format(R"(
/* qd::print records: [site + 1 << 32 | values, values...] in 64-bit words after an 8-byte header. */
uint qd_print_alloc(uint words) {{
  uint at = atomicAdd(qd_u32_ref(qd_push.print).v, words);
  return at + words <= {}u ? at : 0xffffffffu;
}}
)",
                       glsl_print_words);
  if (name == "rng")
    return R"(
/* Counter-based random numbers, as codegen/prelude.hpp: a draw is a function of (stream, iteration, draw number). */
uint64_t qd_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ul;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebul;
  return z ^ (z >> 31);
}
uint64_t qd_rng_init(uint64_t stream, uint64_t index) { return qd_mix64(stream ^ qd_mix64(index + 0x9e3779b97f4a7c15ul)); }
uint64_t qd_rng_next(inout uint64_t s) { s += 0x9e3779b97f4a7c15ul; return qd_mix64(s); }
)";
  if (name.starts_with("random_")) {
    const dtype type = dtype_named(std::string_view(name).substr(7));
    std::string body;
    std::vector<std::string> calls = {"rng"};
    switch (type) {
      case dtype::f32: body = "float(uint(qd_rng_next(s) >> 40)) * uintBitsToFloat(0x33800000u)"; break;
      case dtype::f64: body = "double(qd_rng_next(s) >> 11) * uint64BitsToDouble(0x3ca0000000000000ul)"; break;
      case dtype::f16:  // 11 random bits: exact in binary16, below 1
        body = "qd_f32_to_f16(float(uint(qd_rng_next(s) >> 53)) * uintBitsToFloat(0x3a000000u))";
        calls.emplace_back("f16");
        break;
      case dtype::i64: body = "int64_t(qd_rng_next(s))"; break;
      case dtype::u64: body = "qd_rng_next(s)"; break;
      case dtype::boolean: body = "(qd_rng_next(s) & 1ul) != 0ul"; break;
      case dtype::i32: body = "int(uint(qd_rng_next(s)))"; break;
      case dtype::i8:
      case dtype::i16: body = glsl_narrow(type, "int(uint(qd_rng_next(s)))"); break;
      case dtype::u8:
      case dtype::u16:
      case dtype::u32: body = glsl_narrow(type, "uint(qd_rng_next(s))"); break;
    }
    return {fmt::format("{} qd_{}(inout uint64_t s) {{ return {}; }}\n", glsl_type(type), name, body), calls};
  }
  if (name.starts_with("div_") || name.starts_with("mod_")) {
    const bool div = name.starts_with("div_");
    const std::string_view t = std::string_view(name).substr(4);
    if (t == "u32" || t == "u64") {
      const std::string_view type = t == "u32" ? "uint" : "uint64_t", z = t == "u32" ? "0u" : "0ul";
      return fmt::format("{0} qd_{1}_{2}({0} a, {0} b) {{ return b == {3} ? {3} : a {4} b; }}\n", type,
                         div ? "div" : "mod", t, z, div ? "/" : "%");
    }
    const std::string_view type = t == "i32" ? "int" : "int64_t";
    const std::string_view s = t == "i32" ? "" : "l";
    // Truncating division as C++; x / 0 is 0 and x / -1 wraps, as the other backends define them.
    if (div)
      return fmt::format("{0} qd_div_{1}({0} a, {0} b) {{ return b == 0{2} ? 0{2} : b == -1{2} ? -a : a / b; }}\n",
                         type, t, s);
    return fmt::format("{0} qd_mod_{1}({0} a, {0} b) {{ return b == 0{2} || b == -1{2} ? 0{2} : a - (a / b) * b; }}\n",
                       type, t, s);
  }
  if (name == "floor_ops_i32" || name == "floor_ops_i64") {  // Python's // and % of signed integers
    const std::string_view t = std::string_view(name).substr(10);
    const std::string_view type = t == "i32" ? "int" : "int64_t", z = t == "i32" ? "0" : "0l";
    return {fmt::format(R"({0} qd_floordiv_{1}({0} a, {0} b) {{
  {0} q = qd_div_{1}(a, b), r = qd_mod_{1}(a, b);
  return r != {2} && ((r < {2}) != (b < {2})) ? q - {3} : q;
}}
{0} qd_floormod_{1}({0} a, {0} b) {{
  {0} r = qd_mod_{1}(a, b);
  return r != {2} && ((r < {2}) != (b < {2})) ? r + b : r;
}}
)",
                        type, t, z, t == "i32" ? "1" : "1l"),
            {fmt::format("div_{}", t), fmt::format("mod_{}", t)}};
  }
  if (name.starts_with("to_")) return to_int_helper(name);
  if (name == "bits")
    return R"(
/* popcnt, clz and ffs of 32 and 64 bits: clz(0) is the width, ffs(0) is 0 (as the C++ backends). */
int qd_clz32(uint x) { return x == 0u ? 32 : 31 - findMSB(x); }
int qd_ffs32(uint x) { return findLSB(x) + 1; }
int qd_popc64(uint64_t x) { return bitCount(uint(x)) + bitCount(uint(x >> 32)); }
int qd_clz64(uint64_t x) { uint hi = uint(x >> 32); return hi != 0u ? 31 - findMSB(hi) : 32 + qd_clz32(uint(x)); }
int qd_ffs64(uint64_t x) {
  uint lo = uint(x), hi = uint(x >> 32);
  return lo != 0u ? findLSB(lo) + 1 : (hi != 0u ? findLSB(hi) + 33 : 0);
}
)";
  if (name == "u8_word" || name == "u16_word") {
    // Stores of 8- and 16-bit elements through their aligned 32-bit word (devices without 8-
    // or 16-bit storage): their bits cleared and set with atomics, so that neighbours stay
    // intact. (Loads are inline: glsl_emitter::load.)
    const bool bytes = name == "u8_word";
    return fmt::format(R"(
void qd_store_{0}(uint64_t p, uint v) {{
  uint shift = uint(p & {1}ul) * 8u;
  atomicAnd(qd_u32_ref(p & ~3ul).v, ~({2} << shift));
  atomicOr(qd_u32_ref(p & ~3ul).v, (v & {2}) << shift);
}}
)",
                       bytes ? "u8" : "u16", bytes ? 3 : 2, bytes ? "0xffu" : "0xffffu");
  }
  if (name.starts_with("atomic_")) return atomic_helper(name, target);
  if (name.ends_with("_f32") || name.ends_with("_f64")) {
    const std::string_view op = std::string_view(name).substr(0, name.size() - 4);
    if (op == "trunc" || op == "round" || op == "fmod" || op == "floor_ops" || op == "f16_from")
      return float_bits_helper(op, std::string_view(name).substr(name.size() - 3));
  }
  throw internal_error(fmt::format("GLSL helpers: no helper '{}'", name));
}

}  // namespace detail

QD_FUNC glsl_helper glsl_helper_code(const std::string& name, const glsl_target& target) {
  for (const glsl_snippet& s : glsl_math_snippets) {
    const bool applies =
        s.applies == glsl_snippet::when::always || (s.applies == glsl_snippet::when::with_f64) == target.f64;
    if (s.name != name || !applies) continue;
    glsl_helper h{std::string(s.code)};
    for (std::size_t at = 0; at < s.deps.size();) {
      const std::size_t end = std::min(s.deps.find(' ', at), s.deps.size());
      if (end > at) h.calls.emplace_back(s.deps.substr(at, end - at));
      at = end + 1;
    }
    return h;
  }
  return detail::generated_helper(name, target);
}

}  // namespace qd::inline v0::codegen
