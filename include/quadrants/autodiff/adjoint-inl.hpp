// Implementation of autodiff/adjoint.hpp.
//
// The adjoint of a block is its forward replay (values recomputed, global stores
// dropped) followed by its reverse sweep, statement by statement from the last.
// Forward values are IR values, so the sweep reads them where the replay made them;
// what a nested block needs (an if_ branch, a loop iteration) its own adjoint
// recomputes. Local variables are put back to their value before each statement a
// later replay depends on, from a snapshot the replay took. A serial loop whose
// iterations carry a variable that is not a plain accumulation is reversed from
// per-thread value stacks of the variables' values (reverse_carrying_loop: linear in
// the trip count up to value_stack_depth^2 iterations). Every op is classified by one
// table with a default: an op this file does not know is a clean qd::user_error.
#pragma once

#include <algorithm>
#include <array>
#include <utility>

#include "quadrants/analysis/split.hpp"
#include "quadrants/analysis/atomic_demotion.hpp"
#include "quadrants/autodiff/activity.hpp"
#include "quadrants/autodiff/adjoint.hpp"
#include "quadrants/autodiff/derivative.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/ir/builder.hpp"
#include "quadrants/ir/copy.hpp"
#include "quadrants/ir/walk.hpp"

namespace qd::inline v0::autodiff {
namespace detail {

// How the adjoint treats an op. Ops missing from the table (added to QD_IR_OPS later)
// are `unsupported`: the kernel gets a clear error, never a wrong gradient.
enum class rule : std::uint8_t { no_gradient, arithmetic, memory, control, dropped, unsupported };

struct op_rule {
  ir::op code;
  rule what;
};

inline constexpr std::array op_rules = {
    op_rule{ir::op::constant, rule::no_gradient}, op_rule{ir::op::arg, rule::no_gradient},
    op_rule{ir::op::shape, rule::no_gradient},    op_rule{ir::op::loop_index, rule::no_gradient},
    op_rule{ir::op::bound, rule::no_gradient},    op_rule{ir::op::unary, rule::arithmetic},
    op_rule{ir::op::binary, rule::arithmetic},    op_rule{ir::op::select, rule::arithmetic},
    op_rule{ir::op::fma, rule::arithmetic},       op_rule{ir::op::cast, rule::arithmetic},
    op_rule{ir::op::global_load, rule::memory},   op_rule{ir::op::global_store, rule::memory},
    op_rule{ir::op::global_atomic, rule::memory}, op_rule{ir::op::local_decl, rule::memory},
    op_rule{ir::op::local_load, rule::memory},    op_rule{ir::op::local_store, rule::memory},
    op_rule{ir::op::local_atomic, rule::memory},  op_rule{ir::op::range_for, rule::control},
    op_rule{ir::op::if_, rule::control},          op_rule{ir::op::print, rule::dropped},
};

constexpr rule rule_of(ir::op o) {
  for (const op_rule& r : op_rules)
    if (r.code == o) return r.what;
  return rule::unsupported;
}

// Unary and binary sub-ops with a derivative; the others are integer or boolean
// ops (no gradient) or, on a float, unsupported.
// floor, ceil, round, trunc and floordiv are steps: zero derivative almost everywhere.
constexpr bool differentiable(ir::unary_op o) {
  using u = ir::unary_op;
  for (u d : {u::neg, u::sqrt, u::exp, u::log, u::sin, u::cos, u::tanh, u::abs, u::floor, u::ceil, u::tan, u::asin,
              u::acos, u::rsqrt, u::log2, u::exp2, u::round, u::trunc,
              u::bit_cast})  // of an integer: no gradient (of a float: refused by validate_active)
    if (o == d) return true;
  return false;
}
constexpr bool differentiable(ir::binary_op o) {
  using b = ir::binary_op;
  for (b d : {b::add, b::sub, b::mul, b::div, b::min, b::max, b::pow, b::atan2, b::fmod, b::floordiv, b::floormod})
    if (o == d) return true;
  return ir::is_comparison(o);  // boolean results: no gradient, but fine on floats
}

class adjoint_builder {
 public:
  adjoint_builder(const ir::function& forward, const naming& names)
      : f_(forward),
        names_(names),
        b_(out_),
        map_(forward.nodes.size(), ir::none),
        acc_(forward.nodes.size(), ir::none),
        users_(forward.nodes.size()),
        position_(ir::canonical_numbering(forward)) {
    out_.params = f_.params;
    out_.is_gradient = true;
    ir::walk(f_, 0, [&](ir::id i, int) {
      ir::for_each_operand(f_, f_.at(i), [&](ir::id o) { users_[idx(o)].push_back(i); });
    });
  }

  ir::function build() {
    validate();
    active_ = active_values(f_);
    needed_ = needed_values(f_, active_);
    validate_active();
    check_accumulations();
    adjoint_block(0);
    return std::move(out_);
  }

 private:
  const ir::function& f_;
  const naming& names_;
  ir::function out_;
  ir::builder b_;
  std::vector<ir::id> map_;   // forward node -> its value in the adjoint, where it was last replayed
  std::vector<ir::id> acc_;   // forward node or variable -> the local accumulating its adjoint
  std::vector<bool> active_;  // carries a gradient: a float that depends on a needs_grad input
  std::vector<bool> needed_;  // the adjoint reads the value (autodiff/activity.hpp)
  std::vector<std::vector<ir::id>> users_;
  std::vector<ir::id> position_;  // canonical (program-order) number
  int parallel_ = 0;              // > 0 inside an emitted parallel loop of the adjoint
  struct shared_grad {
    std::int32_t param;
    dtype type;
    ir::id sum;  // the top-level local the loop's iterations add into
  };
  std::vector<shared_grad> shared_grads_;  // of the parallel loop being emitted

