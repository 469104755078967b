// The variants of a kernel with template arguments (qd::types::template_arg): one
// kernel_state per distinct tuple of values, each traced, split and cached on its own.
// A launch finds its variant without allocating, hashing or locking.
#pragma once

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "quadrants/runtime/pipeline/kernel_state.hpp"

namespace qd::inline v0::detail {

// Whether two tuples of template values are the same bits (so 0.0 and -0.0 are two
// variants, as they can compute different results).
template <class Values>
bool same_values(const Values& a, const Values& b) noexcept {
  return std::apply(
      [&](const auto&... x) {
        return std::apply([&](const auto&... y) { return ((std::memcmp(&x, &y, sizeof x) == 0) && ...); }, b);
      },
      a);
}

template <class Values>
class template_variants {
  struct entry {
    Values values;
    std::shared_ptr<kernel_state> state;
    entry* next = nullptr;
  };

 public:
  // The variant of `v`, or null when none was made yet. Lock-free: entries are only
  // ever added (at the head), and live as long as the table.
  kernel_state* find(const Values& v) const noexcept {
    entry* last = last_.load(std::memory_order_acquire);
    if (last != nullptr && same_values(last->values, v)) return last->state.get();
    for (entry* e = head_.load(std::memory_order_acquire); e != nullptr; e = e->next)
      if (same_values(e->values, v)) {
        last_.store(e, std::memory_order_release);
        return e->state.get();
      }
    return nullptr;
  }

  // The variant of `v`, made by make() (returning a shared_ptr<kernel_state>) the first time.
  template <class Make>
  kernel_state& get(const Values& v, Make&& make) {
    if (kernel_state* k = find(v)) return *k;
    std::lock_guard lock(mutex_);
    if (kernel_state* k = find(v)) return *k;
    auto e = std::make_unique<entry>();
    e->values = v;
    e->state = std::forward<Make>(make)();
    e->next = head_.load(std::memory_order_relaxed);
    entry* added = e.get();
    owned_.push_back(std::move(e));
    head_.store(added, std::memory_order_release);
    last_.store(added, std::memory_order_release);
    return *added->state;
  }

  // The variant launched or compiled last, or null before any.
  kernel_state* latest() const noexcept {
    entry* last = last_.load(std::memory_order_acquire);
    return last ? last->state.get() : nullptr;
  }

 private:
  std::atomic<entry*> head_{nullptr};
  mutable std::atomic<entry*> last_{nullptr};
  std::mutex mutex_;
  std::vector<std::unique_ptr<entry>> owned_;
};

}  // namespace qd::inline v0::detail
