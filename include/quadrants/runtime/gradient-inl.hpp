// Implementation of runtime/gradient.hpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "quadrants/autodiff/activity.hpp"
#include "quadrants/autodiff/adjoint.hpp"
#include "quadrants/autodiff/footprint.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/lang/trace.hpp"
#include "quadrants/runtime/gradient.hpp"
// dispatch.hpp before kernel_state.hpp: when everything is inline, dispatch.hpp ends by
// including kernel_state-inl.hpp and launch-inl.hpp, which need its declarations first.
#include "quadrants/runtime/pipeline/dispatch.hpp"
#include "quadrants/runtime/pipeline/kernel_state.hpp"
#include "quadrants/runtime/pipeline/program.hpp"

namespace qd::inline v0::detail {

// The parameter pairs of `forward`'s adjoint that must not share an array. The adjoint reads
// the forward values from memory after the forward launch and accumulates each gradient
// into its parameter's buffer; with one array for two parameters, a write through one
// changes what the other read, and two gradients' updates meet in one buffer, where the
// plain (demoted) updates of owned elements may race. Read-only parameters without
// gradients may share freely.
QD_FUNC std::vector<alias_pair> adjoint_alias_pairs(const ir::function& forward) {
  const std::size_t n = forward.params.size();
  std::vector<char> read(n, 0), written(n, 0);
  for (const ir::node& node : forward.nodes) {
    if (node.param < 0 || static_cast<std::size_t>(node.param) >= n || (node.flags & ir::access::grad) != 0) continue;
    const ir::effect e = ir::properties(node.code).effect;
    if (e == ir::effect::global_read) read[static_cast<std::size_t>(node.param)] = 1;
    if (e == ir::effect::global_write || e == ir::effect::global_update)
      written[static_cast<std::size_t>(node.param)] = 1;
  }
  std::vector<alias_pair> pairs;
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + 1; b < n; ++b) {
      const ir::param_desc &da = forward.params[a], &db = forward.params[b];
      if (!da.is_array || !db.is_array || !(read[a] || written[a]) || !(read[b] || written[b])) continue;
      if (written[a] || written[b] || (da.needs_grad && db.needs_grad))
        pairs.push_back({static_cast<std::int32_t>(a), static_cast<std::int32_t>(b), written[a] != 0, written[b] != 0});
    }
  return pairs;
}

QD_FUNC kernel_state& adjoint_of(kernel_state& forward) {
  std::call_once(forward.adjoint_once, [&forward] {
    // The forward state owns its adjoint, so the adjoint may point back without owning it.
    kernel_state* fwd = &forward;
    forward.adjoint = make_kernel_state(forward.name + ".grad", forward.param_names, forward.params, [fwd](tracer& t) {
      {
        std::lock_guard lock(fwd->mutex);
        ensure_traced(*fwd);
      }
      t.fn = autodiff::make_adjoint(fwd->ir, {fwd->name, fwd->param_names});
      fwd->adjoint->alias_pairs = adjoint_alias_pairs(fwd->ir);  // traced under the adjoint's mutex
    });
  });
  return *forward.adjoint;
}

// Whether a's and b's buffers (their gradients' with `grad`) provably overlap: the same
// start, or ranges that intersect where both extents are known.
QD_FUNC bool provably_overlap(const launch_arg& a, const launch_arg& b, bool grad) {
  const void* p = grad ? a.grad : a.data;
  const void* q = grad ? b.grad : b.data;
  if (p == nullptr || q == nullptr) return false;
  if ((a.extent_known && a.bytes == 0) || (b.extent_known && b.bytes == 0)) return false;  // no elements
  if (p == q) return true;
  if (!a.extent_known || !b.extent_known) return false;
  const auto p0 = reinterpret_cast<std::uintptr_t>(p), q0 = reinterpret_cast<std::uintptr_t>(q);
  return p0 < q0 + b.bytes && q0 < p0 + a.bytes;
}

[[noreturn]] QD_FUNC void throw_aliased(const kernel_state& k, const alias_pair& pair) {
  const std::string a = param_name(k, static_cast<std::size_t>(pair.a)),
                    b = param_name(k, static_cast<std::size_t>(pair.b));
  std::string why;
  if (pair.a_written || pair.b_written) {
    const std::string& w = pair.b_written ? b : a;
    const std::string& other = pair.b_written ? a : b;
    why = fmt::format(
        "the forward kernel writes '{}', so '{}' no longer holds the values the forward launch read, "
        "and the adjoint, which reads them from memory, would differentiate the wrong ones",
        w, other);
  } else {
    why =
        "both carry gradients, and the adjoint's updates of one gradient buffer through two parameters may race "
        "and lose some";
  }
  throw user_error(
      fmt::format("kernel '{}': parameters '{}' and '{}' are given the same array (or overlapping "
                  "ones): {}. Pass distinct arrays (copy the array first) and add the two gradients "
                  "if you need their sum",
                  k.name, a, b, why));
}