  static std::size_t idx(ir::id i) { return static_cast<std::size_t>(i); }
  const ir::node& at(ir::id i) const { return f_.at(i); }

  // --- messages ------------------------------------------------------------
  std::string param_text(std::int32_t p) const {
    auto k = static_cast<std::size_t>(p);
    if (k < names_.params.size() && !names_.params[k].empty()) return fmt::format("'{}'", names_.params[k]);
    return fmt::format("#{}", p);
  }
  std::string access_text(ir::id i) const {
    const ir::node& n = at(i);
    std::string s = param_text(n.param) + ((n.flags & ir::access::grad) ? ".grad()" : "") + "[";
    for (std::int32_t d = 0; d < n.list_size; ++d) {
      const ir::node& index = at(f_.list(n, d));
      s += d ? ", " : "";
      s += index.code == ir::op::constant ? fmt::format("{}", index.imm) : std::string("...");
    }
    return s + "]";
  }
  [[noreturn]] void reject(ir::id i, std::string_view what, std::string_view todo) const {
    const ir::id top = f_.top_level_statement(i);
    const ir::op code = at(top).code;
    std::string where = top == i                    ? std::string("at the top level")
                        : code == ir::op::range_for ? fmt::format("in the qd::range_for at %{}", position_[idx(top)])
                        : code == ir::op::if_       ? fmt::format("in the qd::if_ at %{}", position_[idx(top)])
                                                    : fmt::format("in the statement at %{}", position_[idx(top)]);
    const ir::source_loc loc = f_.location(i);  // where the user wrote it, when the tracer recorded it
    if (loc.known()) where = ir::to_text(loc) + ", " + where;
    throw user_error(fmt::format("kernel '{}': no gradient kernel: {} ({}, IR node %{}); {}", names_.kernel, what,
                                 where, position_[idx(i)], todo));
  }

  // --- structure -----------------------------------------------------------
  bool inside(ir::id node, ir::id statement) const {
    while (!f_.is_top_level(node)) {
      node = f_.block_owner[idx(f_.node_block[idx(node)])];
      if (node == statement) return true;
    }
    return false;
  }
  // A top-level range_for without loop_config's .serialize: its iterations run in any order.
  bool is_parallel_loop(ir::id s) const {
    return at(s).code == ir::op::range_for && f_.is_top_level(s) && (at(s).flags & ir::loop::serialize) == 0;
  }
  static bool is_var_write(const ir::node& n) {
    return n.code == ir::op::local_store || n.code == ir::op::local_atomic;
  }

  // The variables declared outside statement `s` that it writes.
  std::vector<ir::id> outer_writes(ir::id s) const {
    std::vector<ir::id> vars;
    const ir::node& n = at(s);
    if (is_var_write(n)) return {n.a};
    if (rule_of(n.code) != rule::control) return vars;
    for (std::int32_t blk : {n.block0, n.block1}) {
      if (blk < 0) continue;
      ir::walk(f_, blk, [&](ir::id i, int) {
        const ir::node& w = at(i);
        if (is_var_write(w) && !inside(w.a, s) && std::find(vars.begin(), vars.end(), w.a) == vars.end())
          vars.push_back(w.a);
      });
    }
    return vars;
  }

  // Whether every read of variable v inside loop `loop` only feeds `v = v + e` (or
  // v - e, or an atomic add/sub): then no value inside depends on v's running value.
  bool accumulation_only(ir::id v, ir::id loop) const {
    bool ok = true;
    for (ir::id i = 0; i < static_cast<ir::id>(f_.nodes.size()) && ok; ++i) {
      const ir::node& n = at(i);
      if (position_[idx(i)] == ir::none || n.a != v || !inside(i, loop)) continue;
      if (n.code == ir::op::local_atomic) {
        ok = n.sub == static_cast<std::uint8_t>(ir::atomic_op::add) ||
             n.sub == static_cast<std::uint8_t>(ir::atomic_op::sub);
      } else if (n.code == ir::op::local_load) {
        ok = users_[idx(i)].size() == 1;
        if (!ok) break;
        const ir::id op = users_[idx(i)][0];
        const ir::node& u = at(op);
        bool linear =
            u.code == ir::op::binary && (u.sub == static_cast<std::uint8_t>(ir::binary_op::add) ||
                                         (u.sub == static_cast<std::uint8_t>(ir::binary_op::sub) && u.a == i));
        ok = linear && u.a != u.b && users_[idx(op)].size() == 1 &&
             at(users_[idx(op)][0]).code == ir::op::local_store && at(users_[idx(op)][0]).a == v &&
             at(users_[idx(op)][0]).b == op;
      } else if (n.code == ir::op::local_store) {
        // Its value must read v inside the loop; those reads are checked above.
        const ir::node& value = at(n.b);
        auto reads_v = [&](ir::id o) {
          return o != ir::none && at(o).code == ir::op::local_load && at(o).a == v && inside(o, loop);
        };
        ok = value.code == ir::op::binary && (reads_v(value.a) || reads_v(value.b));
      }
    }
    return ok;
  }

  // `store` writes `load + e` (or `load - e`) into the element `load` read: x[i] += e
  // outside a parallel loop. Its read is part of the accumulation, not an overwrite.
  bool same_element(ir::id load, ir::id store) const {
    const ir::node& l = at(load);
    const ir::node& s = at(store);
    if (l.code != ir::op::global_load || l.param != s.param || l.flags != s.flags || l.list_size != s.list_size)
      return false;
    for (std::int32_t d = 0; d < l.list_size; ++d) {
      const ir::node& x = at(f_.list(l, d));
      const ir::node& y = at(f_.list(s, d));
      bool same = f_.list(l, d) == f_.list(s, d) ||
                  (x.code == ir::op::constant && y.code == ir::op::constant && x.imm == y.imm && x.type == y.type);
      if (!same) return false;
    }
    return true;
  }
  ir::id accumulation_read(ir::id store) const {
    const ir::node& s = at(store);
    const ir::node& v = at(s.a);
    if (v.code != ir::op::binary || users_[idx(s.a)].size() != 1) return ir::none;
    bool add = v.sub == static_cast<std::uint8_t>(ir::binary_op::add);
    if (!add && v.sub != static_cast<std::uint8_t>(ir::binary_op::sub)) return ir::none;
    for (ir::id load : {v.a, v.b}) {
      if (load == v.b && !add) break;
      if (same_element(load, store) && users_[idx(load)].size() == 1) return load;
    }
    return ir::none;
  }

