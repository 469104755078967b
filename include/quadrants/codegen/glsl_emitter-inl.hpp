// Implementation of codegen/glsl_emitter.hpp.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>

#include "quadrants/base/error.hpp"
#include "quadrants/codegen/glsl_emitter.hpp"
#include "quadrants/codegen/glsl_helpers.hpp"
#include "quadrants/codegen/glsl_prelude.hpp"
#include "quadrants/codegen/glsl_task_info.hpp"
#include "quadrants/codegen/reductions.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/ir/walk.hpp"

namespace qd::inline v0::codegen {

QD_FUNC std::string_view glsl_type(dtype t) {
  switch (t) {
    case dtype::boolean: return "bool";
    case dtype::u8:
    case dtype::u16:
    case dtype::f16:  // its bits, as the C++ backends' qd_f16
    case dtype::u32: return "uint";
    case dtype::i8:
    case dtype::i16:
    case dtype::i32: return "int";
    case dtype::i64: return "int64_t";
    case dtype::u64: return "uint64_t";
    case dtype::f32: return "float";
    case dtype::f64: return "double";
  }
  return "void";
}

namespace detail {

// The buffer reference type of a 32- or 64-bit element in memory (the prelude declares
// them); narrower elements are loaded and stored by glsl_emitter::load and store.
QD_FUNC std::string_view glsl_ref(dtype t) {
  switch (t) {
    case dtype::u32: return "qd_u32_ref";
    case dtype::i32: return "qd_i32_ref";
    case dtype::i64: return "qd_i64_ref";
    case dtype::u64: return "qd_u64_ref";
    case dtype::f32: return "qd_f32_ref";
    case dtype::f64: return "qd_f64_ref";
    case dtype::boolean:
    case dtype::u8:
    case dtype::i8:
    case dtype::i16:
    case dtype::u16:
    case dtype::f16: break;
  }
  return "?";
}

QD_FUNC std::string_view glsl_zero(dtype t) {
  switch (t) {
    case dtype::boolean: return "false";
    case dtype::u8:
    case dtype::u16:
    case dtype::f16:
    case dtype::u32: return "0u";
    case dtype::i8:
    case dtype::i16:
    case dtype::i32: return "0";
    case dtype::i64: return "0l";
    case dtype::u64: return "0ul";
    case dtype::f32: return "0.0";
    case dtype::f64: return "0.0lf";
  }
  return "0";
}

// Exact literals: floats that are small integers as decimals, the others by their bits.
QD_FUNC std::string glsl_literal(dtype t, std::int64_t imm) {
  switch (t) {
    case dtype::f32: {
      const auto bits = static_cast<std::uint32_t>(imm);
      const float v = std::bit_cast<float>(bits);
      if (std::isfinite(v) && v == std::trunc(v) && std::abs(v) < 16777216.0f && !(v == 0.0f && std::signbit(v)))
        return fmt::format("{}.0", static_cast<long long>(v));
      return fmt::format("uintBitsToFloat(0x{:08x}u)", bits);
    }
    case dtype::f64: {
      const double v = std::bit_cast<double>(imm);
      if (std::isfinite(v) && v == std::trunc(v) && std::abs(v) < 9007199254740992.0 && !(v == 0.0 && std::signbit(v)))
        return fmt::format("{}.0lf", static_cast<long long>(v));
      return fmt::format("uint64BitsToDouble(0x{:016x}ul)", static_cast<std::uint64_t>(imm));
    }
    case dtype::f16: return fmt::format("0x{:04x}u", static_cast<std::uint16_t>(imm));
    case dtype::boolean: return imm ? "true" : "false";
    case dtype::u8: return fmt::format("{}u", static_cast<std::uint8_t>(imm));
    case dtype::u16: return fmt::format("{}u", static_cast<std::uint16_t>(imm));
    case dtype::u32: return fmt::format("{}u", static_cast<std::uint32_t>(imm));
    case dtype::u64: return fmt::format("{}ul", static_cast<std::uint64_t>(imm));
    case dtype::i8: return fmt::format("({})", static_cast<int>(static_cast<std::int8_t>(imm)));
    case dtype::i16: return fmt::format("({})", static_cast<int>(static_cast<std::int16_t>(imm)));
    case dtype::i32:
      if (static_cast<std::int32_t>(imm) == INT32_MIN) return "(-2147483647 - 1)";
      return fmt::format("{}", static_cast<std::int32_t>(imm));
    case dtype::i64:
      if (imm == INT64_MIN) return "(-9223372036854775807l - 1l)";
      return fmt::format("{}l", imm);
  }
  return "0";
}

// Lowest and highest values, the identities of min and max reductions of integers.
QD_FUNC std::string glsl_extreme(dtype t, bool highest) {
  switch (t) {
    case dtype::i32: return highest ? "2147483647" : "(-2147483647 - 1)";
    case dtype::i64: return highest ? "9223372036854775807l" : "(-9223372036854775807l - 1l)";
    case dtype::u32: return highest ? "4294967295u" : "0u";
    case dtype::u64: return highest ? "18446744073709551615ul" : "0ul";
    case dtype::u8: return highest ? "255u" : "0u";
    case dtype::u16: return highest ? "65535u" : "0u";
    case dtype::i8: return highest ? "127" : "(-128)";
    case dtype::i16: return highest ? "32767" : "(-32768)";
    case dtype::boolean: return highest ? "true" : "false";
    // Floats: a NaN, minNum's identity (any value replaces it), as the C++ backends.
    case dtype::f32: return "uintBitsToFloat(0x7fc00000u)";
    case dtype::f64: return "uint64BitsToDouble(0x7ff8000000000000ul)";
    case dtype::f16: return "0x7e00u";
  }
  return "0";
}

// A helper's name for type `t`: qd_div_i32.
QD_FUNC std::string typed(std::string_view base, dtype t) { return fmt::format("qd_{}_{}", base, name(t)); }

QD_FUNC std::string_view atomic_name(ir::atomic_op o) {
  switch (o) {
    case ir::atomic_op::add: return "add";
    case ir::atomic_op::sub: return "sub";
    case ir::atomic_op::min: return "min";
    case ir::atomic_op::max: return "max";
    case ir::atomic_op::mul: return "mul";
    case ir::atomic_op::bit_and: return "and";
    case ir::atomic_op::bit_or: return "or";
    case ir::atomic_op::bit_xor: return "xor";
    case ir::atomic_op::exchange: return "xchg";
    case ir::atomic_op::cas: return "cas";
  }
  return "?";
}

// The 32- or 64-bit helper type integer division of type t runs in (narrow values are
// 32-bit ints and uints in GLSL).
QD_FUNC dtype division_type(dtype t) {
  if (t == dtype::i8 || t == dtype::i16) return dtype::i32;
  if (t == dtype::u8 || t == dtype::u16) return dtype::u32;
  return t;
}

// The raw bits of value `x` of type t, as a uint (types of up to 32 bits) or a uint64_t.
QD_FUNC std::string glsl_bits(dtype t, const std::string& x) {
  switch (t) {
    case dtype::f32: return fmt::format("floatBitsToUint({})", x);
    case dtype::f64: return fmt::format("doubleBitsToUint64({})", x);
    case dtype::i8: return fmt::format("(uint({}) & 0xffu)", x);
    case dtype::i16: return fmt::format("(uint({}) & 0xffffu)", x);
    case dtype::i32: return fmt::format("uint({})", x);
    case dtype::i64: return fmt::format("uint64_t({})", x);
    case dtype::boolean:
    case dtype::u8:
    case dtype::u16:
    case dtype::f16:
    case dtype::u32:
    case dtype::u64: break;
  }
  return x;
}

// A value of type t from its raw bits (glsl_bits' inverse).
QD_FUNC std::string glsl_from_bits(dtype t, const std::string& bits) {
  switch (t) {
    case dtype::f32: return fmt::format("uintBitsToFloat({})", bits);
    case dtype::f64: return fmt::format("uint64BitsToDouble({})", bits);
    case dtype::i8:
    case dtype::i16: return glsl_narrow(t, fmt::format("int({})", bits));
    case dtype::i32: return fmt::format("int({})", bits);
    case dtype::i64: return fmt::format("int64_t({})", bits);
    case dtype::u8:
    case dtype::u16:
    case dtype::f16: return glsl_narrow(t == dtype::f16 ? dtype::u16 : t, bits);
    case dtype::boolean:
    case dtype::u32:
    case dtype::u64: break;
  }
  return bits;
}

class glsl_emitter {
 public:
  glsl_emitter(const lowered_task& t, std::string_view entry, const glsl_options& options, std::string_view what)
      : t_(t),
        fn_(t.fn),
        entry_(entry),
        options_(options),
        target_(options.target),
        what_(what),
        number_(ir::canonical_numbering(fn_)) {}

