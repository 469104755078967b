// Implementation of codegen/cpp_emitter.hpp.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>

#include "quadrants/base/error.hpp"
#include "quadrants/base/limits.hpp"
#include "quadrants/codegen/cpp_emitter.hpp"
#include "quadrants/codegen/reductions.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/ir/walk.hpp"

namespace qd::inline v0::codegen {

QD_FUNC std::string_view c_type(dtype t) {
  switch (t) {
    case dtype::boolean: return "qd_bool";
    case dtype::u8: return "qd_u8";
    case dtype::i32: return "qd_i32";
    case dtype::u32: return "qd_u32";
    case dtype::i64: return "qd_i64";
    case dtype::f32: return "qd_f32";
    case dtype::f64: return "qd_f64";
    case dtype::i8: return "qd_i8";
    case dtype::i16: return "qd_i16";
    case dtype::u16: return "qd_u16";
    case dtype::u64: return "qd_u64";
    case dtype::f16: return "qd_f16";
  }
  return "void";
}

namespace detail {

QD_FUNC std::string literal(const ir::node& n) {
  switch (n.type) {
    case dtype::f32: {
      float v = std::bit_cast<float>(static_cast<std::uint32_t>(n.imm));
      if (!std::isfinite(v)) return fmt::format("qd_f32_from_bits({}u)", static_cast<std::uint32_t>(n.imm));
      return fmt::format("{:a}f", v);
    }
    case dtype::f64: {
      double v = std::bit_cast<double>(n.imm);
      if (!std::isfinite(v)) return fmt::format("qd_f64_from_bits({}ull)", static_cast<std::uint64_t>(n.imm));
      return fmt::format("{:a}", v);
    }
    case dtype::f16: return fmt::format("qd_f16_from_bits({}u)", static_cast<std::uint16_t>(n.imm));
    case dtype::boolean: return n.imm ? "true" : "false";
    case dtype::u8:
    case dtype::i8:
    case dtype::i16:
    case dtype::u16: return fmt::format("({}){}", c_type(n.type), n.imm);
    case dtype::u32: return fmt::format("{}u", static_cast<std::uint32_t>(n.imm));
    case dtype::u64: return fmt::format("{}ull", static_cast<std::uint64_t>(n.imm));
    case dtype::i32:
    case dtype::i64:
      if (n.imm == INT64_MIN) return fmt::format("({})(-9223372036854775807ll - 1)", c_type(n.type));
      return fmt::format("({}){}ll", c_type(n.type), n.imm);
  }
  return "0";
}

QD_FUNC std::string_view unary_call(ir::unary_op o) {
  switch (o) {
    case ir::unary_op::neg: return "-";
    case ir::unary_op::logical_not: return "!";
    case ir::unary_op::bit_not: return "~";
    case ir::unary_op::sqrt: return "qd_sqrt";
    case ir::unary_op::exp: return "qd_exp";
    case ir::unary_op::log: return "qd_log";
    case ir::unary_op::sin: return "qd_sin";
    case ir::unary_op::cos: return "qd_cos";
    case ir::unary_op::tanh: return "qd_tanh";
    case ir::unary_op::abs: return "qd_abs";
    case ir::unary_op::floor: return "qd_floor";
    case ir::unary_op::ceil: return "qd_ceil";
    case ir::unary_op::tan: return "qd_tan";
    case ir::unary_op::asin: return "qd_asin";
    case ir::unary_op::acos: return "qd_acos";
    case ir::unary_op::rsqrt: return "qd_rsqrt";
    case ir::unary_op::log2: return "qd_log2";
    case ir::unary_op::exp2: return "qd_exp2";
    case ir::unary_op::round: return "qd_round";
    case ir::unary_op::trunc: return "qd_trunc";
    case ir::unary_op::isnan: return "qd_isnan";
    case ir::unary_op::isinf: return "qd_isinf";
    case ir::unary_op::isfinite: return "qd_isfinite";
    case ir::unary_op::popcnt: return "qd_popcnt";
    case ir::unary_op::clz: return "qd_clz";
    case ir::unary_op::ffs: return "qd_ffs";
    case ir::unary_op::bit_cast: return "?";  // emitted by bit_cast() below
  }
  return "?";
}

// Infix operator for binary ops that map directly to C, or "" for a helper call.
QD_FUNC std::string_view infix(ir::binary_op o, dtype operand_type) {
  switch (o) {
    case ir::binary_op::add: return "+";
    case ir::binary_op::sub: return "-";
    case ir::binary_op::mul: return "*";
    case ir::binary_op::div: return is_float(operand_type) ? "/" : "";
    case ir::binary_op::bit_and: return "&";
    case ir::binary_op::bit_or: return "|";
    case ir::binary_op::bit_xor: return "^";
    case ir::binary_op::logical_and: return "&&";
    case ir::binary_op::logical_or: return "||";
    case ir::binary_op::eq: return "==";
    case ir::binary_op::ne: return "!=";
    case ir::binary_op::lt: return "<";
    case ir::binary_op::le: return "<=";
    case ir::binary_op::gt: return ">";
    case ir::binary_op::ge: return ">=";
    case ir::binary_op::max:
    case ir::binary_op::min:
    case ir::binary_op::mod:
    case ir::binary_op::pow:
    case ir::binary_op::shl:
    case ir::binary_op::shr:
    case ir::binary_op::atan2:
    case ir::binary_op::fmod:
    case ir::binary_op::floordiv:
    case ir::binary_op::floormod: return "";
  }
  return "";
}

QD_FUNC std::string_view helper(ir::binary_op o) {
  switch (o) {
    case ir::binary_op::div: return "qd_div";
    case ir::binary_op::mod: return "qd_mod";
    case ir::binary_op::min: return "qd_min";
    case ir::binary_op::max: return "qd_max";
    case ir::binary_op::pow: return "qd_pow";
    case ir::binary_op::shl: return "qd_shl";
    case ir::binary_op::shr: return "qd_shr";
    case ir::binary_op::atan2: return "qd_atan2";
    case ir::binary_op::fmod: return "qd_fmod";
    case ir::binary_op::floordiv: return "qd_floordiv";
    case ir::binary_op::floormod: return "qd_floormod";
    case ir::binary_op::add:
    case ir::binary_op::bit_and:
    case ir::binary_op::bit_or:
    case ir::binary_op::bit_xor:
    case ir::binary_op::eq:
    case ir::binary_op::ge:
    case ir::binary_op::gt:
    case ir::binary_op::le:
    case ir::binary_op::logical_and:
    case ir::binary_op::logical_or:
    case ir::binary_op::lt:
    case ir::binary_op::mul:
    case ir::binary_op::ne:
    case ir::binary_op::sub: return "?";
  }
  return "?";
}

// The unsigned type signed arithmetic wraps through: signed overflow is
// undefined in C++, and the host compiler and NVRTC optimize on that.
QD_FUNC std::string_view wrapping_type(dtype t) {
  switch (t) {
    case dtype::i32: return "qd_u32";
    case dtype::i64: return "qd_u64";
    case dtype::u16: return "qd_u32";  // u16 * u16 promotes to int, where it may overflow
    case dtype::boolean:
    case dtype::f16:
    case dtype::f32:
    case dtype::f64:
    case dtype::u32:
    case dtype::u64:
    case dtype::i8:
    case dtype::i16:
    case dtype::u8: return "";
  }
  return "";
}

// `a op b` for +, - and *: two's-complement wrap-around for signed integers.
QD_FUNC std::string wrapping_arithmetic(dtype t, std::string_view op, const std::string& a, const std::string& b) {
  std::string_view u = wrapping_type(t);
  if (u.empty()) return fmt::format("{} {} {}", a, op, b);
  return fmt::format("({})(({}){} {} ({}){})", c_type(t), u, a, op, u, b);
}

QD_FUNC std::string atomic_helper(ir::atomic_op o) { return fmt::format("qd_atomic_{}", ir::name(o)); }

// The value an atomic `o` leaves given the old value and its operand(s): the prelude's
// qd_rmw_* (one definition of the atomics' semantics), but + and - of the types with
// an operator inline, as a plain update (analysis/atomic_demotion.hpp) always was.
QD_FUNC std::string updated_value(ir::atomic_op o, dtype t, const std::string& old, const std::string& v,
                                  const std::string& expected) {
  if ((o == ir::atomic_op::add || o == ir::atomic_op::sub) && t != dtype::f16)
    return wrapping_arithmetic(t, o == ir::atomic_op::add ? "+" : "-", old, v);
  if (o == ir::atomic_op::cas) return fmt::format("qd_rmw_cas({}, {}, {})", old, v, expected);
  return fmt::format("qd_rmw_{}({}, {})", ir::name(o), old, v);
}

// A zero of type t, for the value of a skipped (out-of-range) access.
QD_FUNC std::string zero_of(dtype t) {
  return t == dtype::f16 ? std::string("qd_f16_from_bits(0u)") : fmt::format("({})0", c_type(t));
}

// The bits of value `x` of type `from` as type `to`, of the same size.
QD_FUNC std::string bit_cast(dtype from, dtype to, const std::string& x) {
  const std::string bits = from == dtype::f16   ? x + ".bits"
                           : from == dtype::f32 ? fmt::format("qd_f32_bits({})", x)
                           : from == dtype::f64 ? fmt::format("qd_f64_bits({})", x)
                                                : x;
  if (to == dtype::f16) return fmt::format("qd_f16_from_bits((qd_u16){})", bits);
  if (to == dtype::f32) return fmt::format("qd_f32_from_bits((qd_u32){})", bits);
  if (to == dtype::f64) return fmt::format("qd_f64_from_bits((qd_u64){})", bits);
  return fmt::format("({}){}", c_type(to), bits);
}

// A conversion of `x` from `from` to `to` (not bool): f16 through f32, floats to
// integers saturating (defined for NaN and out-of-range values), else C's.
QD_FUNC std::string converted(dtype from, dtype to, const std::string& x) {
  if (from == dtype::f16) {
    const std::string wide = fmt::format("qd_f16_to_f32({})", x);
    return to == dtype::f32 ? wide : converted(dtype::f32, to, wide);
  }
  if (to == dtype::f16) {
    if (from == dtype::f64) return fmt::format("qd_f64_to_f16({})", x);
    // f32 directly; an integer exactly (every integer f16 does not overflow on is exact in f32)
    return fmt::format("qd_f32_to_f16({})", from == dtype::f32 ? x : fmt::format("(qd_f32){}", x));
  }
  if (is_float(from) && !is_float(to)) return fmt::format("qd_to_{}({})", name(to), x);
  return fmt::format("({}){}", c_type(to), x);
}

QD_FUNC std::string escape_format(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '%': out += "%%"; break;
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\{:03o}", static_cast<unsigned char>(c));
        else
          out += c;
    }
  }
  return out;
}