  // The innermost serial loop (nested, or top-level with .serialize) around `i`, or none.
  ir::id serial_loop_around(ir::id i) const {
    while (!f_.is_top_level(i)) {
      i = f_.block_owner[idx(f_.node_block[idx(i)])];
      if (at(i).code == ir::op::range_for && !is_parallel_loop(i)) return i;
    }
    return ir::none;
  }

  // --- what cannot be differentiated ---------------------------------------
  void validate() const {
    bool any_grad = false;
    for (const ir::param_desc& p : f_.params) any_grad = any_grad || p.needs_grad;
    if (!any_grad)
      throw user_error(
          fmt::format("kernel '{}' has no qd::needs_grad parameter, so it has no gradient kernel; declare "
                      "the arrays to differentiate as qd::types::ndarray<T, N, qd::needs_grad>",
                      names_.kernel));
    std::vector<ir::id> order;
    ir::walk(f_, 0, [&](ir::id i, int) { order.push_back(i); });
    for (ir::id i : order) {
      const ir::node& n = at(i);
      const rule r = rule_of(n.code);
      if (r == rule::unsupported) {
        if (n.code == ir::op::while_)
          reject(i, "a qd::while_ loop has no adjoint (its trip count is not recorded)",
                 "use a qd::range_for with a bound, or move the loop to a kernel that is not differentiated");
        if (ir::is_jump(n.code))
          reject(i, fmt::format("qd::{}() has no adjoint (the iterations it skips are not recorded)", ir::name(n.code)),
                 "express the condition with qd::if_ around the rest of the body");
        if (n.code == ir::op::random)
          reject(i, "a qd::random draw has no adjoint", "draw the numbers in another kernel and pass them in an array");
        reject(i, fmt::format("the IR op '{}' has no adjoint", ir::name(n.code)),
               "move it to a kernel that is not differentiated");
      }
      if (n.code == ir::op::global_load || n.code == ir::op::global_store || n.code == ir::op::global_atomic) {
        if (n.flags & ir::access::grad)
          reject(i, fmt::format("the forward kernel accesses the gradient buffer {}", access_text(i)),
                 "gradients are the adjoint's to write; read .grad() in a separate kernel that is not differentiated");
        if (n.flags & ir::access::is_volatile)
          reject(i, fmt::format("qd::volatile_load({})", access_text(i)),
                 "use a plain read in a differentiated kernel");
      }
      if (n.code == ir::op::unary && is_float(n.type) && !differentiable(static_cast<ir::unary_op>(n.sub)))
        reject(i,
               fmt::format("the math function '{}' has no derivative here", ir::name(static_cast<ir::unary_op>(n.sub))),
               "compute it in a kernel that is not differentiated");
      if (n.code == ir::op::binary && is_float(at(n.a).type) && !differentiable(static_cast<ir::binary_op>(n.sub)))
        reject(i, fmt::format("the operation '{}' has no derivative here", ir::name(static_cast<ir::binary_op>(n.sub))),
               "compute it in a kernel that is not differentiated");
      if (n.code == ir::op::global_atomic || n.code == ir::op::local_atomic) {
        auto o = static_cast<ir::atomic_op>(n.sub);
        std::string target = n.code == ir::op::global_atomic ? access_text(i) : std::string("a qd::var");
        if (o != ir::atomic_op::add && o != ir::atomic_op::sub && o != ir::atomic_op::min && o != ir::atomic_op::max)
          reject(i, fmt::format("qd::atomic_{} on {}", atomic_name(o), target),
                 "only atomic add and sub have an adjoint; run this atomic in a kernel that is not differentiated");
        if ((o == ir::atomic_op::min || o == ir::atomic_op::max) && is_float(n.type))
          reject(i, fmt::format("qd::atomic_{} on {}", ir::name(o), target),
                 "atomic min/max have no adjoint; compute the extremum in a kernel that is not differentiated");
        if (!users_[idx(i)].empty())
          reject(i, fmt::format("the value qd::atomic_{} on {} returns is used", ir::name(o), target),
                 "the adjoint cannot recover it; use the atomic only to accumulate");
      }
      if (n.code == ir::op::local_store && f_.is_top_level(n.a) && f_.top_level_statement(i) != i &&
          is_parallel_loop(f_.top_level_statement(i)))
        reject(i, "a plain assignment to a top-level qd::var inside a parallel qd::range_for (a race)",
               "use += (a reduction) or a qd::var declared inside the loop body");
      if (n.code == ir::op::local_load && f_.is_top_level(n.a) && !f_.is_top_level(i) &&
          is_parallel_loop(f_.top_level_statement(i))) {
        auto writes = outer_writes(f_.top_level_statement(i));
        if (std::find(writes.begin(), writes.end(), n.a) != writes.end())
          reject(i, "a parallel qd::range_for reads a top-level qd::var it also reduces into (a race)",
                 "read the reduced value after the loop, in a later statement");
      }
      if (n.code == ir::op::global_store) check_access_rule(i, order);
    }
  }

