#include "core/graphs.hpp"

#include <cstdint>

#include "core/handles.hpp"

namespace qd::emulation {

graph_work instantiate(const std::shared_ptr<const graph_record>& g,
                       std::vector<std::pair<void*, std::size_t>>* kernels) {
  graph_work out;
  for (const auto& c : g->conditions)
    if (c->assign_default) out.push_back([c = c.get(), g] { c->value.store(c->default_value); });
  for (const graph_record::node& n : g->nodes) {
    if (!n.body) {
      if (kernels && n.kernel) kernels->emplace_back(n.kernel, out.size());
      out.push_back(n.work);
      continue;
    }
    auto body = std::make_shared<const graph_work>(instantiate(n.body));
    out.push_back([body, c = n.condition, g] {
      while (c->value.load() != 0)
        for (const std::function<void()>& w : *body) w();
    });
  }
  return out;
}

bool stream_capture::begin(std::shared_ptr<graph_record> into, void* handle) {
  std::lock_guard lock(mutex_);
  if (graph_) return false;
  graph_ = into ? std::move(into) : std::make_shared<graph_record>();
  handle_ = handle;
  last_node_ = nullptr;
  joined_ = false;
  return true;
}

std::shared_ptr<graph_record> stream_capture::end(void** handle) {
  std::lock_guard lock(mutex_);
  *handle = handle_;
  if (joined_) return nullptr;
  handle_ = nullptr;
  return std::move(graph_);
}

bool stream_capture::join(std::shared_ptr<graph_record> g) {
  std::lock_guard lock(mutex_);
  if (graph_) return false;
  graph_ = std::move(g);
  last_node_ = nullptr;
  joined_ = true;
  return true;
}

void stream_capture::leave() {
  std::lock_guard lock(mutex_);
  if (!joined_) return;
  graph_ = nullptr;
  joined_ = false;
}

std::shared_ptr<graph_record> stream_capture::graph() {
  std::lock_guard lock(mutex_);
  return graph_;
}

bool stream_capture::capturing() {
  std::lock_guard lock(mutex_);
  return graph_ != nullptr;
}

bool stream_capture::append(std::function<void()>& work, bool kernel) {
  static std::atomic<std::uint64_t> next_node{1};
  std::lock_guard lock(mutex_);
  if (!graph_) return false;
  last_node_ = kernel ? reinterpret_cast<void*>(static_cast<std::uintptr_t>(
                            (next_node.fetch_add(1) << 8) | static_cast<std::uint8_t>(handle_kind::graph_node)))
                      : nullptr;
  graph_->nodes.push_back({std::move(work), last_node_, nullptr, nullptr});
  return true;
}

void* const* stream_capture::last_node() {
  std::lock_guard lock(mutex_);
  return graph_ && last_node_ ? &last_node_ : nullptr;
}

}  // namespace qd::emulation
