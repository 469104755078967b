// Implementation of runtime/custom_grad.hpp.
#pragma once

#include <algorithm>
#include <mutex>
#include <string>

#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/runtime/custom_grad.hpp"
#include "quadrants/runtime/pipeline/kernel_state.hpp"

namespace qd::inline v0::detail {

QD_FUNC custom_pair make_custom_grad(const kernel_state& forward, const kernel_state& backward) {
  const std::size_t n = std::max(forward.params.size(), backward.params.size());
  for (std::size_t i = 0; i < n; ++i) {
    const bool in_f = i < forward.params.size(), in_b = i < backward.params.size();
    if (in_f && in_b && forward.params[i] == backward.params[i]) continue;
    throw user_error(fmt::format(
        "qd::ad::custom_grad: the backward kernel '{}' does not take the forward kernel '{}''s parameters: "
        "parameter {} is {} in '{}' and {} in '{}'. The backward kernel is launched with the forward kernel's "
        "arguments, so their parameters must match one for one (types, dimensions, qd::needs_grad)",
        backward.name, forward.name, i, in_f ? param_label(forward, i) : std::string("missing"), forward.name,
        in_b ? param_label(backward, i) : std::string("missing"), backward.name));
  }
  custom_pair p;
  p.backward = make_kernel_state(backward.name, backward.param_names, backward.params, backward.trace);
  p.backward->graph = backward.graph;
  p.backward->not_recorded = true;
  p.forward = make_kernel_state(forward.name, forward.param_names, forward.params, forward.trace);
  p.forward->graph = forward.graph;
  p.forward->custom_adjoint = true;
  std::call_once(p.forward->adjoint_once, [&p] { p.forward->adjoint = p.backward; });
  return p;
}

}  // namespace qd::inline v0::detail
