// Handles the emulated drivers give out (modules, functions, streams, events): ids
// never reused, tagged with their kind, so a handle that was destroyed or belongs to
// another kind is recognised and refused instead of being dereferenced.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace qd::emulation {

enum class handle_kind : std::uint8_t {
  context = 0x51,
  module = 0x52,
  function = 0x53,
  stream = 0x54,
  event = 0x55,
  graph = 0x56,
  graph_exec = 0x57,
  graph_node = 0x58  // a kernel node of a captured graph (no table: never dereferenced)
};

template <class T>
class handle_table {
 public:
  explicit handle_table(handle_kind kind) : kind_(kind) {}

  template <class Handle>
  Handle add(std::shared_ptr<T> value) {
    std::lock_guard lock(mutex_);
    const std::uint64_t id = next_++;
    items_.emplace(id, std::move(value));
    return reinterpret_cast<Handle>(static_cast<std::uintptr_t>((id << 8) | static_cast<std::uint8_t>(kind_)));
  }

  // The live item a handle names, or null.
  template <class Handle>
  std::shared_ptr<T> find(Handle h) const {
    const auto bits = reinterpret_cast<std::uintptr_t>(h);
    if ((bits & 0xff) != static_cast<std::uint8_t>(kind_)) return nullptr;
    std::lock_guard lock(mutex_);
    auto it = items_.find(bits >> 8);
    return it == items_.end() ? nullptr : it->second;
  }

  template <class Handle>
  std::shared_ptr<T> remove(Handle h) {
    const auto bits = reinterpret_cast<std::uintptr_t>(h);
    if ((bits & 0xff) != static_cast<std::uint8_t>(kind_)) return nullptr;
    std::lock_guard lock(mutex_);
    auto it = items_.find(bits >> 8);
    if (it == items_.end()) return nullptr;
    auto value = std::move(it->second);
    items_.erase(it);
    return value;
  }

  // Removes every item `drop` accepts (or all).
  template <class Predicate>
  std::vector<std::shared_ptr<T>> remove_if(Predicate drop) {
    std::vector<std::shared_ptr<T>> out;
    std::lock_guard lock(mutex_);
    for (auto it = items_.begin(); it != items_.end();) {
      if (drop(*it->second)) {
        out.push_back(std::move(it->second));
        it = items_.erase(it);
      } else {
        ++it;
      }
    }
    return out;
  }

 private:
  const handle_kind kind_;
  mutable std::mutex mutex_;
  std::uint64_t next_ = 1;
  std::unordered_map<std::uint64_t, std::shared_ptr<T>> items_;
};

}  // namespace qd::emulation