  std::string run() {
    check_features();
    info_.entry = std::string(entry_);
    info_.parallel = t_.parallel;
    info_.workgroup_size = 1;
    if (t_.parallel)
      emit_parallel();
    else
      emit_serial();
    info_.prints = prints_;
    std::string out = glsl_task_markers(info_);
    out += fmt::format("#ifdef {}\nlayout(local_size_x = {}) in;\n", glsl_task_macro(entry_), info_.workgroup_size);
    for (const std::string& h : helper_code_) out += h;
    for (std::int32_t p : arrays_) out += fmt::format("qd_array qd_a{};\n", p);
    out += code_;
    out += "#endif\n";
    return out;
  }

 private:
  // ---- features -------------------------------------------------------------------------

  [[noreturn]] void missing(std::string_view thing, std::string_view feature, ir::id where) const {
    const std::string at = ir::to_text(fn_.location(where));
    throw user_error(fmt::format("{}: {} need the Vulkan device feature {}, which this device lacks{}{}", what_, thing,
                                 feature, at.empty() ? "" : " (at " + at + ")",
                                 thing == "f64 values" ? "; use f32" : ""));
  }

  // f32 functions computed in f64 (glsl_math.hpp): a device without f64 lacks them.
  static bool computed_in_f64(const ir::node& n) {
    using u = ir::unary_op;
    const auto o = static_cast<u>(n.sub);
    if (n.code == ir::op::unary) return o == u::tan || o == u::asin || o == u::acos || o == u::log2 || o == u::exp2;
    return n.code == ir::op::binary && static_cast<ir::binary_op>(n.sub) == ir::binary_op::atan2;
  }

  void check_features() const {
    for (const ir::param_desc& p : fn_.params)
      if (p.type == dtype::f64 && !target_.f64) missing("f64 values", "shaderFloat64", ir::none);
    ir::walk(fn_, 0, [&](ir::id i, int) {
      const ir::node& n = fn_.at(i);
      bool f64 = n.type == dtype::f64;
      ir::for_each_operand(fn_, n, [&](ir::id o) { f64 |= fn_.at(o).type == dtype::f64; });
      if (f64 && !target_.f64) missing("f64 values", "shaderFloat64", i);
      if (computed_in_f64(n) && !target_.f64)
        missing(fmt::format("qd::{} of f32 values (computed in f64)",
                            n.code == ir::op::unary ? ir::name(static_cast<ir::unary_op>(n.sub))
                                                    : ir::name(static_cast<ir::binary_op>(n.sub))),
                "shaderFloat64", i);
      const bool atomic = n.code == ir::op::global_atomic || n.code == ir::op::temp_atomic;
      if (atomic && (n.flags & ir::access::owned) == 0 && !target_.i64_atomics) {
        if (n.type == dtype::i64 || n.type == dtype::u64)
          missing(fmt::format("{} atomics", name(n.type)), "shaderBufferInt64Atomics", i);
        if (n.type == dtype::f64 &&
            !(target_.f64_atomic_add && (static_cast<ir::atomic_op>(n.sub) == ir::atomic_op::add ||
                                         static_cast<ir::atomic_op>(n.sub) == ir::atomic_op::sub)))
          missing("f64 atomics", "shaderBufferInt64Atomics (they are 64-bit compare-and-swap loops)", i);
      }
    });
  }

  // ---- helpers: GLSL functions a task needs, each emitted once, after those it calls ----

  void need(const std::string& name) {
    if (std::find(helper_names_.begin(), helper_names_.end(), name) != helper_names_.end()) return;
    glsl_helper h = glsl_helper_code(name, target_);
    for (const std::string& call : h.calls) need(call);
    helper_names_.push_back(name);
    helper_code_.push_back(std::move(h.code));
  }

  // ---- naming and output ----------------------------------------------------------------

  std::string v(ir::id i) const { return fmt::format("v{}", number_[static_cast<std::size_t>(i)]); }
  // A compare-and-swap's expected value (operand c): the value, or ", value" as an argument; else "".
  std::string expected(const ir::node& n) const { return n.c == ir::none ? std::string() : v(n.c); }
  std::string expected_arg(const ir::node& n) const { return n.c == ir::none ? std::string() : ", " + v(n.c); }
  std::string var(ir::id decl) const { return fmt::format("l{}", number_[static_cast<std::size_t>(decl)]); }
  std::string member(ir::id f) const { return fn_.at(f).code == ir::op::local_decl ? var(f) : v(f); }
  void line(std::string_view text) {
    code_.append(static_cast<std::size_t>(indent_) * 2, ' ');
    code_ += text;
    code_ += '\n';
  }
  // A value's declaration: floats are `precise`, so no driver fuses or reorders what C++ does not.
  void declare(const ir::node& n, ir::id i, const std::string& value) {
    const bool precise = n.type == dtype::f32 || n.type == dtype::f64;  // f16 values are bits
    line(fmt::format("{}{} {} = {};", precise ? "precise " : "", glsl_type(n.type), v(i), value));
  }
  // A value widened to i64 (i32, i16 and i8 through qd_sext: see glsl_prelude).
  std::string wide(ir::id i) const {
    const dtype t = fn_.at(i).type;
    return t == dtype::i64                                        ? v(i)
           : t == dtype::i32 || t == dtype::i16 || t == dtype::i8 ? fmt::format("qd_sext({})", v(i))
                                                                  : fmt::format("int64_t({})", v(i));
  }
  // An unclamped index as an i64 expression plus a constant: its i32 + and - with constants
  // redone in i64. It differs from the i32 value only where that overflowed (an
  // out-of-range access either way), and x(i + 1, j) and x(i, j - 1) then share one base
  // address with constant offsets, as the C++ emitter's signed index arithmetic lets the
  // host compiler see. (Clamped indices keep the wrapped value: it picks the edge.)
  struct affine {
    std::string expr;  // empty: 0
    std::int64_t offset = 0;
  };
  affine index_affine(ir::id i, int depth) const {
    const ir::node& n = fn_.at(i);
    if (n.type == dtype::i32 && n.code == ir::op::constant) return {{}, static_cast<std::int32_t>(n.imm)};
    const auto o = static_cast<ir::binary_op>(n.sub);
    if (depth < 8 && n.code == ir::op::binary && n.type == dtype::i32 &&
        (o == ir::binary_op::add || o == ir::binary_op::sub)) {
      const affine x = index_affine(n.a, depth + 1), y = index_affine(n.b, depth + 1);
      const bool add = o == ir::binary_op::add;
      affine r{x.expr, add ? x.offset + y.offset : x.offset - y.offset};
      if (!y.expr.empty())
        r.expr = x.expr.empty() ? fmt::format("({}{})", add ? "" : "-", y.expr)
                                : fmt::format("({} {} {})", x.expr, add ? "+" : "-", y.expr);
      return r;
    }
    return {wide(i), 0};
  }
  static std::string sum(const std::string& expr, std::int64_t offset) {
    if (expr.empty()) return fmt::format("{}l", offset);
    return offset == 0 ? expr : fmt::format("{} + {}l", expr, offset);
  }
  std::string array(std::int32_t param) {
    if (std::find(arrays_.begin(), arrays_.end(), param) == arrays_.end()) {
      arrays_.push_back(param);
      std::sort(arrays_.begin(), arrays_.end());
    }
    return fmt::format("qd_a{}", param);
  }
  static std::string temp_address(std::int64_t slot) {
    return fmt::format("(qd_push.temps + {}ul)", slot * static_cast<std::int64_t>(limits::temp_slot_bytes));
  }