class emitter {
 public:
  emitter(const lowered_task& t, std::string_view entry, const emit_options& options)
      : t_(t),
        fn_(t.fn),
        entry_(entry),
        options_(options),
        number_(ir::canonical_numbering(fn_)),
        addressing_(addressing_only()),
        scatter_(has_scatter()) {}

  std::string run() {
    if (t_.parallel)
      emit_parallel();
    else
      emit_serial();
    return std::move(out_);
  }

 private:
  static bool is_signed_arithmetic(const ir::node& n) {
    auto o = static_cast<ir::binary_op>(n.sub);
    return n.code == ir::op::binary && !wrapping_type(n.type).empty() && is_signed(n.type) &&
           (o == ir::binary_op::add || o == ir::binary_op::sub || o == ir::binary_op::mul);
  }

  // Signed +, - and * whose results only address array elements (directly or
  // through more such arithmetic) keep C++'s signed operators: an overflow there
  // is an out-of-range access either way, and the host compiler can then
  // strength-reduce x(i, j + 1) in the row loop (wrapping cost ~7% on a stencil).
  std::vector<bool> addressing_only() const {
    std::vector<bool> only(fn_.nodes.size(), false);
    ir::walk(fn_, 0, [&](ir::id i, int) { only[static_cast<std::size_t>(i)] = is_signed_arithmetic(fn_.at(i)); });
    for (bool changed = true; changed;) {
      changed = false;
      ir::walk(fn_, 0, [&](ir::id user, int) {
        const ir::node& n = fn_.at(user);
        // Clamped indices are not addresses: which edge an overflowed index clamps to is observable.
        const bool access =
            (n.code == ir::op::global_load || n.code == ir::op::global_store || n.code == ir::op::global_atomic) &&
            (n.flags & ir::access::clamp) == 0;
        const bool addressing_user = only[static_cast<std::size_t>(user)];
        auto use = [&](ir::id o, bool as_index) {
          if (!only[static_cast<std::size_t>(o)] || as_index || addressing_user) return;
          only[static_cast<std::size_t>(o)] = false;
          changed = true;
        };
        for (ir::id o : {n.a, n.b, n.c})
          if (o != ir::none) use(o, false);
        for (std::int32_t k = 0; k < n.list_size; ++k) {
          std::int32_t item = fn_.list(n, k);
          if (!ir::is_text(item)) use(item, access);
        }
      });
    }
    return only;
  }

