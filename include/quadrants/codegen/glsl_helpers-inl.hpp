// Implementation of codegen/glsl_helpers.hpp.
#pragma once

#include "quadrants/base/error.hpp"
#include "quadrants/codegen/glsl_emitter.hpp"
#include "quadrants/codegen/glsl_helpers.hpp"
#include "quadrants/codegen/glsl_math.hpp"
#include "quadrants/codegen/glsl_prelude.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::codegen {
namespace detail {

// atomic_<op>_<type>(address, value) -> the old value.
QD_FUNC std::string atomic_helper(const std::string& name, const glsl_target& target) {
  const std::size_t split = name.find('_', 7);
  const std::string_view op = std::string_view(name).substr(7, split - 7);
  const std::string_view t = std::string_view(name).substr(split + 1);
  const bool add = op == "add", sub = op == "sub";
  const std::string_view cmp = op == "min" ? "<" : ">";
  auto header = [&](std::string_view type) {
    return fmt::format("{0} qd_atomic_{1}_{2}(uint64_t p, {0} v)", type, op, t);
  };
  if (t == "i32" || t == "u32" || t == "i64") {
    const std::string_view type = t == "i32" ? "int" : t == "u32" ? "uint" : "int64_t";
    const std::string_view ref = t == "i32" ? "qd_i32_ref" : t == "u32" ? "qd_u32_ref" : "qd_i64_ref";
    const std::string call = add           ? "atomicAdd({}(p).v, v)"
                             : sub         ? (t == "u32" ? "atomicAdd({}(p).v, 0u - v)" : "atomicAdd({}(p).v, -v)")
                             : op == "min" ? "atomicMin({}(p).v, v)"
                                           : "atomicMax({}(p).v, v)";
    return fmt::format("{} {{ return {}; }}\n", header(type), fmt::format(fmt::runtime(call), ref));
  }
  if ((t == "f32" && target.f32_atomic_add && (add || sub)) || (t == "f64" && target.f64_atomic_add && (add || sub)))
    return fmt::format("{} {{ return atomicAdd({}(p).v, {}v); }}\n", header(t == "f32" ? "float" : "double"),
                       t == "f32" ? "qd_f32_ref" : "qd_f64_ref", sub ? "-" : "");
  // Compare-and-swap on the bits; `old` is the value replaced. min and max keep the old
  // value unless v compares below (above) it, so a NaN never replaces it.
  const std::string update = add ? "old + v" : sub ? "old - v" : fmt::format("v {} old ? v : old", cmp);
  if (t == "f32" || t == "f64") {
    const bool wide = t == "f64";
    return fmt::format(R"({0} {{
  {1} r = {1}(p);
  {2} seen = r.v, prev;
  {3} old;
  do {{ prev = seen; old = {4}(prev); precise {3} next = {5}; seen = atomicCompSwap(r.v, prev, {6}(next)); }} while (seen != prev);
  return old;
}}
)",
                       header(wide ? "double" : "float"), wide ? "qd_u64_ref" : "qd_u32_ref",
                       wide ? "uint64_t" : "uint", wide ? "double" : "float",
                       wide ? "uint64BitsToDouble" : "uintBitsToFloat", update,
                       wide ? "doubleBitsToUint64" : "floatBitsToUint");
  }
  if (t == "u8")  // on the aligned word holding the byte (allocations are rounded up to 8 bytes)
    return fmt::format(R"({0} {{
  qd_u32_ref r = qd_u32_ref(p & ~3ul);
  uint shift = uint(p & 3ul) * 8u;
  uint seen = r.v, prev, old;
  do {{
    prev = seen;
    old = (prev >> shift) & 0xffu;
    uint next = ({1}) & 0xffu;
    seen = atomicCompSwap(r.v, prev, (prev & ~(0xffu << shift)) | (next << shift));
  }} while (seen != prev);
  return old;
}}
)",
                       header("uint"), update);
  throw internal_error(fmt::format("GLSL helpers: no atomic '{}'", name));
}