  bool uses_random(std::int32_t block) const {
    bool found = false;
    ir::walk(fn_, block, [&](ir::id i, int) { found |= fn_.at(i).code == ir::op::random; });
    return found;
  }

  // Loads the array descriptors the task uses: at the top of main, once per invocation.
  std::string load_arrays() const {
    std::string s;
    for (std::int32_t p : arrays_) s += fmt::format("  qd_a{0} = qd_params_ref(qd_push.params).arrays[{0}];\n", p);
    return s;
  }

  // ---- tasks --------------------------------------------------------------------------

  void emit_serial() {
    indent_ = 1;
    const std::size_t at = code_.size();
    if (uses_random(0)) {
      need("rng");
      line("uint64_t qd_rng = qd_rng_init(qd_push.rng_stream, 0ul);");
    }
    emit_block(0);
    indent_ = 0;
    info_.workgroup_size = glsl_workgroup_quantum;
    code_.insert(at, "void main() {\n  if (gl_LocalInvocationID.x != 0u) return;\n" + load_arrays());
    line("}");
  }

  void emit_parallel() {
    const auto& top = fn_.block(0);
    if (top.empty() || fn_.at(top.back()).code != ir::op::range_for)
      throw internal_error("GLSL emitter: a parallel task must end with its loop");
    const ir::id loop = top.back();
    parallel_loop_ = loop;
    const ir::node& ln = fn_.at(loop);
    info_.workgroup_size = glsl_default_workgroup;
    if (ln.param > 0) {  // qd::loop_config{.block_dim}
      if (static_cast<unsigned>(ln.param) > target_.max_workgroup_size)
        throw user_error(
            fmt::format("{}: qd::loop_config{{.block_dim = {}}} is more than this Vulkan device's "
                        "largest workgroup ({} invocations)",
                        what_, ln.param, target_.max_workgroup_size));
      info_.workgroup_size = static_cast<unsigned>(ln.param);
    }
    // The invocations of a block: block_dim of them, in a workgroup of whole quanta.
    const unsigned block = info_.workgroup_size;
    const unsigned whole = (block + glsl_workgroup_quantum - 1) / glsl_workgroup_quantum * glsl_workgroup_quantum;
    if (whole <= target_.max_workgroup_size) info_.workgroup_size = whole;
    // Prologue values and variables the loop body uses travel in a frame.
    std::vector<ir::id> frame;
    ir::walk(fn_, ln.block0, [&](ir::id i, int) {
      ir::for_each_operand(fn_, fn_.at(i), [&](ir::id o) {
        if (fn_.is_top_level(o) && o != loop && std::find(frame.begin(), frame.end(), o) == frame.end())
          frame.push_back(o);
      });
    });
    std::sort(frame.begin(), frame.end());
    const auto rank = static_cast<std::int32_t>(ln.imm);
    reductions_ = find_chunk_reductions(fn_, ln.block0);

    line("struct qd_frame_t {");
    line(fmt::format("  int64_t qd_base; int64_t qd_dims[{}]; int64_t qd_count;", limits::max_ndim));
    for (ir::id f : frame) line(fmt::format("  {} {};", glsl_type(fn_.at(f).type), member(f)));
    line("};");
    emit_reduction_functions();

    line("void qd_prologue(out qd_frame_t qd_f) {");
    indent_ = 1;
    for (std::size_t k = 0; k + 1 < top.size(); ++k) emit(top[k]);
    for (ir::id f : frame) line(fmt::format("qd_f.{0} = {0};", member(f)));
    if (rank == 1) {
      line(fmt::format("qd_f.qd_base = {};", wide(ln.a)));
      line(fmt::format("qd_f.qd_dims[0] = {} - {};", wide(ln.b), wide(ln.a)));
    } else {
      line("qd_f.qd_base = 0l;");
      for (std::int32_t d = 0; d < rank; ++d) line(fmt::format("qd_f.qd_dims[{}] = {};", d, wide(fn_.list(ln, d))));
    }
    for (std::int32_t d = rank; d < limits::max_ndim; ++d) line(fmt::format("qd_f.qd_dims[{}] = 1l;", d));
    std::string count = "1l";
    for (std::int32_t d = 0; d < rank; ++d) count += fmt::format(" * max(qd_f.qd_dims[{}], 0l)", d);
    line(fmt::format("qd_f.qd_count = {};", count));
    indent_ = 0;
    line("}");

    line("void qd_body(qd_frame_t qd_f, inout qd_reductions qd_red, int qd_i0, int qd_i1, int qd_i2, int qd_i3) {");
    indent_ = 1;
    for (ir::id f : frame) line(fmt::format("{} {} = qd_f.{};", glsl_type(fn_.at(f).type), member(f), member(f)));
    if (uses_random(ln.block0)) {
      need("rng");
      line(
          "uint64_t qd_rng = qd_rng_init(qd_push.rng_stream, uint64_t(qd_sext(qd_i0) - qd_f.qd_base) * "
          "0x100000001b3ul + uint64_t(qd_sext(qd_i1)) * 0x9e37ul + uint64_t(qd_sext(qd_i2)) * 0x85ebul + "
          "uint64_t(qd_sext(qd_i3)));");
    }
    for (std::int32_t d = 0; d < rank; ++d)
      line(fmt::format("int {} = qd_i{};", v(fn_.block(ln.block0)[static_cast<std::size_t>(d)]), d));
    emit_block(ln.block0, static_cast<std::size_t>(rank));
    indent_ = 0;
    line("}");

    // One grid-stride loop over [0, count); 32-bit division where the space allows it.
    line("void main() {");
    code_ += load_arrays();
    indent_ = 1;
    line("qd_frame_t qd_f;");
    line("qd_prologue(qd_f);");
    if (block == info_.workgroup_size) {
      line("int64_t qd_k = int64_t(gl_GlobalInvocationID.x);");
    } else {
      line(fmt::format("if (gl_LocalInvocationID.x >= {}u) return;", block));
      line(fmt::format("int64_t qd_k = int64_t(gl_WorkGroupID.x) * {}l + int64_t(gl_LocalInvocationID.x);", block));
    }
    line("if (qd_k >= qd_f.qd_count) return;");
    line(fmt::format("int64_t qd_stride = int64_t(gl_NumWorkGroups.x) * {}l;", block));
    line("qd_reductions qd_red;");
    line("qd_red_init(qd_red);");
    // Counted in 32 bits where every index the loop forms fits (a uniform branch per
    // launch): a CPU driver's vector code pays for 64-bit compares and adds per element.
    line("if (qd_f.qd_count <= 2147483647l - qd_stride) {");
    line("  int qd_n32 = int(qd_f.qd_count), qd_s32 = int(qd_stride);");
    line("  for (int qd_k32 = int(qd_k); qd_k32 < qd_n32; qd_k32 += qd_s32) {");
    if (rank == 1) {
      line("    qd_body(qd_f, qd_red, int(qd_f.qd_base) + qd_k32, 0, 0, 0);");
    } else {
      line("    int qd_ix[4] = int[4](0, 0, 0, 0);");
      decompose("    ", "uint", "qd_k32", rank);
      line("    qd_body(qd_f, qd_red, qd_ix[0], qd_ix[1], qd_ix[2], qd_ix[3]);");
    }
    line("  }");
    line("} else");
    line("for (; qd_k < qd_f.qd_count; qd_k += qd_stride) {");
    indent_ = 2;
    if (rank == 1) {
      line("qd_body(qd_f, qd_red, int(qd_f.qd_base + qd_k), 0, 0, 0);");
    } else {
      line("int qd_ix[4] = int[4](0, 0, 0, 0);");
      line("if (qd_f.qd_count <= 4294967295l) {");
      decompose("  ", "uint", "qd_k", rank);
      line("} else {");
      decompose("  ", "int64_t", "qd_k", rank);
      line("}");
      line("qd_body(qd_f, qd_red, qd_ix[0], qd_ix[1], qd_ix[2], qd_ix[3]);");
    }
    indent_ = 1;
    line("}");
    line("qd_red_flush(qd_red);");
    indent_ = 0;
    line("}");
  }