  // Whether the task updates array elements atomically (not `owned`, demoted): the
  // prelude's *_SCATTER_* wrappers then say, in `qd_plain`, whether it runs alone on one
  // CPU thread, where its updates may be plain (backend/cpu/scatter_gate.hpp).
  bool has_scatter() const {
    bool found = false;
    ir::walk(fn_, 0, [&](ir::id i, int) {
      const ir::node& n = fn_.at(i);
      found |= n.code == ir::op::global_atomic && (n.flags & ir::access::owned) == 0;
    });
    return found;
  }

  std::string v(ir::id i) const { return fmt::format("v{}", number_[static_cast<std::size_t>(i)]); }
  // ", expected" of a compare-and-swap (operand c), else "".
  std::string expected(const ir::node& n) const { return n.c == ir::none ? std::string() : ", " + v(n.c); }
  std::string var(ir::id decl) const { return fmt::format("l{}", number_[static_cast<std::size_t>(decl)]); }
  void line(std::string_view text) {
    out_.append(static_cast<std::size_t>(indent_) * 2, ' ');
    out_ += text;
    out_ += '\n';
  }

  bool uses_random(std::int32_t block) const {
    bool found = false;
    ir::walk(fn_, block, [&](ir::id i, int) { found |= fn_.at(i).code == ir::op::random; });
    return found;
  }

  void emit_serial() {
    line(fmt::format("QD_FN void {}_run(const qd_ctx* ctx{}) {{", entry_, scatter_ ? ", const int qd_plain" : ""));
    ++indent_;
    if (uses_random(0)) line("qd_u64 qd_rng = qd_rng_init(ctx->rng_stream, 0);");
    emit_block(0);
    --indent_;
    line("}");
    line(fmt::format("QD_SERIAL{}_TASK({})", scatter_ ? "_SCATTER" : "", entry_));
  }