  // What carries a gradient but cannot pass it on exactly.
  void validate_active() const {
    ir::walk(f_, 0, [&](ir::id i, int) {
      const ir::node& n = at(i);
      if (!active_[idx(i)] && !(n.code == ir::op::unary && n.a != ir::none && active_[idx(n.a)])) return;
      if (n.type == dtype::f16 && ir::has_value(n.code))
        reject(i, "a value that carries a gradient is kept as qd::f16",
               "differentiate in f32 or f64 (f16 is storage: its rounding has no adjoint here)");
      if (n.code == ir::op::unary && static_cast<ir::unary_op>(n.sub) == ir::unary_op::bit_cast)
        reject(i, "qd::bit_cast of a value that carries a gradient",
               "the gradient cannot pass through its bits; compute it in a kernel that is not differentiated");
    });
  }

  static std::string atomic_name(ir::atomic_op o) {
    switch (o) {
      case ir::atomic_op::bit_and: return "and";
      case ir::atomic_op::bit_or: return "or";
      case ir::atomic_op::bit_xor: return "xor";
      case ir::atomic_op::add:
      case ir::atomic_op::sub:
      case ir::atomic_op::min:
      case ir::atomic_op::max:
      case ir::atomic_op::mul:
      case ir::atomic_op::exchange:
      case ir::atomic_op::cas: break;
    }
    return std::string(ir::name(o));
  }

  // Quadrants' global data access rule: the adjoint reads forward data from memory
  // after the forward kernel ran, so no element may be overwritten after being read.
  void check_access_rule(ir::id store, const std::vector<ir::id>& order) const {
    const ir::node& s = at(store);
    const ir::id top = f_.top_level_statement(store);
    if (is_parallel_loop(top) && !single_iteration(top) && !iterations_own(top, s.param))
      reject(store,
             fmt::format("the plain store to {} in a parallel qd::range_for whose iterations may write the same "
                         "elements of {} (or update one another's): which value is left depends on their order, and so "
                         "does the gradient",
                         access_text(store), param_text(s.param)),
             "let each iteration store only its own elements (x[i]), or accumulate with +=");
    const ir::id exempt = accumulation_read(store);
    const ir::id loop = serial_loop_around(store);
    for (ir::id i : order) {
      const ir::node& l = at(i);
      if (l.code != ir::op::global_load || l.param != s.param || i == exempt || (l.flags & ir::access::grad)) continue;
      bool before = position_[idx(i)] < position_[idx(store)];
      bool repeated = loop != ir::none && inside(i, loop);  // a later iteration stores over this read
      bool shared = racing(i, store);  // other iterations may store over the element before or after this read
      if ((before || repeated || shared) && !analysis::detail::provably_disjoint(f_, i, store) &&
          !store_runs_ahead(i, store, loop))
        reject(store,
               fmt::format("the plain store to {} overwrites data of {} the kernel read earlier ({})",
                           access_text(store), param_text(s.param), access_text(i)),
               "this is Quadrants' global data access rule: the adjoint needs the values read; write the result into "
               "another array, or accumulate with += instead");
    }
  }

  // An accumulation (`x[i] += e`, qd::atomic_add/sub) into data the kernel reads where the
  // adjoint needs the value read: the adjoint reads memory after the forward launch, so it
  // would see the accumulated value (`v[i] += -c * v[i] * v[i]` gave 0.82 for 0.80).
  void check_accumulations() const {
    std::vector<ir::id> order;
    ir::walk(f_, 0, [&](ir::id i, int) { order.push_back(i); });
    for (ir::id update : order) {
      const ir::node& u = at(update);
      const ir::id exempt = u.code == ir::op::global_store ? accumulation_read(update) : ir::none;
      if ((u.code != ir::op::global_atomic && exempt == ir::none) || (u.flags & ir::access::grad)) continue;
      for (ir::id load : order) {
        const ir::node& l = at(load);
        if (l.code != ir::op::global_load || l.param != u.param || (l.flags & ir::access::grad) || load == exempt)
          continue;
        const std::string read =
            access_text(load) + (f_.location(load).known() ? ", " + ir::to_text(f_.location(load)) : std::string());
        if (racing(load, update))  // even a linear read: its gradient would meet the update's in any order
          reject(update,
                 fmt::format("other iterations of this parallel qd::range_for accumulate into {} and read it ({}), so "
                             "what each read sees, and where its gradient goes, depends on the order they run",
                             param_text(u.param), read),
                 "let each iteration read and update only its own elements (x[i]), or split the reads and the "
                 "updates into two loops");
        if (!needed_[idx(load)] || !stale_read(load, update)) continue;
        reject(update,
               fmt::format("the accumulation into {} changes data of {} that the gradient needs as the kernel read "
                           "it ({}), and the adjoint reads it from memory after the launch",
                           access_text(update), param_text(u.param), read),
               fmt::format("write the updated values into another array (x_new[i] = x[i] + ...), or read {} "
                           "from a copy made by an earlier launch",
                           param_text(u.param)));
      }
    }
  }

  // Whether the forward launch may change element(s) `load` read by accumulation `update`
  // after the read: `update` comes later, or repeats in a loop around both, or other
  // iterations of a parallel loop around both may touch the element.
  bool stale_read(ir::id load, ir::id update) const {
    if (analysis::detail::provably_disjoint(f_, load, update)) return false;
    const ir::id inner = serial_loop_around(update);
    if (inner != ir::none && inside(load, inner)) return !store_runs_ahead(load, update, inner);
    for (ir::id loop = inner; loop != ir::none; loop = serial_loop_around(loop))
      if (inside(load, loop)) return true;
    return position_[idx(load)] < position_[idx(update)];
  }

  // Whether `load` and `update` (or `store`) share a parallel loop whose iterations may
  // touch each other's elements of that data.
  bool racing(ir::id load, ir::id update) const {
    const ir::id top = f_.top_level_statement(update);
    return is_parallel_loop(top) && inside(load, top) && !single_iteration(top) &&
           !analysis::detail::provably_disjoint(f_, load, update) && !iterations_own(top, at(update).param);
  }