  // The index of each dimension from the linear counter `counter`, in `type` (uint or
  // int64_t) arithmetic, into qd_ix: the last dimension varies fastest.
  void decompose(std::string_view prefix, std::string_view type, std::string_view counter, std::int32_t rank) {
    const bool narrow = type == "uint";
    line(fmt::format("{}{} qd_r = {}{}{};", prefix, type, narrow ? "uint(" : "", counter, narrow ? ")" : ""));
    for (std::int32_t d = rank - 1; d > 0; --d) {
      const std::string dim = narrow ? fmt::format("uint(qd_f.qd_dims[{}])", d) : fmt::format("qd_f.qd_dims[{}]", d);
      line(fmt::format("{}qd_ix[{}] = int(qd_r % {});", prefix, d, dim));
      line(fmt::format("{}qd_r /= {};", prefix, dim));
    }
    line(fmt::format("{}qd_ix[0] = int(qd_r);", prefix));
  }

  // Reductions into global temporaries accumulate per invocation and are flushed with one
  // atomic (codegen/reductions.hpp decides which, for every backend).
  const chunk_reduction* reduction_of(const ir::node& n) const {
    const int r = reduction_index(reductions_, n);
    return r < 0 ? nullptr : &reductions_[static_cast<std::size_t>(r)];
  }

  void emit_reduction_functions() {
    line("struct qd_reductions {");
    line("  int qd_unused;");
    for (std::size_t k = 0; k < reductions_.size(); ++k)
      line(fmt::format("  {} r{};", glsl_type(reductions_[k].type), k));
    line("};");
    line("void qd_red_init(out qd_reductions qd_r) {");
    line("  qd_r.qd_unused = 0;");
    for (std::size_t k = 0; k < reductions_.size(); ++k) {
      const chunk_reduction& r = reductions_[k];
      const std::string identity = r.op == ir::atomic_op::min   ? glsl_extreme(r.type, true)
                                   : r.op == ir::atomic_op::max ? glsl_extreme(r.type, false)
                                                                : std::string(glsl_zero(r.type));
      line(fmt::format("  qd_r.r{} = {};", k, identity));
    }
    line("}");
    line("void qd_red_flush(qd_reductions qd_r) {");
    for (std::size_t k = 0; k < reductions_.size(); ++k) {
      const chunk_reduction& r = reductions_[k];
      line(fmt::format("  {{ {} qd_old; {}({}, qd_r.r{}, qd_old); }}", glsl_type(r.type), atomic_call(r.op, r.type),
                       temp_address(r.slot), k));
    }
    line("}");
  }

  // The helper for an atomic on memory of type t (u8 temporaries are whole words): it
  // hands the old value back through its last, `out` parameter (see glsl_helpers).
  std::string atomic_call(ir::atomic_op o, dtype t) {
    const std::string name =
        fmt::format("atomic_{}_{}", atomic_name(o), qd::name(t == dtype::boolean ? dtype::u32 : t));
    need(name);
    return "qd_" + name;
  }

  void emit_block(std::int32_t block, std::size_t skip = 0) {
    const auto& stmts = fn_.block(block);
    for (std::size_t k = skip; k < stmts.size(); ++k) emit(stmts[k]);
  }

  // Emits an access's index arithmetic; returns the element's address and the guard
  // ("" when unchecked).
  std::pair<std::string, std::string> element(ir::id i) {
    const ir::node& n = fn_.at(i);
    const std::string arr = array(n.param);
    const auto num = number_[static_cast<std::size_t>(i)];
    const bool clamped = (n.flags & ir::access::clamp) != 0;
    std::string guard, linear, offset;  // the element's index: linear + offset
    bool offsets = false;
    for (std::int32_t d = 0; d < n.list_size; ++d) {
      const std::string idx = fmt::format("qd_x{}_{}", num, d);
      const std::string extent = fmt::format("{}.shape[{}]", arr, d);
      affine a = clamped ? affine{wide(fn_.list(n, d)), 0} : index_affine(fn_.list(n, d), 0);
      line(fmt::format("int64_t {} = {};", idx, sum(a.expr, a.offset)));
      if (clamped) {
        line(fmt::format("{0} = {0} < 0l ? 0l : ({0} >= {1} ? {1} - 1l : {0});", idx, extent));
        a = {idx, 0};
      }
      if (options_.bounds_checks) {
        need("report");
        if (guard.empty()) {
          guard = fmt::format("qd_ok{}", num);
          line(fmt::format("bool {} = true;", guard));
        }
        line(fmt::format("{0} = qd_check_index({1}, {2}, {3}, {4}) && {0};", guard, n.param, d, idx, extent));
      }
      offsets |= a.offset != 0;
      const std::string term = a.expr.empty() ? "0l" : a.expr, constant = fmt::format("{}l", a.offset);
      linear = d == 0 ? term : fmt::format("({}) * {} + {}", linear, extent, term);
      offset = d == 0 ? constant : fmt::format("({}) * {} + {}", offset, extent, constant);
    }
    if (linear.empty()) linear = "0l", offset = "0l";
    const std::string base = fmt::format("{}.{}", arr, (n.flags & ir::access::grad) ? "grad" : "data");
    const int size = size_of(n.type);
    const std::string index = offsets ? fmt::format("{} + ({})", linear, offset) : linear;
    return {size == 1 ? fmt::format("({} + uint64_t({}))", base, index)
                      : fmt::format("({} + uint64_t({}) * {}ul)", base, index, size),
            guard};
  }

  // 8- and 16-bit elements: through 8- and 16-bit storage where the device has it, else
  // through their aligned 32-bit word (u8_word, u16_word).
  std::string load(dtype t, const std::string& address, bool is_volatile) {
    if (t == dtype::boolean) return fmt::format("({} != 0u)", load(dtype::u8, address, is_volatile));
    const std::string_view suffix = is_volatile ? "vref" : "ref";
    const int size = size_of(t);
    if (size == 1 || size == 2) {
      const bool native = size == 1 ? target_.int8_storage : target_.int16_storage;
      const bool is_signed_int = t == dtype::i8 || t == dtype::i16;
      if (native)
        return fmt::format("{}(qd_{}_{}({}).v)", is_signed_int ? "int" : "uint",
                           is_signed_int ? name(t) : (size == 1 ? "u8" : "u16"), suffix, address);
      // Inline, not a function: glslang's propagation of `precise` takes minutes on a task
      // whose precise values come from many calls of one function.
      const std::string word = fmt::format("((qd_u32_{0}(({1}) & ~3ul).v >> (uint(({1}) & {2}ul) * 8u)) & {3})", suffix,
                                           address, size == 1 ? 3 : 2, size == 1 ? "0xffu" : "0xffffu");
      return is_signed_int ? glsl_narrow(t, fmt::format("int({})", word)) : word;
    }
    const std::string_view ref = glsl_ref(t);
    return fmt::format("{}{}({}).v", ref.substr(0, ref.size() - 3), suffix, address);
  }
  std::string store(dtype t, const std::string& address, const std::string& value) {
    if (t == dtype::boolean) return store(dtype::u8, address, fmt::format("uint({})", value));
    const int size = size_of(t);
    if (size == 1 || size == 2) {
      const bool native = size == 1 ? target_.int8_storage : target_.int16_storage;
      const bool is_signed_int = t == dtype::i8 || t == dtype::i16;
      if (native) {
        const std::string_view type = is_signed_int ? name(t) : (size == 1 ? "u8" : "u16");
        return fmt::format("qd_{}_ref({}).v = {}int{}_t({});", type, address, is_signed_int ? "" : "u", size * 8,
                           value);
      }
      need(size == 1 ? "u8_word" : "u16_word");
      return fmt::format("qd_store_{}({}, {});", size == 1 ? "u8" : "u16", address,
                         is_signed_int ? fmt::format("uint({})", value) : value);
    }
    return fmt::format("{}({}).v = {};", glsl_ref(t), address, value);
  }