  void emit_parallel() {
    const auto& top = fn_.block(0);
    if (top.empty() || fn_.at(top.back()).code != ir::op::range_for)
      throw internal_error("codegen: a parallel task must end with its loop");
    ir::id loop = top.back();
    parallel_loop_ = loop;
    const ir::node& ln = fn_.at(loop);
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
    find_private_targets(loop);
    // A loop without reductions or atomic updates is written straight into the backend's
    // loop (QD_PARALLEL_BEGIN/END): no per-iteration function or accumulator struct for the
    // compiler to inline away, about a tenth of a cold compile (docs/benchmarks.md).
    inline_body_ = reductions_.empty() && !scatter_;
    if (!inline_body_) emit_reduction_functions();
    if (!private_.empty()) emit_private_functions();
    line(fmt::format("struct {}_frame {{", entry_));
    ++indent_;
    line("qd_i64 qd_base; qd_i64 qd_dims[QD_MAX_NDIM]; qd_i64 qd_count;");
    if (scatter_) line("int qd_plain;");
    for (ir::id f : frame) line(fmt::format("{} {};", c_type(fn_.at(f).type), member(f)));
    --indent_;
    line("};");
    line(fmt::format("QD_FN void {0}_prologue(const qd_ctx* ctx, {0}_frame* qd_f) {{", entry_));
    ++indent_;
    if (scatter_) line("const int qd_plain = 0; (void)qd_plain; qd_f->qd_plain = 0;");  // the wrapper decides later
    for (std::size_t k = 0; k + 1 < top.size(); ++k) emit(top[k]);
    for (ir::id f : frame) line(fmt::format("qd_f->{0} = {0};", member(f)));
    if (rank == 1) {
      line(fmt::format("qd_f->qd_base = {}; qd_f->qd_dims[0] = (qd_i64){} - (qd_i64){};", v(ln.a), v(ln.b), v(ln.a)));
    } else {
      line("qd_f->qd_base = 0;");
      for (std::int32_t d = 0; d < rank; ++d) line(fmt::format("qd_f->qd_dims[{}] = {};", d, v(fn_.list(ln, d))));
    }
    // The iteration count, >= 0, from the 32-bit bounds (cheaper than 64-bit arithmetic on the GPUs).
    if (rank == 1) {
      line(fmt::format("qd_f->qd_count = {} > {} ? qd_f->qd_dims[0] : 0;", v(ln.b), v(ln.a)));
    } else {
      std::string count;
      for (std::int32_t d = 0; d < rank; ++d) {
        const std::string e = v(fn_.list(ln, d));
        count += fmt::format("{}(qd_i64)({} > 0 ? {} : 0)", d ? " * " : "", e, e);
      }
      line(fmt::format("qd_f->qd_count = {};", count));
    }
    --indent_;
    line("}");
    // A body with a loop of its own: few iterations are still worth spreading over CPU threads.
    const bool nested = has_nested_loop(fn_, ln.block0);
    const std::string block = ln.param > 0 ? std::to_string(ln.param) : std::string("QD_BLOCK");
    if (inline_body_)
      line(fmt::format("QD_PARALLEL_BEGIN({}, {}, {})", entry_, rank, block));
    else
      line(
          fmt::format("QD_FN void {0}_body(const qd_ctx* ctx, const {0}_frame qd_f, {0}_red* qd_red, qd_i32 qd_i0, "
                      "qd_i32 qd_i1, qd_i32 qd_i2, qd_i32 qd_i3) {{",
                      entry_));
    ++indent_;
    for (ir::id f : frame) {
      bool is_var = fn_.at(f).code == ir::op::local_decl;
      line(fmt::format("{}{} {} = qd_f.{};", is_var ? "" : "const ", c_type(fn_.at(f).type), member(f), member(f)));
    }
    line(inline_body_ ? "(void)qd_i0; (void)qd_i1; (void)qd_i2; (void)qd_i3;"
                      : "(void)qd_red; (void)qd_i0; (void)qd_i1; (void)qd_i2; (void)qd_i3;");
    if (scatter_) line("const int qd_plain = QD_PLAIN(qd_f); (void)qd_plain;");
    if (uses_random(ln.block0))
      line(
          "qd_u64 qd_rng = qd_rng_init(ctx->rng_stream, (qd_u64)(qd_i0 - qd_f.qd_base) * 0x100000001b3ull + (qd_u64)qd_i1 * 0x9e37ull + (qd_u64)qd_i2 * 0x85ebull + (qd_u64)qd_i3);");
    for (std::int32_t d = 0; d < rank; ++d)
      line(fmt::format("const qd_i32 {} = qd_i{};", v(fn_.block(ln.block0)[static_cast<std::size_t>(d)]), d));
    emit_block(ln.block0, static_cast<std::size_t>(rank));
    --indent_;
    if (inline_body_) {
      line(fmt::format("QD_PARALLEL_END({}, {}, {})", entry_, rank, nested ? 1 : 0));
      return;
    }
    line("}");
    if (!reductions_.empty()) {
      // Chunked, combined in a fixed order (codegen/reductions.hpp); on a GPU only with
      // deterministic_reductions (DET), in the scratch region at `reduction_scratch_offset`.
      const bool det = options_.deterministic_reductions;
      if (det)
        check_deterministic_limits(ln.param > 0 ? ln.param : static_cast<std::int64_t>(limits::gpu_threads_per_block));
      line(fmt::format("QD_PARALLEL_REDUCE_TASK({}, {}, {}, {}, {}, {}, {})", entry_, rank, block, det ? 1 : 0,
                       options_.reduction_scratch_offset,
                       nested ? "QD_NESTED_REDUCTION_CHUNK_MIN" : "QD_REDUCTION_CHUNK_MIN", scatter_ ? 1 : 0));
    } else {
      line(fmt::format("QD_PARALLEL_SCATTER_TASK({}, {}, {}, {}, {})", entry_, rank, block, nested ? 1 : 0,
                       private_.empty() ? 0 : 1));
    }
  }

  // A GPU block combines its threads' accumulators in shared memory, and each chunk's
  // partial of each reduction has a place in the scratch region.
  void check_deterministic_limits(std::int64_t block) const {
    const auto count = static_cast<std::int64_t>(reductions_.size());
    if (count > gpu_deterministic_reductions_max)
      throw user_error(
          fmt::format("a parallel loop with {} reductions into top-level qd::vars: deterministic_reductions "
                      "supports at most {} per loop on GPUs; split the loop, or reduce into arrays",
                      count, gpu_deterministic_reductions_max));
    const std::int64_t shared = block * (count + 1) * 8;
    if (shared > 40960)
      throw user_error(
          fmt::format("a parallel loop with {} reductions and qd::loop_config{{.block_dim = {}}}: "
                      "deterministic_reductions combines them in {} bytes of shared memory (at most "
                      "40960); use a smaller block_dim or fewer reductions per loop",
                      count, block, shared));
  }

  // A reduction into a global temporary whose old value nobody reads, and whose
  // slot the loop never loads or assigns, accumulates per chunk (or GPU thread) and
  // is flushed with one atomic: no contended atomic per iteration. (With a plain
  // store to the slot in the loop, a flush after the chunk would give a result no
  // order of the iterations gives.)
  const chunk_reduction* reduction_of(const ir::node& n) const {
    int r = reduction_index(reductions_, n);
    return r < 0 ? nullptr : &reductions_[static_cast<std::size_t>(r)];
  }

  // Of floats' min and max: a NaN, minNum's identity (any value replaces it).
  static std::string identity(const chunk_reduction& r) {
    const dtype t = accumulator_type(r);
    if (r.op != ir::atomic_op::min && r.op != ir::atomic_op::max) return zero_of(t);  // add, sub
    if (t == dtype::f32) return "qd_f32_from_bits(0x7fc00000u)";
    if (t == dtype::f64) return "qd_f64_from_bits(0x7ff8000000000000ull)";
    if (t == dtype::f16) return "qd_f16_from_bits(0x7e00u)";
    return fmt::format("qd_{}_value_{}()", r.op == ir::atomic_op::min ? "max" : "lowest", name(t));
  }

  // `acc = acc (op) value`, with the atomics' semantics (qd_rmw_*): a sub's accumulator
  // adds (the flush subtracts the sum); sums wrap for signed integers.
  static std::string accumulate(const chunk_reduction& r, const std::string& acc, const std::string& value) {
    const ir::atomic_op o = r.op == ir::atomic_op::sub ? ir::atomic_op::add : r.op;
    return fmt::format("{} = {};", acc, updated_value(o, accumulator_type(r), acc, value, ""));
  }

  // Arrays (or gradient buffers) a CPU scatter task may add into through a chunk-private copy.
  struct private_target {
    std::int32_t param;
    bool grad;
    dtype type;
  };

