#include "core/graphs.hpp"

namespace qd::emulation {

bool stream_capture::begin() {
  std::lock_guard lock(mutex_);
  if (graph_) return false;
  graph_ = std::make_shared<graph_record>();
  return true;
}

std::shared_ptr<graph_record> stream_capture::end() {
  std::lock_guard lock(mutex_);
  return std::move(graph_);
}

bool stream_capture::capturing() {
  std::lock_guard lock(mutex_);
  return graph_ != nullptr;
}

bool stream_capture::append(std::function<void()>& work) {
  std::lock_guard lock(mutex_);
  if (!graph_) return false;
  graph_->work.push_back(std::move(work));
  return true;
}

}  // namespace qd::emulation