QD_FUNC void check_adjoint_aliasing(const kernel_state& k, const launch_arg* args) {
  for (const alias_pair& pair : k.alias_pairs) {
    const launch_arg &a = args[static_cast<std::size_t>(pair.a)], &b = args[static_cast<std::size_t>(pair.b)];
    if (provably_overlap(a, b, false) || provably_overlap(a, b, true)) throw_aliased(k, pair);
  }
}

struct tape_launch {
  std::shared_ptr<kernel_state> kernel;
  std::vector<launch_arg> args;
};

struct tape_state {
  tape_loss loss;
  std::vector<tape_launch> launches;
  bool done = false;
  bool clear_gradients = false;
  std::atomic<bool> ended{false};  // its qd::ad::tape is gone (destroyed on any thread)
  std::thread::id owner;           // the thread whose launches it records
};

// The tapes recording on this thread, oldest first: they live here until their thread
// notices they ended, so active_tape never points at a freed tape.
struct thread_tapes {
  std::vector<std::shared_ptr<tape_state>> stack;
};

QD_FUNC thread_tapes& this_thread_tapes() {
  thread_local thread_tapes tapes;
  return tapes;
}

// Drops the ended tapes of this thread; active_tape becomes the newest live one.
QD_FUNC void settle_tapes() {
  std::vector<std::shared_ptr<tape_state>>& stack = this_thread_tapes().stack;
  std::erase_if(stack, [](const std::shared_ptr<tape_state>& t) { return t->ended.load(std::memory_order_acquire); });
  active_tape = stack.empty() ? nullptr : stack.back().get();
}

QD_FUNC void record_on_tape(kernel_state& k, const launch_arg* args, std::size_t count) {
  if (active_tape->ended.load(std::memory_order_acquire)) {  // destroyed, perhaps on another thread
    settle_tapes();
    if (active_tape == nullptr) return;
  }
  if (k.ir.is_gradient) return;  // adjoints launched by hand are not part of the forward pass
  active_tape->launches.push_back({k.shared_from_this(), std::vector<launch_arg>(args, args + count)});
}

QD_FUNC std::shared_ptr<tape_state> begin_tape(tape_loss loss, bool clear_gradients) {
  if (loss.ndim != 0)
    throw user_error(
        fmt::format("qd::ad::tape: the loss must be a 0-d array (qd::ndarray<T, 0>), not a {}-d one; "
                    "reduce it into one element first",
                    loss.ndim));
  if (!loss.is_float) throw user_error("qd::ad::tape: the loss must be a floating-point array (float or double)");
  if (!loss.has_grad)
    throw user_error("qd::ad::tape: the loss has no gradient buffer; construct it with qd::needs_grad");
  loss.set_grad(0.0);
  auto t = std::make_shared<tape_state>();
  t->loss = std::move(loss);
  t->clear_gradients = clear_gradients;
  t->owner = std::this_thread::get_id();
  this_thread_tapes().stack.push_back(t);
  settle_tapes();
  return t;
}

QD_FUNC void end_tape(const std::shared_ptr<tape_state>& t) noexcept {
  t->ended.store(true, std::memory_order_release);
  // On its own thread it leaves the stack now; elsewhere, at its thread's next tape
  // operation or recorded launch (that thread may be launching right now).
  if (t->owner == std::this_thread::get_id()) settle_tapes();
}

// What a recorded launch reads, overwrites and accumulates into, element by element
// where its indices follow from its arguments; `needed`: its kernel's needed_values.
QD_FUNC std::vector<autodiff::access_box> launch_footprint(const tape_launch& l, const std::vector<bool>& needed) {
  autodiff::launch_values values;
  for (const launch_arg& a : l.args) {
    values.scalars.push_back(a.scalar_bits);
    values.shapes.push_back({a.shape[0], a.shape[1], a.shape[2], a.shape[3]});
  }
  return autodiff::footprint(l.kernel->ir, values, needed);
}

