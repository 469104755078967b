// qd::ad::custom_grad: a kernel whose gradient is a kernel the user wrote, run by
// k.grad(...) and by tapes in place of the adjoint derived from the forward IR.
#pragma once

#include <memory>
#include <utility>

#include "quadrants/base/api.hpp"
#include "quadrants/runtime/kernel.hpp"

namespace qd::inline v0 {
namespace detail {

struct kernel_access {
  template <class F>
  static kernel_state& state(const kernel<F>& k) {
    return latest_state<F>(*k.states_);
  }
};

// Copies of the two kernels (sharing their traces) paired for custom_grad: the forward
// copy's adjoint is the backward copy, which tapes do not record. A qd::user_error naming
// both kernels and the first parameter that differs when their parameters differ.
struct custom_pair {
  std::shared_ptr<kernel_state> forward, backward;
};
QD_FUNC custom_pair make_custom_grad(const kernel_state& forward, const kernel_state& backward);

}  // namespace detail

namespace ad {

// k(args...) runs the forward kernel; k.grad(args...) runs the backward kernel with the
// same arguments (it reads the outputs' .grad() and adds into the inputs', as a derived
// adjoint does); a qd::ad::tape recording k(args...) runs the backward kernel for it.
template <class F>
class custom_grad_kernel {
 public:
  custom_grad_kernel(const detail::kernel_state& forward, const detail::kernel_state& backward)
      : pair_(detail::make_custom_grad(forward, backward)), grad(pair_.backward) {}

  template <class... Args>
  void operator()(const Args&... args) const {
    run(*pair_.forward, args...);
  }

  class backward_kernel {
   public:
    explicit backward_kernel(std::shared_ptr<detail::kernel_state> k) : k_(std::move(k)) {}
    template <class... Args>
    void operator()(const Args&... args) const {
      run(*k_, args...);
    }

   private:
    std::shared_ptr<detail::kernel_state> k_;
  };

 private:
  template <class... Args>
  static void run(detail::kernel_state& k, const Args&... args) {
    auto packed = detail::pack_arguments<F>(args...);
    if constexpr (detail::has_mesh_parameter<F>()) detail::bind_meshes<F>(k, packed.data(), args...);
    detail::launch(k, packed.data(), packed.size());
  }
  detail::custom_pair pair_;

 public:
  backward_kernel grad;
};

// The backward kernel takes the forward kernel's parameters, one for one.
template <class F, class B>
custom_grad_kernel<F> custom_grad(const kernel<F>& forward, const kernel<B>& backward) {
  static_assert(
      std::tuple_size_v<detail::template_values_t<F>> == 0 && std::tuple_size_v<detail::template_values_t<B>> == 0,
      "qd::ad::custom_grad takes kernels without template arguments (qd::types::template_arg)");
  static_assert(detail::return_element_count<detail::kernel_result_t<F>> == 0 &&
                    detail::return_element_count<detail::kernel_result_t<B>> == 0,
                "qd::ad::custom_grad takes kernels that return nothing (write results into arrays)");
  return custom_grad_kernel<F>(detail::kernel_access::state(forward), detail::kernel_access::state(backward));
}

}  // namespace ad
}  // namespace qd::inline v0

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/custom_grad-inl.hpp"
#endif
