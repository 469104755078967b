#include "core/graphs.hpp"

namespace qd::emulation {

graph_work instantiate(const std::shared_ptr<const graph_record>& g) {
  graph_work out;
  for (const auto& c : g->conditions)
    if (c->assign_default) out.push_back([c = c.get(), g] { c->value.store(c->default_value); });
  for (const graph_record::node& n : g->nodes) {
    if (!n.body) {
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

bool stream_capture::append(std::function<void()>& work) {
  std::lock_guard lock(mutex_);
  if (!graph_) return false;
  graph_->nodes.push_back({std::move(work), nullptr, nullptr});
  return true;
}

}  // namespace qd::emulation
