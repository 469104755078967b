// kernel.grad and qd::ad::tape: a kernel's adjoint, built from its IR on
// first use, and a recorder of launches whose adjoints run in reverse order.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "quadrants/base/api.hpp"
#include "quadrants/runtime/ndarray.hpp"

namespace qd::inline v0 {
namespace detail {

// Declared, not included (runtime/pipeline/dispatch.hpp): dispatch.hpp pulls in launch-inl.hpp
// when everything is inline, and that file reads active_tape below.
class kernel_state;
struct launch_arg;

// The adjoint kernel of `forward`, created on first use; it is traced (derived from
// the forward IR) when first launched or compiled.
QD_FUNC kernel_state& adjoint_of(kernel_state& forward);
// The tangent kernel of `forward` (forward mode), created on first use like adjoint_of.
QD_FUNC kernel_state& tangent_of(kernel_state& forward);
// Launches forward's tangent: each array's .dual() goes in its gradient slot (a needs_grad
// parameter without one is a qd::user_error naming it).
QD_FUNC void launch_tangent(kernel_state& forward, launch_arg* args, std::size_t count);

struct tape_state;
// The tape recording launches on this thread, if any (the launch path reads it).
inline thread_local tape_state* active_tape = nullptr;
// Called by detail::launch after a forward kernel ran while a tape was active.
QD_FUNC void record_on_tape(kernel_state& k, const launch_arg* args, std::size_t count);
// Called by detail::launch for an adjoint kernel (one with alias pairs): a qd::user_error
// naming both parameters when a pair is given overlapping arrays. O(pairs), no allocation.
QD_FUNC void check_adjoint_aliasing(const kernel_state& k, const launch_arg* args);

// What a tape needs of its loss array, without its type.
struct tape_loss {
  int ndim = 0;
  bool has_grad = false;
  bool is_float = false;
  std::function<void(double)> set_grad;  // fills the loss gradient
};
// A tape is held by its qd::ad::tape and by the thread it records on, so that either may
// go first: ending it (on any thread) only marks it, and its thread drops it at its next
// tape operation or launch.
QD_FUNC std::shared_ptr<tape_state> begin_tape(tape_loss loss, bool clear_gradients);
QD_FUNC void end_tape(const std::shared_ptr<tape_state>& t) noexcept;
QD_FUNC void run_backward(tape_state& t);

}  // namespace detail

namespace ad {

struct tape_options {
  // backward() zeroes the gradient of every array a recorded launch was given before it
  // runs the adjoints; false: gradients accumulate onto what they held.
  bool clear_gradients = false;
};

// Records the kernel launches of this thread while alive, checking each as it is
// recorded against the earlier ones' reads; backward() raises the first conflict found,
// else seeds the loss gradient with 1 and runs their adjoints in reverse order.
// Destroying a tape runs (and raises) nothing. The loss and the recorded arrays must outlive backward(). Tapes on one
// thread nest (the newest live one records); any may be destroyed first, and on any
// thread: it stops recording then. backward() may run on any thread, once the
// recording thread no longer launches.
class tape {
 public:
  template <class T, int N>
  explicit tape(ndarray<T, N>& loss, tape_options options = {})
      : state_(detail::begin_tape({N, loss.has_grad(), std::is_floating_point_v<T>,
                                   [&loss](double v) { loss.grad().fill(static_cast<T>(v)); }},
                                  options.clear_gradients)) {}
  tape(const tape&) = delete;
  tape& operator=(const tape&) = delete;
  ~tape() { detail::end_tape(state_); }

  void backward() { detail::run_backward(*state_); }

 private:
  std::shared_ptr<detail::tape_state> state_;
};

}  // namespace ad
}  // namespace qd::inline v0

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/gradient-inl.hpp"
#endif