  bool single_iteration(ir::id loop) const { return analysis::detail::single_iteration(f_, loop); }

  // Whether each iteration of parallel loop `loop` touches its own elements of parameter p's data.
  bool iterations_own(ir::id loop, std::int32_t p) const {
    std::vector<ir::id> group;
    ir::walk(f_, at(loop).block0, [&](ir::id i, int) {
      const ir::node& n = at(i);
      if ((n.code == ir::op::global_load || n.code == ir::op::global_store || n.code == ir::op::global_atomic) &&
          n.param == p && !(n.flags & ir::access::grad))
        group.push_back(i);
    });
    return !group.empty() && analysis::detail::iterations_own_elements(f_, loop, group);
  }

  // Whether, in the only serial loop repeating `store`, the store's index runs ahead of
  // the read's in some dimension (x[j + 1] = f(x[j])): every element it writes is read,
  // if at all, in a later iteration -- after it was written, which is allowed.
  bool store_runs_ahead(ir::id load, ir::id store, ir::id loop) const {
    if (loop == ir::none || serial_loop_around(loop) != ir::none || at(loop).imm != 1 || !inside(load, loop) ||
        (at(load).flags | at(store).flags) & ir::access::clamp)
      return false;
    const ir::id index = f_.block(at(loop).block0)[0];
    for (std::int32_t d = 0; d < at(store).list_size; ++d) {
      const analysis::detail::affine r = analysis::detail::affine_of(f_, f_.list(at(load), d));
      const analysis::detail::affine w = analysis::detail::affine_of(f_, f_.list(at(store), d));
      if (r.sym == index && w.sym == index && w.off > r.off) return true;
    }
    return false;
  }

  // Whether the replay must run control statement `s`: some variable it writes keeps a
  // value the adjoint needs. Not when each only accumulates in `s` and every read of it
  // elsewhere only feeds a store or an atomic add (whose adjoints need no values), as
  // `ax += f(j)` in a loop followed by `fx[i] = ax`.
  bool replay_needed(ir::id s) const {
    for (ir::id v : outer_writes(s)) {
      if (!accumulation_only(v, s)) return true;
      for (ir::id l = 0; l < static_cast<ir::id>(f_.nodes.size()); ++l) {
        const ir::node& n = at(l);
        if (n.code != ir::op::local_load || n.a != v || position_[idx(l)] == ir::none || inside(l, s)) continue;
        for (ir::id u : users_[idx(l)]) {
          const ir::node& user = at(u);
          bool linear = (user.code == ir::op::global_store && user.a == l) ||
                        (user.code == ir::op::global_atomic && user.a == l &&
                         (user.sub == static_cast<std::uint8_t>(ir::atomic_op::add) ||
                          user.sub == static_cast<std::uint8_t>(ir::atomic_op::sub)));
          if (!linear) return true;
        }
      }
    }
    return false;
  }

  // --- emission helpers --------------------------------------------------------
  ir::id m(ir::id i) const { return map_[idx(i)]; }
  ir::id zero(dtype t) { return b_.constant_float(t, 0.0); }
  ir::id bin(ir::binary_op o, dtype t, ir::id x, ir::id y) { return b_.binary(o, t, x, y); }
  ir::id mul(dtype t, ir::id x, ir::id y) { return bin(ir::binary_op::mul, t, x, y); }
  ir::id neg(dtype t, ir::id x) { return b_.unary(ir::unary_op::neg, t, x); }

  // Adds g to the adjoint of forward value x: atomic from a parallel loop into a top-level accumulator.
  void accumulate(ir::id x, ir::id g) {
    if (x == ir::none || !active_[idx(x)]) return;
    const ir::id a = acc_[idx(x)];
    const dtype t = at(x).type;
    if (parallel_ > 0 && out_.is_top_level(a)) {
      b_.local_atomic(ir::atomic_op::add, a, g);
      return;
    }
    b_.local_store(a, bin(ir::binary_op::add, t, b_.local_load(a), g));
  }

  std::vector<ir::id> mapped_list(const ir::node& n) const {
    std::vector<ir::id> out;
    for (std::int32_t k = 0; k < n.list_size; ++k) out.push_back(m(f_.list(n, k)));
    return out;
  }

  // A value node replayed on the replayed values of its operands (same parameters).
  ir::id copy_value(ir::id i) {
    return ir::copy_node(
        b_, f_, i, map_, [](std::int32_t p) { return p; }, [](ir::id) {});
  }

  // Emits a loop over the same iteration space as forward loop `loop` and maps its
  // indices; `reversed`: the forward loop's iterations from the last (row-major order
  // reversed is every dimension reversed).
  ir::id open_loop(ir::id loop, bool reversed = false) {
    const ir::node& n = at(loop);
    ir::id l = n.imm == 1 ? b_.range_for(m(n.a), m(n.b)) : b_.range_for_nd(mapped_list(n));
    same_config(l, loop);
    b_.push_block(out_.at(l).block0);
    for (std::int32_t d = 0; d < static_cast<std::int32_t>(n.imm); ++d) {
      ir::id index = b_.loop_index_of(l, d);
      if (reversed) {
        // begin + end - 1 - index, or extent - 1 - index
        ir::id last = n.imm == 1 ? bin(ir::binary_op::add, dtype::i32, m(n.a), m(n.b)) : m(f_.list(n, d));
        last = bin(ir::binary_op::sub, dtype::i32, last, b_.constant_int(dtype::i32, 1));
        index = bin(ir::binary_op::sub, dtype::i32, last, index);
      }
      map_[idx(f_.block(n.block0)[static_cast<std::size_t>(d)])] = index;
    }
    return l;
  }