  // a op b for + - * in type t: wrap-around is GLSL's own; narrow values are brought back
  // into their type's range.
  static std::string arithmetic(dtype t, std::string_view op, const std::string& a, const std::string& b) {
    return glsl_narrow(t, fmt::format("({} {} {})", a, op, b));
  }

  // A math function's helper for type t; sin and cos share one, as asin, acos and atan2 do.
  std::string math(std::string_view f, dtype t, const std::string& args) {
    std::string helper = fmt::format("{}_{}", f, name(t));
    if (f == "sin" || f == "cos") helper = fmt::format("sincos_{}", name(t));
    if (f == "asin" || f == "acos" || f == "atan2") helper = fmt::format("atan_{}", name(t));
    need(helper);
    return fmt::format("qd_{}_{}({})", f, name(t), args);
  }

  // `o` of `a`, of type `from`, giving type `to`.
  std::string unary(ir::unary_op o, dtype from, dtype to, const std::string& a) {
    const dtype t = from;
    const bool wide = t == dtype::f64;
    switch (o) {
      case ir::unary_op::neg:
        if (t == dtype::u32) return fmt::format("(0u - {})", a);
        if (t == dtype::u64) return fmt::format("(0ul - {})", a);
        if (t == dtype::u8 || t == dtype::u16) return glsl_narrow(t, fmt::format("(0u - {})", a));
        return glsl_narrow(t, fmt::format("(-{})", a));
      case ir::unary_op::logical_not: return fmt::format("(!{})", a);
      case ir::unary_op::bit_not:
        return t == dtype::u8 || t == dtype::u16 ? glsl_narrow(t, fmt::format("(~{})", a)) : fmt::format("(~{})", a);
      case ir::unary_op::sqrt: return fmt::format("sqrt({})", a);
      case ir::unary_op::rsqrt: return fmt::format("({} / sqrt({}))", wide ? "1.0lf" : "1.0", a);
      case ir::unary_op::exp: return math("exp", t, a);
      case ir::unary_op::log: return math("log", t, a);
      case ir::unary_op::sin: return math("sin", t, a);
      case ir::unary_op::cos: return math("cos", t, a);
      case ir::unary_op::tanh: return math("tanh", t, a);
      case ir::unary_op::tan: return math("tan", t, a);
      case ir::unary_op::asin: return math("asin", t, a);
      case ir::unary_op::acos: return math("acos", t, a);
      case ir::unary_op::log2: return math("log2", t, a);
      case ir::unary_op::exp2: return math("exp2", t, a);
      case ir::unary_op::round: return math("round", t, a);
      case ir::unary_op::abs:
        // The sign bit cleared: GLSL's abs(-0.0) may be -0.0 ("x if x >= 0"), C++'s is +0.0.
        if (t == dtype::f64) return fmt::format("uint64BitsToDouble(doubleBitsToUint64({}) & 0x7ffffffffffffffful)", a);
        if (is_float(t)) return fmt::format("uintBitsToFloat(floatBitsToUint({}) & 0x7fffffffu)", a);
        if (is_signed(t)) return glsl_narrow(t, fmt::format("({0} < {1} ? -{0} : {0})", a, glsl_zero(t)));
        return a;
      case ir::unary_op::floor: return fmt::format("floor({})", a);
      case ir::unary_op::ceil: return fmt::format("ceil({})", a);
      case ir::unary_op::trunc: return math("trunc", t, a);
      // On the bits, as the C++ backends: right whatever the driver does with NaNs.
      case ir::unary_op::isnan:
      case ir::unary_op::isinf:
      case ir::unary_op::isfinite: {
        const std::string_view cmp = o == ir::unary_op::isnan ? ">" : o == ir::unary_op::isinf ? "==" : "<";
        return wide ? fmt::format("((doubleBitsToUint64({}) & 0x7ffffffffffffffful) {} 0x7ff0000000000000ul)", a, cmp)
                    : fmt::format("((floatBitsToUint({}) & 0x7fffffffu) {} 0x7f800000u)", a, cmp);
      }
      case ir::unary_op::popcnt:
      case ir::unary_op::clz:
      case ir::unary_op::ffs: {  // of the integer's own width
        need("bits");
        if (size_of(t) == 8) {
          const std::string_view f = o == ir::unary_op::popcnt ? "popc" : o == ir::unary_op::clz ? "clz" : "ffs";
          return fmt::format("qd_{}64(uint64_t({}))", f, a);
        }
        const std::string low = glsl_bits(t, a);
        if (o == ir::unary_op::popcnt) return fmt::format("bitCount({})", low);
        if (o == ir::unary_op::ffs) return fmt::format("qd_ffs32({})", low);
        return size_of(t) == 4 ? fmt::format("qd_clz32({})", low)
                               : fmt::format("(qd_clz32({}) - {})", low, 32 - 8 * size_of(t));
      }
      case ir::unary_op::bit_cast: return glsl_from_bits(to, glsl_bits(t, a));
    }
    return a;
  }