  // A scatter's float additions into an array (or a gradient buffer) that the loop only
  // ever adds into, never reading the old values, may go into a chunk-private copy of
  // the array, zeroed when the chunk starts and added into the array with one atomic per
  // element when it ends (docs/dsl.md, "Chunk-private copies"): the CPU chooses per chunk
  // (_priv_begin); GPUs keep their native atomics (QD_PRIVATE_SCATTER is 0 there).
  void find_private_targets(ir::id loop) {
    private_.clear();
    if (!scatter_ || !reductions_.empty()) return;
    std::vector<bool> used(fn_.nodes.size(), false);
    ir::walk(fn_, 0, [&](ir::id i, int) {
      ir::for_each_operand(fn_, fn_.at(i), [&](ir::id o) { used[static_cast<std::size_t>(o)] = true; });
    });
    struct seen {
      std::int32_t param;
      bool grad, ok, nested;
      dtype type;
    };
    std::vector<seen> keys;
    ir::walk(fn_, fn_.at(loop).block0, [&](ir::id i, int) {
      const ir::node& n = fn_.at(i);
      if (n.code != ir::op::global_load && n.code != ir::op::global_store && n.code != ir::op::global_atomic) return;
      const bool grad = (n.flags & ir::access::grad) != 0;
      auto k =
          std::find_if(keys.begin(), keys.end(), [&](const seen& e) { return e.param == n.param && e.grad == grad; });
      if (k == keys.end()) k = keys.insert(keys.end(), seen{n.param, grad, true, false, n.type});
      const bool addition = n.code == ir::op::global_atomic &&
                            static_cast<ir::atomic_op>(n.sub) == ir::atomic_op::add &&
                            (n.flags & ir::access::owned) == 0 && !used[static_cast<std::size_t>(i)] &&
                            (n.type == dtype::f32 || n.type == dtype::f64);
      k->ok = k->ok && addition;
      for (ir::id b = fn_.node_block[static_cast<std::size_t>(i)]; b != fn_.at(loop).block0;) {
        const ir::id owner = fn_.block_owner[static_cast<std::size_t>(b)];
        k->nested = k->nested || fn_.at(owner).code == ir::op::range_for || fn_.at(owner).code == ir::op::while_;
        b = fn_.node_block[static_cast<std::size_t>(owner)];
      }
    });
    // Only where updates are inside a loop of the body (an N-body adjoint: thousands per
    // iteration). With one update per iteration (a particle scatter) the copies measured
    // slower than the atomics (scatter_bench, two threads: 8.5 against 6.9 ms).
    for (const seen& k : keys)
      if (k.ok && k.nested) private_.push_back({k.param, k.grad, k.type});
  }
  int private_index(const ir::node& n) const {
    for (std::size_t k = 0; k < private_.size(); ++k)
      if (private_[k].param == n.param && private_[k].grad == ((n.flags & ir::access::grad) != 0))
        return static_cast<int>(k);
    return -1;
  }
  std::string element_count(std::int32_t param) const {
    std::string count = "(qd_i64)1";
    for (std::int32_t d = 0; d < fn_.params[static_cast<std::size_t>(param)].ndim; ++d)
      count += fmt::format(" * ctx->arrays[{}].shape[{}]", param, d);
    return count;
  }
  std::string private_base(const private_target& t) const {
    return fmt::format("(({}*)ctx->arrays[{}].{})", c_type(t.type), t.param, t.grad ? "grad" : "data");
  }

  // A chunk's private copies: each taken while the store has room.
  void emit_private_functions() {
    line(
        fmt::format("QD_FN void {0}_priv_begin(const qd_ctx* ctx, {0}_red* qd_r, unsigned char* qd_store, "
                    "qd_i64 qd_bytes) {{",
                    entry_));
    ++indent_;
    line("qd_i64 qd_used = 0; (void)ctx; (void)qd_r; (void)qd_store; (void)qd_bytes;");
    for (std::size_t k = 0; k < private_.size(); ++k) {
      const private_target& t = private_[k];
      const std::string count = element_count(t.param);
      line("{");
      ++indent_;
      line(fmt::format("const qd_i64 qd_n = {}, qd_b = (qd_n * (qd_i64)sizeof({}) + 63) & ~(qd_i64)63;", count,
                       c_type(t.type)));
      line("if (qd_used + qd_b <= qd_bytes) {");
      line(fmt::format("  {0}* qd_p = ({0}*)(qd_store + qd_used);", c_type(t.type)));
      line("  for (qd_i64 qd_e = 0; qd_e < qd_n; ++qd_e) qd_p[qd_e] = 0;");
      line(fmt::format("  qd_r->p{} = qd_p;", k));
      line("  qd_used += qd_b;");
      line("}");
      --indent_;
      line("}");
    }
    --indent_;
    line("}");
    // Chunks flush from different places (a hash of the chunk's start): two threads flushing
    // at once then seldom update the same cache line together.
    line(fmt::format("QD_FN void {0}_priv_end(const qd_ctx* ctx, const {0}_red* qd_r, qd_i64 qd_lo) {{", entry_));
    ++indent_;
    line("(void)ctx; (void)qd_r; (void)qd_lo;");
    for (std::size_t k = 0; k < private_.size(); ++k) {
      const private_target& t = private_[k];
      const std::string count = element_count(t.param);
      line(fmt::format("if (qd_r->p{} && {} > 0) {{", k, count));
      line(fmt::format("  const qd_i64 qd_n = {};", count));
      line("  const qd_i64 qd_s = (qd_i64)(((qd_u64)qd_lo * 0x9e3779b97f4a7c15ull >> 17) % (qd_u64)qd_n);");
      line("  for (qd_i64 qd_k = 0; qd_k < qd_n; ++qd_k) {");
      line("    const qd_i64 qd_e = qd_k + qd_s < qd_n ? qd_k + qd_s : qd_k + qd_s - qd_n;");
      line(fmt::format("    if (qd_r->p{0}[qd_e] != 0) qd_atomic_add(&{1}[qd_e], qd_r->p{0}[qd_e]);", k,
                       private_base(t)));
      line("  }");
      line("}");
    }
    --indent_;
    line("}");
  }