  // The adjoint's loop `mine` runs as forward loop `theirs` does (loop_config: serialized, block size).
  void same_config(ir::id mine, ir::id theirs) {
    out_.at(mine).flags = at(theirs).flags;
    out_.at(mine).param = at(theirs).param;
  }

  // Emits an if_ on the replayed condition of forward if_ `s`; fills each branch with body(forward block).
  template <class Body>
  void emit_if(ir::id s, Body&& body) {
    const ir::node& n = at(s);
    ir::id c = b_.if_(m(n.a));
    for (auto [mine, theirs] : {std::pair{out_.at(c).block0, n.block0}, std::pair{out_.at(c).block1, n.block1}}) {
      b_.push_block(mine);
      body(theirs);
      b_.pop_block();
    }
  }

  // --- forward replay ----------------------------------------------------------
  void replay_block(std::int32_t blk) {
    for (ir::id s : f_.block(blk)) replay(s);
  }

  void replay(ir::id s) {
    const ir::node& n = at(s);
    switch (rule_of(n.code)) {
      case rule::no_gradient:
      case rule::arithmetic:
        if (n.code != ir::op::loop_index) map_[idx(s)] = copy_value(s);
        return;
      case rule::dropped:
      case rule::unsupported: return;
      case rule::memory: break;
      case rule::control: {
        if (!replay_needed(s)) return;  // only its effects on variables outside it matter here
        if (n.code == ir::op::if_) {
          emit_if(s, [&](std::int32_t blk) { replay_block(blk); });
        } else {
          open_loop(s);
          replay_block(n.block0);
          b_.pop_block();
        }
        return;
      }
    }
    if (n.code == ir::op::global_load) {
      map_[idx(s)] = copy_value(s);
    } else if (n.code == ir::op::local_decl) {
      map_[idx(s)] = b_.local_decl(n.type, m(n.a));
    } else if (n.code == ir::op::local_load) {
      map_[idx(s)] = b_.local_load(m(n.a));
    } else if (n.code == ir::op::local_store) {
      b_.local_store(m(n.a), m(n.b));
    } else if (n.code == ir::op::local_atomic) {
      // Inside the adjoint of a parallel loop, a reduction into a top-level variable
      // would change it for nothing: its value after the loop is already known.
      if (!(parallel_ > 0 && f_.is_top_level(n.a))) b_.local_atomic(static_cast<ir::atomic_op>(n.sub), m(n.a), m(n.b));
    }
    // global_store and global_atomic: the forward kernel already wrote memory.
  }

  // --- reverse sweep -------------------------------------------------------------
  // Emits the adjoint of forward block `blk` at the current position, assuming local
  // variables hold their values at the block's entry.
  void adjoint_block(std::int32_t blk) {
    const std::vector<ir::id>& stmts = f_.block(blk);
    // Variables a statement writes are put back before its adjoint when an earlier
    // statement of the block replays (a loop or branch reading them).
    std::vector<std::vector<std::pair<ir::id, ir::id>>> snapshots(stmts.size());
    bool replays = false;
    for (std::size_t k = 0; k < stmts.size(); ++k) {
      const ir::id s = stmts[k];
      replays = replays || rule_of(at(s).code) == rule::control;
      if (replays)
        for (ir::id v : outer_writes(s))
          if (map_[idx(v)] != ir::none) snapshots[k].emplace_back(v, b_.local_load(m(v)));
      replay(s);
    }
    for (ir::id s : stmts)
      if (active_[idx(s)] && ir::has_value(at(s).code)) acc_[idx(s)] = b_.local_decl(at(s).type, zero(at(s).type));
    for (std::size_t k = stmts.size(); k-- > 0;) {
      auto restore = [&] {
        for (auto [v, value] : snapshots[k]) b_.local_store(m(v), value);
      };
      restore();
      reverse(stmts[k]);
      if (rule_of(at(stmts[k]).code) == rule::control) restore();
    }
  }

  void reverse(ir::id s) {
    const ir::node& n = at(s);
    switch (rule_of(n.code)) {
      case rule::no_gradient:
      case rule::dropped:
      case rule::unsupported: return;
      case rule::arithmetic:
        if (active_[idx(s)]) reverse_arithmetic(s, b_.local_load(acc_[idx(s)]));
        return;
      case rule::memory: reverse_memory(s); return;
      case rule::control: break;
    }
    if (n.code == ir::op::if_) {
      emit_if(s, [&](std::int32_t blk) { adjoint_block(blk); });
      return;
    }
    reverse_loop(s);
  }

  void reverse_loop(ir::id s) {
    const ir::node& n = at(s);
    const bool parallel = is_parallel_loop(s);
    std::vector<ir::id> carried;
    if (!parallel)
      for (ir::id v : outer_writes(s))
        if (!accumulation_only(v, s)) carried.push_back(v);
    if (carried.empty()) {
      // No variable carries a value the adjoint needs from one iteration to the next. A
      // serial loop still runs backwards: an iteration may read what an earlier one
      // stored (x[j + 1] = f(x[j])), so its adjoint must come first.
      if (parallel) open_shared_grads(s);
      open_loop(s, !parallel);
      parallel_ += parallel ? 1 : 0;
      adjoint_block(n.block0);
      parallel_ -= parallel ? 1 : 0;
      b_.pop_block();
      if (parallel) close_shared_grads();
      return;
    }
    if (n.imm != 1)
      reject(s, "a multi-dimensional nested loop that carries a qd::var from one iteration to the next",
             "nest one-dimensional qd::range_for loops instead");
    reverse_carrying_loop(s, carried);
  }