  std::string binary(ir::binary_op o, dtype t, const std::string& a, const std::string& b) {
    const dtype wide = division_type(t);  // narrow integers divide as 32-bit ones
    switch (o) {
      case ir::binary_op::add: return arithmetic(t, "+", a, b);
      case ir::binary_op::sub: return arithmetic(t, "-", a, b);
      case ir::binary_op::mul: return arithmetic(t, "*", a, b);
      case ir::binary_op::div:
        if (is_float(t)) {
          // lavapipe folds 0 / x to +0, also where the 0 is an expression it folded (0 + 0
          // / x): a zero dividend on the bits, as C++ (that NaN for a NaN x, the default
          // NaN for a zero x, as on x86, else a zero of the signs' product; 0 / inf too).
          const bool f64 = t == dtype::f64;
          const std::string_view to = f64 ? "doubleBitsToUint64" : "floatBitsToUint",
                                 from = f64 ? "uint64BitsToDouble" : "uintBitsToFloat", zero = f64 ? "0.0lf" : "0.0";
          return fmt::format(
              "({0} == {2} ? (isnan({1}) ? {1} : {1} == {2} ? {3}({5}) : {3}(({4}({0}) ^ {4}({1})) & {6})) "
              ": {0} / {1})",
              a, b, zero, from, to, f64 ? "0xfff8000000000000ul" : "0xffc00000u",
              f64 ? "0x8000000000000000ul" : "0x80000000u");
        }
        need(fmt::format("div_{}", name(wide)));
        return glsl_narrow(t, fmt::format("{}({}, {})", typed("div", wide), a, b));
      case ir::binary_op::mod:
        need(fmt::format("mod_{}", name(wide)));
        return glsl_narrow(t, fmt::format("{}({}, {})", typed("mod", wide), a, b));
      case ir::binary_op::floordiv:
      case ir::binary_op::floormod: {
        const bool div = o == ir::binary_op::floordiv;
        if (!is_float(t) && !is_signed(t)) {  // unsigned: // and % are / and %
          need(fmt::format("{}_{}", div ? "div" : "mod", name(wide)));
          return fmt::format("{}({}, {})", typed(div ? "div" : "mod", wide), a, b);
        }
        need(fmt::format("floor_ops_{}", name(wide)));
        return glsl_narrow(t, fmt::format("{}({}, {})", typed(div ? "floordiv" : "floormod", wide), a, b));
      }
      case ir::binary_op::min: return fmt::format("({0} < {1} ? {0} : {1})", a, b);
      case ir::binary_op::max: return fmt::format("({0} > {1} ? {0} : {1})", a, b);
      case ir::binary_op::pow:
        need(fmt::format("pow_{}", name(t)));
        return fmt::format("qd_pow_{}({}, {})", name(t), a, b);
      case ir::binary_op::atan2: return math("atan2", t, fmt::format("{}, {}", a, b));
      case ir::binary_op::fmod:
        need(fmt::format("fmod_{}", name(t)));
        return fmt::format("qd_fmod_{}({}, {})", name(t), a, b);
      case ir::binary_op::bit_and: return fmt::format("({} & {})", a, b);
      case ir::binary_op::bit_or: return fmt::format("({} | {})", a, b);
      case ir::binary_op::bit_xor: return fmt::format("({} ^ {})", a, b);
      case ir::binary_op::shl:
      case ir::binary_op::shr: {  // the count masked to the type's width, as the C++ backends
        const bool left = o == ir::binary_op::shl;
        const std::string_view op = left ? "<<" : ">>";
        switch (t) {
          case dtype::i8:
          case dtype::i16:
          case dtype::i32: {
            const std::string shifted = fmt::format("({} {} ({} & {}))", a, op, b, size_of(t) * 8 - 1);
            return left ? glsl_narrow(t, shifted) : shifted;
          }
          case dtype::u8:
          case dtype::u16:
          case dtype::u32: {
            const std::string shifted = fmt::format("({} {} ({} & {}u))", a, op, b, size_of(t) * 8 - 1);
            return left ? glsl_narrow(t, shifted) : shifted;
          }
          case dtype::i64: return fmt::format("({} {} int({} & 63l))", a, op, b);
          case dtype::u64: return fmt::format("({} {} int({} & 63ul))", a, op, b);
          case dtype::boolean:
          case dtype::f16:
          case dtype::f32:
          case dtype::f64: break;
        }
        throw internal_error("GLSL emitter: a shift of a non-integer");
      }
      case ir::binary_op::logical_and: return fmt::format("({} && {})", a, b);
      case ir::binary_op::logical_or: return fmt::format("({} || {})", a, b);
      case ir::binary_op::eq: return fmt::format("({} == {})", a, b);
      case ir::binary_op::ne: return fmt::format("({} != {})", a, b);
      case ir::binary_op::lt: return fmt::format("({} < {})", a, b);
      case ir::binary_op::le: return fmt::format("({} <= {})", a, b);
      case ir::binary_op::gt: return fmt::format("({} > {})", a, b);
      case ir::binary_op::ge: return fmt::format("({} >= {})", a, b);
    }
    return a;
  }

  // x + 0, 0 + x, x - -0, 0 - x and x * ±0 of floats, on the bits. lavapipe (Mesa 22.3)
  // folds x + 0 to x and x * 0 to 0 even in `precise` code under SignedZeroInfNanPreserve,
  // which C++ does not (-0 + 0 is +0; NaN * 0 and inf * 0 are NaN; -2 * 0 is -0). Empty:
  // no operand is a constant zero. (0 / x: binary(), for any zero, folded or not.)
  std::string with_float_zero(const ir::node& n) const {
    const dtype t = n.type;
    const auto o = static_cast<ir::binary_op>(n.sub);
    if ((t != dtype::f32 && t != dtype::f64) ||
        (o != ir::binary_op::add && o != ir::binary_op::sub && o != ir::binary_op::mul))
      return {};
    const bool wide = t == dtype::f64;
    const std::uint64_t sign = wide ? 0x8000000000000000ull : 0x80000000ull;
    auto zero = [&](ir::id k) -> int {  // 1: +0, -1: -0, 0: not a constant zero
      const ir::node& c = fn_.at(k);
      if (c.code != ir::op::constant) return 0;
      const std::uint64_t bits = static_cast<std::uint64_t>(c.imm) & (wide ? ~0ull : 0xffffffffull);
      return bits == 0 ? 1 : bits == sign ? -1 : 0;
    };
    const int za = zero(n.a), zb = zero(n.b);
    if (za == 0 && zb == 0) return {};
    const std::string_view to = wide ? "doubleBitsToUint64" : "floatBitsToUint",
                           from = wide ? "uint64BitsToDouble" : "uintBitsToFloat", s = wide ? "ul" : "u";
    const std::string sign_text = fmt::format("0x{:x}{}", sign, s);
    auto plus_zero = [&](const std::string& x) {  // x + 0: x, but +0 for -0
      return fmt::format("{0}({1}({2}) == {3} ? 0{4} : {1}({2}))", from, to, x, sign_text, s);
    };
    if (o == ir::binary_op::add) {
      if (zb == 1) return plus_zero(v(n.a));
      if (za == 1) return plus_zero(v(n.b));
      return {};  // x + -0 is x
    }
    if (o == ir::binary_op::sub) {
      if (zb == -1) return plus_zero(v(n.a));
      if (za == 1 && zb == 0)  // 0 - x: -x, but +0 for +0 (and a NaN stays x)
        return fmt::format("(isnan({2}) ? {2} : {0}({1}({2}) == 0{4} ? 0{4} : {1}({2}) ^ {3}))", from, to, v(n.b),
                           sign_text, s);
      return {};
    }
    const ir::id x = zb != 0 ? n.a : n.b;
    const int z = zb != 0 ? zb : za;
    // NaN * 0 is that NaN and inf * 0 the default NaN, as on x86; else a zero of the signs' product.
    return fmt::format("(isnan({0}) ? {0} : isinf({0}) ? {1}({2}) : {1}(({3}({0}) & {4}){5}))", v(x), from,
                       wide ? "0xfff8000000000000ul" : "0xffc00000u", to, sign_text,
                       z < 0 ? fmt::format(" ^ {}", sign_text) : std::string());
  }

  // A conversion as the C++ backends' (codegen/cpp_emitter's converted): f16 through f32,
  // floats to integers saturating, integers wrapping to the narrower type.
  // A constant; on lavapipe a float zero, infinity or NaN goes through qd_opaque, since its
  // NIR folds x * 0 to 0 (also with SignedZeroInfNanPreserve) and so loses -0 and NaN.
  std::string constant(dtype t, std::int64_t imm) const {
    if (target_.lavapipe_workarounds && (t == dtype::f32 || t == dtype::f64)) {
      const double v = t == dtype::f32 ? static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(imm)))
                                       : std::bit_cast<double>(imm);
      if (v == 0.0 || !std::isfinite(v))
        return t == dtype::f32
                   ? fmt::format("uintBitsToFloat(qd_opaque(0x{:08x}u))", static_cast<std::uint32_t>(imm))
                   : fmt::format("uint64BitsToDouble(qd_opaque(0x{:016x}ul))", static_cast<std::uint64_t>(imm));
    }
    return glsl_literal(t, imm);
  }

