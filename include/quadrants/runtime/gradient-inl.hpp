// Implementation of runtime/gradient.hpp.
#pragma once

#include <mutex>

#include "quadrants/autodiff/adjoint.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/detail/format.hpp"
#include "quadrants/lang/trace.hpp"
#include "quadrants/runtime/gradient.hpp"
#include "quadrants/runtime/kernel_state.hpp"

namespace qd::detail {

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
    });
  });
  return *forward.adjoint;
}

struct tape_launch {
  std::shared_ptr<kernel_state> kernel;
  std::vector<launch_arg> args;
};

struct tape_state {
  tape_loss loss;
  tape_state* previous = nullptr;
  std::vector<tape_launch> launches;
  bool done = false;
};

QD_FUNC void record_on_tape(kernel_state& k, const launch_arg* args, std::size_t count) {
  if (k.ir.is_gradient) return;  // adjoints launched by hand are not part of the forward pass
  active_tape->launches.push_back({k.shared_from_this(), std::vector<launch_arg>(args, args + count)});
}

QD_FUNC tape_state* begin_tape(tape_loss loss) {
  if (loss.ndim != 0)
    throw user_error(fmt::format("qd::ad::tape: the loss must be a 0-d array (qd::ndarray<T, 0>), not a {}-d one; "
                                 "reduce it into one element first",
                                 loss.ndim));
  if (!loss.is_float) throw user_error("qd::ad::tape: the loss must be a floating-point array (float or double)");
  if (!loss.has_grad)
    throw user_error("qd::ad::tape: the loss has no gradient buffer; construct it with qd::needs_grad");
  loss.set_grad(0.0);
  auto* t = new tape_state{std::move(loss), active_tape, {}, false};
  active_tape = t;
  return t;
}

QD_FUNC void end_tape(tape_state* t) {
  // Tapes end in reverse order of their creation on a thread (they are scoped objects).
  if (active_tape == t) active_tape = t->previous;
  delete t;
}

// A recorded launch whose adjoint would read data a later launch overwrote.
QD_FUNC void check_overwrites(const tape_state& t) {
  auto overlap = [](const launch_arg& a, const launch_arg& b) {
    if (!a.extent_known || !b.extent_known) return a.data == b.data;
    auto a0 = reinterpret_cast<std::uintptr_t>(a.data), b0 = reinterpret_cast<std::uintptr_t>(b.data);
    return a.bytes > 0 && b.bytes > 0 && a0 < b0 + b.bytes && b0 < a0 + a.bytes;
  };
  std::vector<autodiff::parameter_access> access;
  for (const tape_launch& l : t.launches) access.push_back(autodiff::access_of(l.kernel->ir));
  for (std::size_t later = 0; later < t.launches.size(); ++later)
    for (std::size_t w = 0; w < t.launches[later].args.size(); ++w) {
      if (!access[later].overwrites[w]) continue;
      for (std::size_t earlier = 0; earlier < later; ++earlier)
        for (std::size_t r = 0; r < t.launches[earlier].args.size(); ++r)
          if (access[earlier].reads[r] && overlap(t.launches[earlier].args[r], t.launches[later].args[w]))
            throw user_error(fmt::format(
                "qd::ad::tape: launch {} (kernel '{}') overwrites {} that launch {} (kernel '{}') read as {}; the "
                "adjoint of launch {} needs the values it read. Write each launch's results into a separate array "
                "(for example one array per time step)",
                later + 1, t.launches[later].kernel->name, param_label(*t.launches[later].kernel, w), earlier + 1,
                t.launches[earlier].kernel->name, param_label(*t.launches[earlier].kernel, r), earlier + 1));
    }
}

QD_FUNC void run_backward(tape_state& t) {
  if (t.done) throw user_error("qd::ad::tape::backward(): already ran on this tape; record a new tape");
  check_overwrites(t);
  t.done = true;
  t.loss.set_grad(1.0);
  tape_state* recording = active_tape;
  active_tape = nullptr;  // the adjoints are not recorded
  try {
    for (std::size_t k = t.launches.size(); k-- > 0;) {
      const tape_launch& l = t.launches[k];
      launch(adjoint_of(*l.kernel), l.args.data(), l.args.size());
    }
  } catch (...) {
    active_tape = recording;
    throw;
  }
  active_tape = recording;
}

}  // namespace qd::detail