  // The accumulators of one thread or chunk: init, flush into the slots and, for a loop
  // with reductions, merge (a fixed-order combine) and a load through volatile (another
  // GPU block's partial).
  void emit_reduction_functions() {
    line(fmt::format("struct {}_red {{", entry_));
    ++indent_;
    line("qd_i32 qd_unused;");
    for (std::size_t k = 0; k < reductions_.size(); ++k)
      line(fmt::format("{} r{};", c_type(accumulator_type(reductions_[k])), k));
    for (std::size_t k = 0; k < private_.size(); ++k) line(fmt::format("{}* p{};", c_type(private_[k].type), k));
    --indent_;
    line("};");
    line(fmt::format("QD_FN void {0}_red_init({0}_red* qd_r) {{", entry_));
    ++indent_;
    line("qd_r->qd_unused = 0;");
    for (std::size_t k = 0; k < reductions_.size(); ++k)
      line(fmt::format("qd_r->r{} = {};", k, identity(reductions_[k])));
    for (std::size_t k = 0; k < private_.size(); ++k) line(fmt::format("qd_r->p{} = 0;", k));
    --indent_;
    line("}");
    if (!reductions_.empty()) emit_combine_functions();
    line(fmt::format("QD_FN void {0}_red_flush(const qd_ctx* ctx, const {0}_red* qd_r) {{", entry_));
    ++indent_;
    line("(void)ctx; (void)qd_r;");
    for (std::size_t k = 0; k < reductions_.size(); ++k) {
      const chunk_reduction& r = reductions_[k];
      const std::string value =
          accumulator_type(r) == r.type ? fmt::format("qd_r->r{}", k) : fmt::format("({})qd_r->r{}", c_type(r.type), k);
      line(fmt::format("{}(({}*)(ctx->temps + {}), {});", atomic_helper(r.op), c_type(r.type), r.slot * 8, value));
    }
    --indent_;
    line("}");
  }

  void emit_combine_functions() {
    line(fmt::format("QD_FN void {0}_red_merge({0}_red* qd_a, const {0}_red* qd_b) {{", entry_));
    ++indent_;
    line("(void)qd_a; (void)qd_b;");
    for (std::size_t k = 0; k < reductions_.size(); ++k)
      line(accumulate(reductions_[k], fmt::format("qd_a->r{}", k), fmt::format("qd_b->r{}", k)));
    --indent_;
    line("}");
    line(fmt::format("QD_FN void {0}_red_load({0}_red* qd_a, const volatile {0}_red* qd_b) {{", entry_));
    ++indent_;
    line("qd_a->qd_unused = 0; (void)qd_b;");
    // An f16 (a struct) through its bits: a struct has no copy from volatile.
    for (std::size_t k = 0; k < reductions_.size(); ++k)
      line(accumulator_type(reductions_[k]) == dtype::f16 ? fmt::format("qd_a->r{0}.bits = qd_b->r{0}.bits;", k)
                                                          : fmt::format("qd_a->r{0} = qd_b->r{0};", k));
    --indent_;
    line("}");
  }

  std::string reduction_member(const ir::node& n) const {
    return fmt::format("qd_red->r{}", reduction_of(n) - reductions_.data());
  }

  std::string member(ir::id f) const { return fn_.at(f).code == ir::op::local_decl ? var(f) : v(f); }

  void emit_block(std::int32_t block, std::size_t skip = 0) {
    const auto& stmts = fn_.block(block);
    for (std::size_t k = skip; k < stmts.size(); ++k) emit(stmts[k]);
  }

  // Emits the index arithmetic of an access; returns the element expression and
  // the guard ("" when unchecked).
  std::pair<std::string, std::string> element(ir::id i) {
    const ir::node& n = fn_.at(i);
    std::string arr = fmt::format("ctx->arrays[{}]", n.param);
    std::string base = fmt::format("(({}*){}.{})", c_type(n.type), arr, (n.flags & ir::access::grad) ? "grad" : "data");
    // A volatile read (qd::volatile_load, loads only); an f16 (a struct, which has no copy
    // from volatile) through its bits.
    const bool volatile_f16 = (n.flags & ir::access::is_volatile) && n.type == dtype::f16;
    if (n.flags & ir::access::is_volatile)
      base = fmt::format("((volatile {}*){}.{})", volatile_f16 ? "qd_u16" : c_type(n.type), arr,
                         (n.flags & ir::access::grad) ? "grad" : "data");
    std::string guard;
    std::string linear;
    for (std::int32_t d = 0; d < n.list_size; ++d) {
      std::string idx = fmt::format("qd_x{}_{}", number_[static_cast<std::size_t>(i)], d);
      std::string extent = fmt::format("{}.shape[{}]", arr, d);
      line(fmt::format("qd_i64 {} = (qd_i64){};", idx, v(fn_.list(n, d))));
      if (n.flags & ir::access::clamp) line(fmt::format("{0} = qd_clamp_index({0}, {1});", idx, extent));
      if (options_.bounds_checks) {
        if (guard.empty()) {
          guard = fmt::format("qd_ok{}", number_[static_cast<std::size_t>(i)]);
          line(fmt::format("qd_bool {} = true;", guard));
        }
        line(fmt::format("{0} = qd_check_index(ctx, {1}, {2}, {3}, {4}) && {0};", guard, n.param, d, idx, extent));
      }
      // In bounds, an index is below its extent, so the offset is below the array's element
      // count: 32 bits hold it unless wide_offsets says an array is larger. The prelude's
      // qd_off is the type the backend computes such offsets in (32 bits where that is cheaper).
      const std::string_view type = options_.wide_offsets ? "qd_i64" : "qd_off";
      linear = d == 0 ? fmt::format("({}){}", type, idx)
                      : fmt::format("({}) * ({})qd_extent32(&{}) + ({}){}", linear, type, extent, type, idx);
    }
    if (linear.empty()) linear = "0";
    if (volatile_f16) return {fmt::format("qd_f16_from_bits({}[{}])", base, linear), guard};
    return {fmt::format("{}[{}]", base, linear), guard};
  }

