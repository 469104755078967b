// Implementation of backend/cpu/scatter_gate.hpp.
#pragma once

#include <pthread.h>

#include <atomic>
#include <thread>

#include "quadrants/backend/cpu/scatter_gate.hpp"

namespace qd::inline v0::backend::cpu {
namespace detail {

// 0: free; n > 0: n tasks hold it shared; -1: one task holds it alone.
inline std::atomic<std::int64_t>& scatter_state() noexcept {
  static std::atomic<std::int64_t> state{0};
  // After fork() only the forking thread exists: holders elsewhere are gone.
  [[maybe_unused]] static const int registered =
      pthread_atfork(nullptr, nullptr, [] { scatter_state().store(0, std::memory_order_relaxed); });
  return state;
}

}  // namespace detail

QD_FUNC bool scatter_gate::try_alone() noexcept {
  std::int64_t expected = 0;
  return detail::scatter_state().compare_exchange_strong(expected, -1, std::memory_order_acquire,
                                                         std::memory_order_relaxed);
}

QD_FUNC void scatter_gate::enter_shared() noexcept {
  auto& state = detail::scatter_state();
  std::int64_t s = state.load(std::memory_order_relaxed);
  for (unsigned spins = 0;; ++spins) {
    if (s >= 0 && state.compare_exchange_weak(s, s + 1, std::memory_order_acquire, std::memory_order_relaxed)) return;
    if (s < 0) {
      if (spins >= 64) std::this_thread::yield();
      s = state.load(std::memory_order_relaxed);
    }
  }
}

QD_FUNC void scatter_gate::leave(bool alone) noexcept {
  if (alone)
    detail::scatter_state().store(0, std::memory_order_release);
  else
    detail::scatter_state().fetch_sub(1, std::memory_order_release);
}

}  // namespace qd::inline v0::backend::cpu