// The helpers generated per type and target (the math comes from glsl_math.hpp).
QD_FUNC glsl_helper generated_helper(const std::string& name, const glsl_target& target) {
  if (name == "report")
    return R"(
/* The first failed check wins the error record: a flag (1 index, 2 loop bound), then param, dim, index, extent. */
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
    const std::string_view t = std::string_view(name).substr(7);
    std::string_view body = "";
    if (t == "f32")
      body = "float(uint(qd_rng_next(s) >> 40)) * uintBitsToFloat(0x33800000u)";
    else if (t == "f64")
      body = "double(qd_rng_next(s) >> 11) * uint64BitsToDouble(0x3ca0000000000000ul)";
    else if (t == "i32")
      body = "int(uint(qd_rng_next(s)))";
    else if (t == "u32")
      body = "uint(qd_rng_next(s))";
    else if (t == "i64")
      body = "int64_t(qd_rng_next(s))";
    else if (t == "u8")
      body = "uint(qd_rng_next(s)) & 0xffu";
    else if (t == "bool")
      body = "(qd_rng_next(s) & 1ul) != 0ul";
    const dtype type = t == "f32"    ? dtype::f32
                       : t == "f64"  ? dtype::f64
                       : t == "i32"  ? dtype::i32
                       : t == "i64"  ? dtype::i64
                       : t == "bool" ? dtype::boolean
                                     : dtype::u32;
    return {fmt::format("{} qd_random_{}(inout uint64_t s) {{ return {}; }}\n", glsl_type(type), t, body), {"rng"}};
  }
  if (name.starts_with("div_") || name.starts_with("mod_")) {
    const bool div = name.starts_with("div_");
    const std::string_view t = std::string_view(name).substr(4);
    if (t == "u32")
      return div ? "uint qd_div_u32(uint a, uint b) { return b == 0u ? 0u : a / b; }\n"
                 : "uint qd_mod_u32(uint a, uint b) { return b == 0u ? 0u : a % b; }\n";
    const std::string_view type = t == "i32" ? "int" : "int64_t";
    const std::string_view s = t == "i32" ? "" : "l";
    // Truncating division as C++; x / 0 is 0 and x / -1 wraps, as the other backends define them.
    if (div)
      return fmt::format("{0} qd_div_{1}({0} a, {0} b) {{ return b == 0{2} ? 0{2} : b == -1{2} ? -a : a / b; }}\n",
                         type, t, s);
    return fmt::format("{0} qd_mod_{1}({0} a, {0} b) {{ return b == 0{2} || b == -1{2} ? 0{2} : a - (a / b) * b; }}\n",
                       type, t, s);
  }
  if (name.starts_with("to_")) {  // to_<int>_<float>: truncation, saturating, NaN gives 0
    const std::string_view to = std::string_view(name).substr(3, name.find('_', 3) - 3);
    const std::string_view from = std::string_view(name).substr(name.find('_', 3) + 1);
    const bool wide = from == "f64";
    const std::string_view ft = wide ? "double" : "float", fs = wide ? "lf" : "";
    std::string_view type = "int", hi = "2147483648.0", lo = "-2147483648.0", max = "2147483647",
                     min = "(-2147483647 - 1)", zero = "0";
    if (to == "u8") type = "uint", hi = "256.0", lo = "0.0", max = "255u", min = "0u", zero = "0u";
    if (to == "u32") type = "uint", hi = "4294967296.0", lo = "0.0", max = "4294967295u", min = "0u", zero = "0u";
    if (to == "i64")
      type = "int64_t", hi = "9223372036854775808.0", lo = "-9223372036854775808.0", max = "9223372036854775807l",
      min = "(-9223372036854775807l - 1l)", zero = "0l";
    return fmt::format(
        "{0} qd_to_{1}_{2}({3} x) {{ return x >= {4}{8} ? {6} : x >= {5}{8} ? {0}(x) : isnan(x) ? {9} : "
        "{7}; }}\n",
        type, to, from, ft, hi, lo, max, min, fs, zero);
  }
  if (name == "u8_word")
    return R"(
/* u8 elements through their aligned 32-bit word (devices without 8-bit storage). */
uint qd_load_u8(uint64_t p) { return (qd_u32_ref(p & ~3ul).v >> (uint(p & 3ul) * 8u)) & 0xffu; }
uint qd_load_u8_volatile(uint64_t p) { return (qd_u32_vref(p & ~3ul).v >> (uint(p & 3ul) * 8u)) & 0xffu; }
void qd_store_u8(uint64_t p, uint v) {
  uint shift = uint(p & 3ul) * 8u;
  atomicAnd(qd_u32_ref(p & ~3ul).v, ~(0xffu << shift));
  atomicOr(qd_u32_ref(p & ~3ul).v, (v & 0xffu) << shift);
}
)";
  if (name.starts_with("atomic_")) return atomic_helper(name, target);
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
