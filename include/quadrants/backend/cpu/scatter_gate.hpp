// When generated CPU code may update array elements plainly instead of atomically: a
// task that one thread runs holds the process's gate alone; tasks with atomics hold it shared.
#pragma once

#include <cstdint>

#include "quadrants/base/api.hpp"

namespace qd::inline v0::backend::cpu {

// A task's scatter (an atomic update of an array element) needs an atomic only if some
// other thread may update the same element meanwhile: another thread of its own loop, or
// another launch (a qd::concurrent branch, a second host thread). A task that runs on one
// thread takes the gate alone, when nobody holds it, and updates plainly; every other task
// with such updates holds it shared for its whole run, and waits only while a task holds
// it alone (a short range on one thread, or any range with a one-thread pool). Holders
// never wait for anything else, so the gate cannot deadlock. Process-wide: CPU arrays are
// host memory that any device's launch may touch. A child of fork() starts it afresh.
class scatter_gate {
 public:
  // True: the caller holds the gate alone and may update plainly; false: nothing taken.
  QD_FUNC static bool try_alone() noexcept;
  // Holds the gate shared (waiting while a task holds it alone).
  QD_FUNC static void enter_shared() noexcept;
  // Releases what try_alone (alone) or enter_shared (!alone) took.
  QD_FUNC static void leave(bool alone) noexcept;
};

}  // namespace qd::inline v0::backend::cpu

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/cpu/scatter_gate-inl.hpp"
#endif