  // A serial loop whose iterations carry variables nonlinearly (`p = p * x + c`): the
  // adjoint of iteration j needs their values at its start. Two levels of value stacks
  // of value_stack_depth entries per variable, per thread (autodiff/adjoint.hpp):
  //   1. run the loop forward, saving the values at the start of every seg-th iteration,
  //      seg = max(1, ceil(n / depth)), so at most `depth` checkpoints;
  //   2. for each segment from the last, for each run of `depth` iterations in it from the
  //      last: restore the segment's checkpoint, run forward to the run's end saving the
  //      run's values, then the run's adjoints from its last iteration, each after
  //      restoring its own values.
  // For n <= depth^2 every segment is one run: about three forward replays and one
  // reverse sweep per iteration, O(n). Longer loops replay up to a run's start from its
  // segment's checkpoint: n^2 / (2 depth^2) extra iterations.
  void reverse_carrying_loop(ir::id s, const std::vector<ir::id>& carried) {
    const ir::node& n = at(s);
    const ir::id index = f_.block(n.block0)[0];
    auto i32 = [&](std::int64_t v) { return b_.constant_int(dtype::i32, v); };
    auto add = [&](ir::id x, ir::id y) { return bin(ir::binary_op::add, dtype::i32, x, y); };
    auto sub = [&](ir::id x, ir::id y) { return bin(ir::binary_op::sub, dtype::i32, x, y); };
    auto ceil_div = [&](ir::id x, ir::id y) {  // x >= 0 or the loop is empty; y >= 1
      return bin(ir::binary_op::div, dtype::i32, add(x, sub(y, i32(1))), y);
    };
    auto loop = [&](ir::id begin, ir::id end) {  // opens a loop of this one's configuration; returns its index
      const ir::id l = b_.range_for(begin, end);
      same_config(l, s);
      b_.push_block(out_.at(l).block0);
      return b_.loop_index_of(l);
    };
    auto from_last = [&](ir::id begin, ir::id end, ir::id i) { return sub(sub(add(begin, end), i32(1)), i); };
    auto save = [&](const std::vector<ir::id>& stacks, ir::id slot) {
      for (std::size_t k = 0; k < carried.size(); ++k) b_.array_store(stacks[k], slot, b_.local_load(m(carried[k])));
    };
    auto restore = [&](const std::vector<ir::id>& stacks, ir::id slot) {
      for (std::size_t k = 0; k < carried.size(); ++k) b_.local_store(m(carried[k]), b_.array_load(stacks[k], slot));
    };
    const bool top_level = b_.current_block() == 0;
    if (top_level) loop(i32(0), i32(1));  // the stacks live in a task: one iteration holds them
    std::vector<ir::id> checkpoints, values;
    for (ir::id v : carried) {
      checkpoints.push_back(b_.local_array(at(v).type, value_stack_depth));
      values.push_back(b_.local_array(at(v).type, value_stack_depth));
    }
    const ir::id lo = m(n.a), hi = m(n.b), depth = i32(value_stack_depth);
    const ir::id count = sub(hi, lo);
    const ir::id seg = bin(ir::binary_op::max, dtype::i32, i32(1), ceil_div(count, depth));
    {  // 1. forward, saving a checkpoint at the start of every segment
      const ir::id j = loop(lo, hi);
      const ir::id k = sub(j, lo);
      const ir::id c =
          b_.if_(b_.binary(ir::binary_op::eq, dtype::boolean, bin(ir::binary_op::mod, dtype::i32, k, seg), i32(0)));
      b_.push_block(out_.at(c).block0);
      save(checkpoints, bin(ir::binary_op::div, dtype::i32, k, seg));
      b_.pop_block();
      map_[idx(index)] = j;
      replay_block(n.block0);
      b_.pop_block();
    }
    // 2. segments from the last, runs of `depth` from the last in each
    const ir::id segments = ceil_div(count, seg);
    const ir::id r = from_last(i32(0), segments, loop(i32(0), segments));
    const ir::id s0 = add(lo, mul(dtype::i32, r, seg));
    const ir::id s1 = bin(ir::binary_op::min, dtype::i32, add(s0, seg), hi);
    const ir::id runs = ceil_div(sub(s1, s0), depth);
    const ir::id u = from_last(i32(0), runs, loop(i32(0), runs));
    const ir::id u0 = add(s0, mul(dtype::i32, u, depth));
    const ir::id u1 = bin(ir::binary_op::min, dtype::i32, add(u0, depth), s1);
    restore(checkpoints, r);
    {
      const ir::id j = loop(s0, u1);
      const ir::id c = b_.if_(b_.binary(ir::binary_op::ge, dtype::boolean, j, u0));
      b_.push_block(out_.at(c).block0);
      save(values, sub(j, u0));
      b_.pop_block();
      map_[idx(index)] = j;
      replay_block(n.block0);
      b_.pop_block();
    }
    {
      const ir::id j = from_last(u0, u1, loop(u0, u1));
      restore(values, sub(j, u0));
      map_[idx(index)] = j;
      adjoint_block(n.block0);
      b_.pop_block();
    }
    b_.pop_block();  // the runs
    b_.pop_block();  // the segments
    if (top_level) b_.pop_block();
  }