  void emit(ir::id i) {
    const ir::node& n = fn_.at(i);
    const std::string_view type = c_type(n.type);
    switch (n.code) {
      case ir::op::constant: line(fmt::format("const {} {} = {};", type, v(i), literal(n))); break;
      case ir::op::arg:
        line(fmt::format("const {} {} = *(const {}*)(ctx->scalars + {});", type, v(i), type, n.param));
        break;
      case ir::op::shape:
        line(fmt::format("const qd_i32 {} = (qd_i32)ctx->arrays[{}].shape[{}];", v(i), n.param, n.imm));
        break;
      case ir::op::loop_index: break;  // declared by its loop
      case ir::op::unary: {
        auto o = static_cast<ir::unary_op>(n.sub);
        if (o == ir::unary_op::bit_cast)
          line(fmt::format("const {} {} = {};", type, v(i), bit_cast(fn_.at(n.a).type, n.type, v(n.a))));
        else if (o == ir::unary_op::neg && !wrapping_type(n.type).empty())
          line(fmt::format("const {} {} = {};", type, v(i), wrapping_arithmetic(n.type, "-", "0", v(n.a))));
        else
          line(fmt::format("const {} {} = {}({});", type, v(i), unary_call(o), v(n.a)));
        break;
      }
      case ir::op::binary: {
        auto o = static_cast<ir::binary_op>(n.sub);
        dtype operand_type = fn_.at(n.a).type;
        std::string_view op = infix(o, operand_type);
        if ((o == ir::binary_op::add || o == ir::binary_op::sub || o == ir::binary_op::mul) &&
            !addressing_[static_cast<std::size_t>(i)])
          line(fmt::format("const {} {} = {};", type, v(i), wrapping_arithmetic(operand_type, op, v(n.a), v(n.b))));
        else if (!op.empty())
          line(fmt::format("const {} {} = {} {} {};", type, v(i), v(n.a), op, v(n.b)));
        else
          line(fmt::format("const {} {} = {}({}, {});", type, v(i), helper(o), v(n.a), v(n.b)));
        break;
      }
      case ir::op::select: line(fmt::format("const {} {} = {} ? {} : {};", type, v(i), v(n.a), v(n.b), v(n.c))); break;
      case ir::op::fma:
        line(fmt::format("const {} {} = qd_fma({}, {}, {});", type, v(i), v(n.a), v(n.b), v(n.c)));
        break;
      case ir::op::cast:
        if (n.type == dtype::boolean)
          line(fmt::format("const qd_bool {} = {} != 0;", v(i),
                           fn_.at(n.a).type == dtype::f16 ? fmt::format("qd_f16_to_f32({})", v(n.a)) : v(n.a)));
        else
          line(fmt::format("const {} {} = {};", type, v(i), converted(fn_.at(n.a).type, n.type, v(n.a))));
        break;
      case ir::op::bound:
        line(fmt::format("const qd_i32 {} = qd_bound(ctx, (qd_i64){}, {});", v(i), v(n.a), n.imm));
        break;
      case ir::op::global_load: {
        auto [elem, guard] = element(i);
        if (guard.empty())
          line(fmt::format("const {} {} = {};", type, v(i), elem));
        else
          line(fmt::format("const {} {} = {} ? {} : {};", type, v(i), guard, elem, zero_of(n.type)));
        break;
      }
      case ir::op::global_store: {
        auto [elem, guard] = element(i);
        if (guard.empty())
          line(fmt::format("{} = {};", elem, v(n.a)));
        else
          line(fmt::format("if ({}) {} = {};", guard, elem, v(n.a)));
        break;
      }
      case ir::op::global_atomic: {
        auto [elem, guard] = element(i);
        const auto o = static_cast<ir::atomic_op>(n.sub);
        if (n.flags & ir::access::owned) {  // demoted: this iteration owns the element
          const std::string updated = updated_value(o, n.type, v(i), v(n.a), "");
          if (guard.empty()) {
            line(fmt::format("const {} {} = {};", type, v(i), elem));
            line(fmt::format("{} = {};", elem, updated));
          } else {
            line(fmt::format("const {} {} = {} ? {} : {};", type, v(i), guard, elem, zero_of(n.type)));
            line(fmt::format("if ({}) {} = {};", guard, elem, updated));
          }
          break;
        }
        // Atomic unless the task runs alone on one thread (qd_plain, has_scatter).
        const auto call = fmt::format("{}(&{}, {}{})", atomic_helper(o), elem, v(n.a), expected(n));
        const auto plain = fmt::format("{{ {0} = {1}; {1} = {2}; }}", v(i), elem,
                                       updated_value(o, n.type, v(i), v(n.a), n.c == ir::none ? "" : v(n.c)));
        line(fmt::format("{} {}{};", type, v(i), guard.empty() ? "" : " = " + zero_of(n.type)));
        std::string update = fmt::format("if (qd_plain) {} else {{ {} = {}; }}", plain, v(i), call);
        if (const int k = private_index(n); k >= 0)  // a chunk-private copy, where the chunk has one
          update = fmt::format(
              "if (qd_plain) {} else if (QD_PRIVATE_SCATTER && qd_red->p{}) qd_red->p{}[&{} - {}] += {}; "
              "else {{ {} = {}; }}",
              plain, k, k, elem, private_base(private_[static_cast<std::size_t>(k)]), v(n.a), v(i), call);
        line(guard.empty() ? update : fmt::format("if ({}) {{ {} }}", guard, update));
        break;
      }
      case ir::op::local_decl: line(fmt::format("{} {} = {};", type, var(i), v(n.a))); break;
      case ir::op::local_load: line(fmt::format("const {} {} = {};", type, v(i), var(n.a))); break;
      case ir::op::local_store: line(fmt::format("{} = {};", var(n.a), v(n.b))); break;
      case ir::op::local_array: line(fmt::format("{} {}[{}];", type, var(i), n.imm)); break;
      case ir::op::array_load: line(fmt::format("const {} {} = {}[{}];", type, v(i), var(n.a), v(n.b))); break;
      case ir::op::array_store: line(fmt::format("{}[{}] = {};", var(n.a), v(n.b), v(n.c))); break;
      case ir::op::local_atomic: {
        // A task-local variable is private to its thread: a plain read-modify-write,
        // with the atomics' semantics (min keeps the old value unless v < old, so a
        // NaN never replaces it), as the same variable kept in a temporary has.
        line(fmt::format("const {} {} = {};", type, v(i), var(n.a)));
        line(fmt::format("{} = {};", var(n.a),
                         updated_value(static_cast<ir::atomic_op>(n.sub), n.type, v(i), v(n.b),
                                       n.c == ir::none ? std::string() : v(n.c))));
        break;
      }
      case ir::op::temp_load:
        line(fmt::format("const {} {} = *({}*)(ctx->temps + {});", type, v(i), type, n.imm * 8));
        break;
      case ir::op::temp_store: line(fmt::format("*({}*)(ctx->temps + {}) = {};", type, n.imm * 8, v(n.a))); break;
      case ir::op::temp_atomic:
        if (const chunk_reduction* r = reduction_of(n)) {
          const std::string value =
              accumulator_type(*r) == r->type ? v(n.a) : fmt::format("({}){}", c_type(accumulator_type(*r)), v(n.a));
          line(accumulate(*r, reduction_member(n), value));
          break;
        }
        line(fmt::format("const {} {} = {}(({}*)(ctx->temps + {}), {}{});", type, v(i),
                         atomic_helper(static_cast<ir::atomic_op>(n.sub)), type, n.imm * 8, v(n.a), expected(n)));
        break;
      case ir::op::range_for: {
        const auto rank = static_cast<std::int32_t>(n.imm);
        for (std::int32_t d = 0; d < rank; ++d) {
          ir::id index = fn_.block(n.block0)[static_cast<std::size_t>(d)];
          std::string begin = rank == 1 ? v(n.a) : std::string("0");
          std::string end = rank == 1 ? v(n.b) : v(fn_.list(n, d));
          line(fmt::format("for (qd_i32 {0} = {1}; {0} < {2}; ++{0}) {{", v(index), begin, end));
          ++indent_;
        }
        emit_block(n.block0, static_cast<std::size_t>(rank));
        for (std::int32_t d = 0; d < rank; ++d) {
          --indent_;
          line("}");
        }
        if (rank > 1 && is_broken(i)) line(fmt::format("{}:;", break_label(i)));
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
        line("for (;;) {");
        ++indent_;
        emit_block(n.block0);
        line(fmt::format("if (!{}) break;", v(n.a)));
        emit_block(n.block1);
        --indent_;
        line("}");
        break;
      case ir::op::random: line(fmt::format("const {} {} = qd_random_{}(&qd_rng);", type, v(i), name(n.type))); break;
      case ir::op::continue_:
        // The parallel loop's body is written into the loop (goto its end) or is a function
        // called per iteration.
        line(n.a != parallel_loop_ ? "continue;" : inline_body_ ? "goto qd_next;" : "return;");
        break;
      case ir::op::break_:
        // C's break leaves only the innermost of a rank-N loop's nested fors.
        line(fn_.at(n.a).code == ir::op::range_for && fn_.at(n.a).imm > 1 ? fmt::format("goto {};", break_label(n.a))
                                                                          : std::string("break;"));
        break;
      case ir::op::graph_mark: throw internal_error("C++ emitter: a graph mark inside a task (marks are in no task)");
      case ir::op::print: {
        if (n.flags & ir::print_flags::assertion) {  // a failed qd::assert_: the error record, parameter -1
          line(fmt::format("qd_report_out_of_bounds(ctx, -1, -1, {}, 0);", n.imm));
          break;
        }
        std::string format, args;
        for (std::int32_t k = 0; k < n.list_size; ++k) {
          std::int32_t item = fn_.list(n, k);
          if (k) format += ' ';
          if (ir::is_text(item)) {
            format += escape_format(fn_.strings[static_cast<std::size_t>(ir::text_index(item))]);
            continue;
          }
          switch (fn_.at(item).type) {
            case dtype::f32:
            case dtype::f64:
              format += "%g";
              args += fmt::format(", (qd_f64){}", v(item));
              break;
            case dtype::f16:
              format += "%g";
              args += fmt::format(", (qd_f64)qd_f16_to_f32({})", v(item));
              break;
            case dtype::i64:
              format += "%lld";
              args += fmt::format(", (long long){}", v(item));
              break;
            case dtype::u64:
              format += "%llu";
              args += fmt::format(", (unsigned long long){}", v(item));
              break;
            case dtype::u32:
              format += "%u";
              args += fmt::format(", (unsigned){}", v(item));
              break;
            case dtype::boolean:
            case dtype::i8:
            case dtype::i16:
            case dtype::u16:
            case dtype::i32:
            case dtype::u8:
              format += "%d";
              args += fmt::format(", (int){}", v(item));
              break;
          }
        }
        line(fmt::format("qd_printf(\"{}\\n\"{});", format, args));
        break;
      }
    }
  }

  std::string break_label(ir::id loop) const {
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
  ir::id parallel_loop_ = ir::none;  // the loop of a parallel task
  std::string_view entry_;
  const emit_options& options_;
  std::vector<ir::id> number_;
  std::vector<bool> addressing_;  // signed arithmetic that only computes array indices
  bool scatter_ = false;          // has_scatter()
  bool inline_body_ = false;      // a parallel body written between QD_PARALLEL_BEGIN and _END
  std::vector<chunk_reduction> reductions_;
  std::vector<private_target> private_;  // of a scatter task without reductions
  std::string out_;
  int indent_ = 0;
};

}  // namespace detail

QD_FUNC std::string emit_task(const lowered_task& t, std::string_view entry, const emit_options& options) {
  return detail::emitter(t, entry, options).run();
}

}  // namespace qd::inline v0::codegen
