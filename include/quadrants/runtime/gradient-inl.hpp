// Implementation of runtime/gradient.hpp.
#pragma once

#include <algorithm>
#include <mutex>

#include "quadrants/autodiff/adjoint.hpp"
#include "quadrants/autodiff/footprint.hpp"
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

// What a recorded launch reads and overwrites, element by element where its indices
// follow from its arguments.
QD_FUNC std::vector<autodiff::access_box> launch_footprint(const tape_launch& l) {
  autodiff::launch_values values;
  for (const launch_arg& a : l.args) {
    values.scalars.push_back(a.scalar_bits);
    values.shapes.push_back({a.shape[0], a.shape[1], a.shape[2], a.shape[3]});
  }
  return autodiff::footprint(l.kernel->ir, values);
}

// A recorded launch whose adjoint would read data a later launch overwrote.
QD_FUNC void check_overwrites(const tape_state& t) {
  std::vector<std::vector<autodiff::access_box>> boxes;
  for (const tape_launch& l : t.launches) boxes.push_back(launch_footprint(l));
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
      if (!write.overwrite) continue;
      for (std::size_t earlier = 0; earlier < later; ++earlier)
        for (const autodiff::access_box& read : boxes[earlier]) {
          if (read.overwrite || !conflict(earlier, read, later, write)) continue;
          const auto& lk = *t.launches[later].kernel;
          const auto& ek = *t.launches[earlier].kernel;
          throw user_error(fmt::format(
              "qd::ad::tape: launch {} (kernel '{}') overwrites elements of {} that launch {} (kernel '{}') read as "
              "{}; the adjoint of launch {} needs the values it read. Write each launch's results into elements "
              "(or an array) no earlier launch reads, for example one row per time step",
              later + 1, lk.name, param_label(lk, static_cast<std::size_t>(write.param)), earlier + 1, ek.name,
              param_label(ek, static_cast<std::size_t>(read.param)), earlier + 1));
        }
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
      // A kernel without a needs_grad parameter passes no gradient on (it is recorded
      // for the overwrite check only).
      if (std::none_of(l.kernel->params.begin(), l.kernel->params.end(), [](const ir::param_desc& d) { return d.needs_grad; }))
        continue;
      launch(adjoint_of(*l.kernel), l.args.data(), l.args.size());
    }
  } catch (...) {
    active_tape = recording;
    throw;
  }
  active_tape = recording;
}

}  // namespace qd::detail