  // A 0-d f32/f64 parameter with a gradient that parallel loop `loop` reads (and never writes):
  // every iteration would add into its one gradient element with an atomic (a
  // compare-exchange loop for floats on the CPU). They add into a top-level local instead,
  // which the backends reduce per chunk and combine once, like a forward qd::var
  // reduction; the sum goes into the gradient after the loop.
  void open_shared_grads(ir::id loop) {
    shared_grads_.clear();
    std::vector<std::int32_t> written;
    ir::walk(f_, at(loop).block0, [&](ir::id i, int) {
      const ir::node& n = at(i);
      if ((n.code == ir::op::global_store || n.code == ir::op::global_atomic) && n.param >= 0)
        written.push_back(n.param);
    });
    ir::walk(f_, at(loop).block0, [&](ir::id i, int) {
      const ir::node& n = at(i);
      if (n.code != ir::op::global_load || n.list_size != 0 || (n.flags & ir::access::grad) || !active_[idx(i)] ||
          (n.type != dtype::f32 && n.type != dtype::f64) ||
          std::find(written.begin(), written.end(), n.param) != written.end() || shared_grad_of(n.param) != ir::none)
        return;
      shared_grads_.push_back({n.param, n.type, b_.local_decl(n.type, zero(n.type))});
    });
  }
  ir::id shared_grad_of(std::int32_t param) const {
    for (const shared_grad& g : shared_grads_)
      if (g.param == param) return g.sum;
    return ir::none;
  }
  void close_shared_grads() {
    const std::vector<ir::id> scalar;  // a 0-d element: no index
    for (const shared_grad& g : shared_grads_) {
      const ir::id old = b_.global_load(g.param, static_cast<std::uint8_t>(ir::access::grad), scalar);
      b_.global_store(g.param, static_cast<std::uint8_t>(ir::access::grad), scalar,
                      bin(ir::binary_op::add, g.type, old, b_.local_load(g.sum)));
    }
    shared_grads_.clear();
  }

  void reverse_memory(ir::id s) {
    const ir::node& n = at(s);
    const bool grad_param = n.param >= 0 && f_.params[static_cast<std::size_t>(n.param)].needs_grad;
    const auto grad_flags = static_cast<std::uint8_t>((n.flags & ir::access::clamp) | ir::access::grad);
    if (n.code == ir::op::global_load) {
      if (!active_[idx(s)]) return;
      const ir::id g = b_.local_load(acc_[idx(s)]);
      auto indices = mapped_list(n);
      if (const ir::id sum = parallel_ > 0 ? shared_grad_of(n.param) : ir::none; sum != ir::none) {
        b_.local_atomic(ir::atomic_op::add, sum, g);
      } else if (parallel_ > 0) {
        // A compound update, as `x.grad()[i] += g` traces: analysis/atomic_demotion.hpp makes
        // it a plain update where each iteration owns its element.
        b_.global_atomic(ir::atomic_op::add, n.param, static_cast<std::uint8_t>(grad_flags | ir::access::compound),
                         indices, g);
      } else {  // one thread: a plain update
        ir::id old = b_.global_load(n.param, grad_flags, indices);
        b_.global_store(n.param, grad_flags, indices, bin(ir::binary_op::add, n.type, old, g));
      }
    } else if (n.code == ir::op::global_store) {
      if (!grad_param) return;
      auto indices = mapped_list(n);
      ir::id g = b_.global_load(n.param, grad_flags, indices);
      b_.global_store(n.param, grad_flags, indices, zero(n.type));
      accumulate(n.a, g);
    } else if (n.code == ir::op::global_atomic) {
      if (!grad_param || !active_[idx(n.a)]) return;
      ir::id g = b_.global_load(n.param, grad_flags, mapped_list(n));
      accumulate(n.a, n.sub == static_cast<std::uint8_t>(ir::atomic_op::sub) ? neg(n.type, g) : g);
    } else if (n.code == ir::op::local_decl) {
      if (active_[idx(s)]) accumulate(n.a, b_.local_load(acc_[idx(s)]));
    } else if (n.code == ir::op::local_load) {
      if (active_[idx(s)]) accumulate(n.a, b_.local_load(acc_[idx(s)]));
    } else if (n.code == ir::op::local_store) {
      if (!active_[idx(n.a)]) return;
      ir::id g = b_.local_load(acc_[idx(n.a)]);
      b_.local_store(acc_[idx(n.a)], zero(at(n.a).type));
      accumulate(n.b, g);
    } else if (n.code == ir::op::local_atomic) {
      if (!active_[idx(n.a)]) return;
      ir::id g = b_.local_load(acc_[idx(n.a)]);
      accumulate(n.b, n.sub == static_cast<std::uint8_t>(ir::atomic_op::sub) ? neg(at(n.a).type, g) : g);
    }
  }

  void reverse_arithmetic(ir::id s, ir::id g) {
    const ir::node& n = at(s);
    const dtype t = n.type;
    if (n.code == ir::op::cast) {
      if (is_float(at(n.a).type)) accumulate(n.a, b_.cast(at(n.a).type, g));
    } else if (n.code == ir::op::select) {
      accumulate(n.b, b_.select(t, m(n.a), g, zero(t)));
      accumulate(n.c, b_.select(t, m(n.a), zero(t), g));
    } else if (n.code == ir::op::fma) {
      accumulate(n.a, mul(t, g, m(n.b)));
      accumulate(n.b, mul(t, g, m(n.a)));
      accumulate(n.c, g);
    } else if (n.code == ir::op::unary) {
      reverse_unary(s, g);
    } else if (n.code == ir::op::binary) {
      reverse_binary(s, g);
    }
  }

  void reverse_unary(ir::id s, ir::id g) {
    const ir::node& n = at(s);
    const ir::id d = unary_derivative(b_, static_cast<ir::unary_op>(n.sub), n.type, m(n.a), m(s), g);
    if (d != ir::none) accumulate(n.a, d);  // floor, ceil, round and trunc: zero almost everywhere
  }

  void reverse_binary(ir::id s, ir::id g) {
    const ir::node& n = at(s);
    for (int side : {0, 1}) {
      const ir::id operand = side == 0 ? n.a : n.b;
      if (!active_[idx(operand)]) continue;
      const ir::id d = binary_derivative(b_, static_cast<ir::binary_op>(n.sub), n.type, m(n.a), m(n.b), m(s), side, g);
      if (d != ir::none) accumulate(operand, d);
    }
  }
};

}  // namespace detail

QD_FUNC ir::function make_adjoint(const ir::function& forward, const naming& names) {
  return detail::adjoint_builder(forward, names).build();
}

}  // namespace qd::inline v0::autodiff