  std::string cast(dtype from, dtype to, const std::string& a) {
    if (from == to) return a;
    if (from == dtype::f16) {
      need("f16");
      const std::string f = fmt::format("qd_f16_to_f32({})", a);
      return to == dtype::f32 ? f : cast(dtype::f32, to, f);
    }
    if (to == dtype::boolean) return fmt::format("({} != {})", a, glsl_zero(from));
    if (to == dtype::f16) {
      need("f16");
      if (from == dtype::f64) {
        need("f16_from_f64");
        return fmt::format("qd_f64_to_f16({})", a);
      }
      return fmt::format("qd_f32_to_f16({})", from == dtype::f32 ? a : cast(from, dtype::f32, a));
    }
    if (is_float(from) && !is_float(to)) {
      const std::string helper = fmt::format("to_{}_{}", name(to), name(from));
      need(helper);
      return fmt::format("qd_{}({})", helper, a);
    }
    if (from == dtype::boolean && is_float(to) && target_.lavapipe_workarounds)  // see glsl_target
      return to == dtype::f64 ? fmt::format("uint64BitsToDouble(qd_opaque({} ? 0x3ff0000000000000ul : 0ul))", a)
                              : fmt::format("uintBitsToFloat(qd_opaque({} ? 0x3f800000u : 0u))", a);
    if (from == dtype::boolean && !is_float(to)) {
      if (to == dtype::i64) return fmt::format("({} ? 1l : 0l)", a);
      if (to == dtype::u64) return fmt::format("({} ? 1ul : 0ul)", a);
      return fmt::format("{}({})", glsl_type(to), a);
    }
    // Integers held in 32-bit ints (i8, i16, i32) widen to 64 bits through qd_sext (see glsl_prelude).
    const bool held_in_int = from == dtype::i8 || from == dtype::i16 || from == dtype::i32;
    switch (to) {
      case dtype::i8:
      case dtype::i16: return glsl_narrow(to, fmt::format("int({})", a));
      case dtype::u8:
      case dtype::u16: return glsl_narrow(to, fmt::format("uint({})", a));
      case dtype::i64: return held_in_int ? fmt::format("qd_sext({})", a) : fmt::format("int64_t({})", a);
      case dtype::u64: return held_in_int ? fmt::format("uint64_t(qd_sext({}))", a) : fmt::format("uint64_t({})", a);
      case dtype::boolean:
      case dtype::i32:
      case dtype::u32:
      case dtype::f16:
      case dtype::f32:
      case dtype::f64: break;
    }
    return fmt::format("{}({})", glsl_type(to), a);
  }

  // A scalar parameter from its 64-bit word (the value's little-endian low bytes).
  static std::string scalar(dtype t, std::int32_t param) {
    const std::string bits = fmt::format("qd_params_ref(qd_push.params).scalars[{}]", param);
    switch (t) {
      case dtype::f32: return fmt::format("uintBitsToFloat(uint({}))", bits);
      case dtype::f64: return fmt::format("uint64BitsToDouble({})", bits);
      case dtype::i64: return fmt::format("int64_t({})", bits);
      case dtype::u64: return bits;
      case dtype::boolean: return fmt::format("((uint({}) & 0xffu) != 0u)", bits);
      case dtype::i8:
      case dtype::i16:
      case dtype::i32:
      case dtype::u8:
      case dtype::u16:
      case dtype::u32:
      case dtype::f16: return glsl_from_bits(t, fmt::format("uint({})", bits));
    }
    return bits;
  }

  // A temporary's slot holds types of 32 bits and less as a 32-bit word: their bits, zero-extended.
  std::string temp_load(dtype t, const std::string& address) const {
    if (t == dtype::boolean) return fmt::format("(qd_u32_ref({}).v != 0u)", address);
    if (size_of(t) < 4) return glsl_from_bits(t, fmt::format("qd_u32_ref({}).v", address));
    return fmt::format("{}({}).v", glsl_ref(t), address);
  }
  std::string temp_store(dtype t, const std::string& address, const std::string& value) const {
    if (t == dtype::boolean) return fmt::format("qd_u32_ref({}).v = uint({});", address, value);
    if (size_of(t) < 4) return fmt::format("qd_u32_ref({}).v = {};", address, glsl_bits(t, value));
    return fmt::format("{}({}).v = {};", glsl_ref(t), address, value);
  }

  // The value an atomic leaves (glsl_update), with the helpers it calls.
  std::string update(ir::atomic_op o, dtype t, const std::string& old, const std::string& v,
                     const std::string& expected) {
    if (t == dtype::f16) need("f16");
    return glsl_update(o, t, old, v, expected);
  }