// A recorded launch whose adjoint would read data a later launch changed: overwrote, or
// accumulated into where the earlier adjoint needs the value it read.
QD_FUNC void check_overwrites(const tape_state& t) {
  std::vector<std::vector<autodiff::access_box>> boxes;
  std::vector<std::pair<const kernel_state*, std::vector<bool>>> needed;  // per kernel, computed once
  for (const tape_launch& l : t.launches) {
    auto known = std::find_if(needed.begin(), needed.end(), [&](const auto& e) { return e.first == l.kernel.get(); });
    if (known == needed.end()) {
      const ir::function& fn = l.kernel->ir;
      needed.emplace_back(l.kernel.get(), autodiff::needed_values(fn, autodiff::active_values(fn)));
      known = needed.end() - 1;
    }
    boxes.push_back(launch_footprint(l, known->second));
  }
  auto conflict = [&](std::size_t earlier, const autodiff::access_box& read, std::size_t later,
                      const autodiff::access_box& write) {
    const launch_arg& r = t.launches[earlier].args[static_cast<std::size_t>(read.param)];
    const launch_arg& w = t.launches[later].args[static_cast<std::size_t>(write.param)];
    const int ndim = t.launches[later].kernel->params[static_cast<std::size_t>(write.param)].ndim;
    if (r.data == w.data && r.bytes == w.bytes && std::equal(r.shape, r.shape + 4, w.shape))
      return autodiff::intersect(read, write, ndim);
    if (!r.extent_known || !w.extent_known) return r.data == w.data;
    auto r0 = reinterpret_cast<std::uintptr_t>(r.data), w0 = reinterpret_cast<std::uintptr_t>(w.data);
    return r.bytes > 0 && w.bytes > 0 && r0 < w0 + w.bytes && w0 < r0 + r.bytes;  // another view: any overlap
  };
  for (std::size_t later = 1; later < t.launches.size(); ++later)
    for (const autodiff::access_box& write : boxes[later]) {
      if (write.kind == autodiff::access_kind::read) continue;
      const bool overwrite = write.kind == autodiff::access_kind::overwrite;
      for (std::size_t earlier = 0; earlier < later; ++earlier)
        for (const autodiff::access_box& read : boxes[earlier]) {
          if (read.kind != autodiff::access_kind::read || !(overwrite || read.needed) ||
              !conflict(earlier, read, later, write))
            continue;
          const auto& lk = *t.launches[later].kernel;
          const auto& ek = *t.launches[earlier].kernel;
          throw user_error(fmt::format(
              "qd::ad::tape: launch {} (kernel '{}') {} elements of {} that launch {} (kernel '{}') read as "
              "{}; the adjoint of launch {} needs the values it read, and would see the new ones. Write each "
              "launch's results into elements (or an array) no earlier launch reads, for example one row per "
              "time step{}",
              later + 1, lk.name, overwrite ? "overwrites" : "accumulates into",
              param_label(lk, static_cast<std::size_t>(write.param)), earlier + 1, ek.name,
              param_label(ek, static_cast<std::size_t>(read.param)), earlier + 1,
              overwrite ? "" : " (an in-place update x[i] += ... after a launch that read x nonlinearly)"));
        }
    }
}

// tape_options::clear_gradients: zeroes each recorded array's gradient buffer once.
QD_FUNC void clear_recorded_gradients(const tape_state& t) {
  program_use p("qd::ad::tape::backward()");
  std::vector<const void*> done;
  std::vector<unsigned char> zeros;
  for (const tape_launch& l : t.launches)
    for (std::size_t k = 0; k < l.args.size(); ++k) {
      const launch_arg& a = l.args[k];
      const ir::param_desc& d = l.kernel->params[k];
      if (a.grad == nullptr || !d.is_array || std::find(done.begin(), done.end(), a.grad) != done.end()) continue;
      done.push_back(a.grad);
      // A qd::ndarray's gradient has its data's extent; an external array's follows its shape.
      std::size_t bytes = static_cast<std::size_t>(size_of(d.type));
      for (int dim = 0; dim < d.ndim; ++dim) bytes *= static_cast<std::size_t>(a.shape[dim]);
      if (a.extent_known) bytes = static_cast<std::size_t>(a.bytes);
      zeros.assign(bytes, 0);
      p->device().copy_from_host(a.grad, zeros.data(), bytes);
    }
}

QD_FUNC void run_backward(tape_state& t) {
  if (t.done) throw user_error("qd::ad::tape::backward(): already ran on this tape; record a new tape");
  check_overwrites(t);
  t.done = true;
  if (t.clear_gradients) clear_recorded_gradients(t);
  t.loss.set_grad(1.0);
  tape_state* recording = active_tape;
  active_tape = nullptr;  // the adjoints are not recorded
  try {
    for (std::size_t k = t.launches.size(); k-- > 0;) {
      const tape_launch& l = t.launches[k];
      // A kernel without a needs_grad parameter passes no gradient on (it is recorded
      // for the overwrite check only).
      if (std::none_of(l.kernel->params.begin(), l.kernel->params.end(),
                       [](const ir::param_desc& d) { return d.needs_grad; }))
        continue;
      launch(adjoint_of(*l.kernel), l.args.data(), l.args.size());
    }
  } catch (...) {
    active_tape = recording;
    throw;
  }
  active_tape = recording;
}

}  // namespace qd::inline v0::detail