  void emit(ir::id i) {
    const ir::node& n = fn_.at(i);
    const std::string_view type = glsl_type(n.type);
    switch (n.code) {
      case ir::op::constant: declare(n, i, constant(n.type, n.imm)); break;
      case ir::op::arg: declare(n, i, scalar(n.type, n.param)); break;
      case ir::op::shape: line(fmt::format("int {} = int({}.shape[{}]);", v(i), array(n.param), n.imm)); break;
      case ir::op::loop_index: break;  // declared by its loop
      case ir::op::unary:
        declare(n, i, unary(static_cast<ir::unary_op>(n.sub), fn_.at(n.a).type, n.type, v(n.a)));
        break;
      case ir::op::binary: {
        const std::string zero = with_float_zero(n);
        declare(n, i,
                zero.empty() ? binary(static_cast<ir::binary_op>(n.sub), fn_.at(n.a).type, v(n.a), v(n.b)) : zero);
        break;
      }
      case ir::op::select: declare(n, i, fmt::format("({} ? {} : {})", v(n.a), v(n.b), v(n.c))); break;
      case ir::op::fma: {  // one rounding: GLSL's fma() where the device fuses it, else emulated
        const std::string f = target_.fused_fma ? "fma" : fmt::format("qd_fma_{}", name(n.type));
        if (!target_.fused_fma) need(f.substr(3));
        declare(n, i, fmt::format("{}({}, {}, {})", f, v(n.a), v(n.b), v(n.c)));
        break;
      }
      case ir::op::cast: declare(n, i, cast(fn_.at(n.a).type, n.type, v(n.a))); break;
      case ir::op::bound:
        need("report");
        line(fmt::format("int {} = qd_bound({}, {});", v(i), wide(n.a), n.imm));
        break;
      case ir::op::global_load: {
        auto [address, guard] = element(i);
        const std::string value = load(n.type, address, (n.flags & ir::access::is_volatile) != 0);
        if (guard.empty()) {
          declare(n, i, value);
        } else {
          declare(n, i, std::string(glsl_zero(n.type)));
          line(fmt::format("if ({}) {} = {};", guard, v(i), value));
        }
        break;
      }
      case ir::op::global_store: {
        auto [address, guard] = element(i);
        const std::string s = store(n.type, address, v(n.a));
        line(guard.empty() ? s : fmt::format("if ({}) {}", guard, s));
        break;
      }
      case ir::op::global_atomic: {
        auto [address, guard] = element(i);
        const auto o = static_cast<ir::atomic_op>(n.sub);
        declare(n, i, std::string(glsl_zero(n.type)));
        if (!guard.empty()) line(fmt::format("if ({}) {{", guard));
        if (n.flags & ir::access::owned) {  // demoted: this iteration owns the element
          line(fmt::format("{} = {};", v(i), load(n.type, address, false)));
          line(store(n.type, address, update(o, n.type, v(i), v(n.a), expected(n))));
        } else {
          line(fmt::format("{}({}, {}{}, {});", atomic_call(o, n.type), address, v(n.a), expected_arg(n), v(i)));
        }
        if (!guard.empty()) line("}");
        break;
      }
      case ir::op::local_decl: line(fmt::format("{} {} = {};", type, var(i), v(n.a))); break;
      case ir::op::local_load: declare(n, i, var(n.a)); break;
      case ir::op::local_store: line(fmt::format("{} = {};", var(n.a), v(n.b))); break;
      case ir::op::local_array: line(fmt::format("{} {}[{}];", type, var(i), n.imm)); break;
      case ir::op::array_load: declare(n, i, fmt::format("{}[{}]", var(n.a), v(n.b))); break;
      case ir::op::array_store: line(fmt::format("{}[{}] = {};", var(n.a), v(n.b), v(n.c))); break;
      case ir::op::local_atomic:
        // A task-local variable is private to its invocation: a plain read-modify-write with
        // the atomics' semantics.
        declare(n, i, var(n.a));
        line(fmt::format("{} = {};", var(n.a),
                         update(static_cast<ir::atomic_op>(n.sub), n.type, v(i), v(n.b), expected(n))));
        break;
      // Temporaries are 8-byte slots; types of 32 bits and less are kept as 32-bit words.
      case ir::op::temp_load: declare(n, i, temp_load(n.type, temp_address(n.imm))); break;
      case ir::op::temp_store: line(temp_store(n.type, temp_address(n.imm), v(n.a))); break;
      case ir::op::temp_atomic:
        if (const chunk_reduction* r = reduction_of(n)) {
          const std::string acc = fmt::format("qd_red.r{}", r - reductions_.data());
          // A sub's accumulator adds (the flush subtracts the sum).
          const ir::atomic_op o = r->op == ir::atomic_op::sub ? ir::atomic_op::add : r->op;
          line(fmt::format("{} = {};", acc, update(o, r->type, acc, v(n.a), "")));
          break;
        }
        declare(n, i, std::string(glsl_zero(n.type)));
        line(fmt::format("{}({}, {}{}, {});", atomic_call(static_cast<ir::atomic_op>(n.sub), n.type),
                         temp_address(n.imm), v(n.a), expected_arg(n), v(i)));
        break;
      case ir::op::range_for: {
        const auto rank = static_cast<std::int32_t>(n.imm);
        // GLSL has no goto: a break out of a rank-N loop sets a flag each level checks.
        const bool flagged = rank > 1 && is_broken(i);
        if (flagged) line(fmt::format("bool {} = false;", break_flag(i)));
        for (std::int32_t d = 0; d < rank; ++d) {
          const ir::id index = fn_.block(n.block0)[static_cast<std::size_t>(d)];
          const std::string begin = rank == 1 ? v(n.a) : std::string("0");
          const std::string end = rank == 1 ? v(n.b) : v(fn_.list(n, d));
          line(fmt::format("for (int {0} = {1}; {0} < {2}; ++{0}) {{", v(index), begin, end));
          ++indent_;
        }
        emit_block(n.block0, static_cast<std::size_t>(rank));
        for (std::int32_t d = rank - 1; d >= 0; --d) {
          --indent_;
          line("}");
          if (flagged && d > 0) line(fmt::format("if ({}) break;", break_flag(i)));
        }
        break;
      }
      case ir::op::if_:
        line(fmt::format("if ({}) {{", v(n.a)));
        ++indent_;
        emit_block(n.block0);
        --indent_;
        if (!fn_.block(n.block1).empty()) {
          line("} else {");
          ++indent_;
          emit_block(n.block1);
          --indent_;
        }
        line("}");
        break;
      case ir::op::while_:
        line("while (true) {");
        ++indent_;
        emit_block(n.block0);
        line(fmt::format("if (!{}) break;", v(n.a)));
        emit_block(n.block1);
        --indent_;
        line("}");
        break;
      case ir::op::random: {
        const std::string helper = fmt::format("random_{}", name(n.type));
        need(helper);
        declare(n, i, fmt::format("qd_{}(qd_rng)", helper));
        break;
      }
      case ir::op::continue_:
        // The parallel loop's body is a function called per iteration.
        line(n.a == parallel_loop_ ? "return;" : "continue;");
        break;
      case ir::op::break_:
        if (fn_.at(n.a).code == ir::op::range_for && fn_.at(n.a).imm > 1)
          line(fmt::format("{{ {} = true; break; }}", break_flag(n.a)));
        else
          line("break;");
        break;
      case ir::op::graph_mark: throw internal_error("GLSL emitter: a graph mark inside a task (marks are in no task)");
      case ir::op::print: emit_print(n); break;
    }
  }

  // One record in the print buffer; the host formats it from the task's markers. A failed
  // qd::assert_ writes the error record instead (flag 1, parameter -1, its number), as the
  // C++ backends do: the runtime reports the assertion's message.
  void emit_print(const ir::node& n) {
    if (n.flags & ir::print_flags::assertion) {
      need("report");
      line(fmt::format("qd_report(1u, -1l, -1l, {}l, 0l);", n.imm));
      return;
    }
    need("print");
    std::vector<glsl_print_piece> pieces;
    std::vector<std::string> words;
    for (std::int32_t k = 0; k < n.list_size; ++k) {
      const std::int32_t item = fn_.list(n, k);
      if (ir::is_text(item)) {
        pieces.push_back({true, fn_.strings[static_cast<std::size_t>(ir::text_index(item))], dtype::i32});
        continue;
      }
      const dtype t = fn_.at(item).type;
      pieces.push_back({false, {}, t});
      const std::string x = v(item);
      switch (t) {
        case dtype::f32: words.push_back(fmt::format("uint64_t(floatBitsToUint({}))", x)); break;
        case dtype::f16:  // printed as its f32 value, as the C++ backends
          need("f16");
          words.push_back(fmt::format("uint64_t(floatBitsToUint(qd_f16_to_f32({})))", x));
          break;
        case dtype::f64: words.push_back(fmt::format("doubleBitsToUint64({})", x)); break;
        case dtype::i8:
        case dtype::i16:
        case dtype::i32: words.push_back(fmt::format("uint64_t(qd_sext({}))", x)); break;
        case dtype::boolean: words.push_back(fmt::format("({} ? 1ul : 0ul)", x)); break;
        case dtype::u8:
        case dtype::u16:
        case dtype::u32:
        case dtype::i64:
        case dtype::u64: words.push_back(fmt::format("uint64_t({})", x)); break;
      }
    }
    const std::size_t site = prints_.size();
    prints_.push_back(std::move(pieces));
    line("{");
    ++indent_;
    line(fmt::format("uint qd_at = qd_print_alloc({}u);", words.size() + 1));
    line("if (qd_at != 0xffffffffu) {");
    ++indent_;
    line("uint64_t qd_w = qd_push.print + 8ul + uint64_t(qd_at) * 8ul;");
    for (std::size_t k = 0; k < words.size(); ++k)
      line(fmt::format("qd_u64_ref(qd_w + {}ul).v = {};", 8 * (k + 1), words[k]));
    line(fmt::format("qd_u64_ref(qd_w).v = {}ul;", ((site + 1) << 32) | words.size()));
    --indent_;
    line("}");
    --indent_;
    line("}");
  }

  std::string break_flag(ir::id loop) const {
    return fmt::format("qd_break{}", number_[static_cast<std::size_t>(loop)]);
  }
  bool is_broken(ir::id loop) const {
    bool found = false;
    ir::walk(fn_, fn_.at(loop).block0,
             [&](ir::id j, int) { found |= fn_.at(j).code == ir::op::break_ && fn_.at(j).a == loop; });
    return found;
  }

  const lowered_task& t_;
  const ir::function& fn_;
  std::string_view entry_;
  const glsl_options& options_;
  const glsl_target& target_;
  std::string_view what_;
  std::vector<ir::id> number_;
  ir::id parallel_loop_ = ir::none;
  std::vector<chunk_reduction> reductions_;
  std::vector<std::int32_t> arrays_;  // array parameters the task reaches, sorted
  std::vector<std::string> helper_names_, helper_code_;
  std::vector<std::vector<glsl_print_piece>> prints_;
  glsl_task_info info_;
  std::string code_;
  int indent_ = 0;
};

}  // namespace detail

QD_FUNC std::string emit_glsl_task(const lowered_task& t, std::string_view entry, const glsl_options& options,
                                   std::string_view what) {
  return detail::glsl_emitter(t, entry, options, what).run();
}

}  // namespace qd::inline v0::codegen
