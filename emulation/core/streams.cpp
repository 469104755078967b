#include "core/streams.hpp"

#include <algorithm>

namespace qd::emulation {

stream::stream(bool blocking) : blocking_(blocking), thread_([this] { loop(); }) {}

stream::~stream() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void stream::submit(std::function<void()> work) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(work));
  }
  wake_.notify_one();
}

void stream::synchronize() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

bool stream::idle() {
  std::lock_guard lock(mutex_);
  return queue_.empty() && !busy_;
}

void stream::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return !queue_.empty() || stopping_; });
    if (queue_.empty()) return;  // stopping, with nothing left
    std::function<void()> work = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    work();
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
}

std::uint64_t event::record() {
  std::lock_guard lock(mutex_);
  return ++recorded_;
}

void event::complete(std::uint64_t mark) {
  {
    std::lock_guard lock(mutex_);
    completed_ = std::max(completed_, mark);
    time_ = std::chrono::steady_clock::now();
  }
  changed_.notify_all();
}

void event::wait(std::uint64_t mark) {
  std::unique_lock lock(mutex_);
  if (mark == 0) mark = recorded_;
  changed_.wait(lock, [&] { return completed_ >= mark; });
}

bool event::done() {
  std::lock_guard lock(mutex_);
  return completed_ >= recorded_;
}

bool event::recorded() {
  std::lock_guard lock(mutex_);
  return recorded_ > 0;
}

std::uint64_t event::latest() {
  std::lock_guard lock(mutex_);
  return recorded_;
}

std::chrono::steady_clock::time_point event::time() {
  std::lock_guard lock(mutex_);
  return time_;
}

std::shared_ptr<stream> stream_set::create(bool blocking) {
  auto s = std::make_shared<stream>(blocking);
  std::lock_guard lock(mutex_);
  streams_.push_back(s);
  return s;
}

void stream_set::forget(const std::shared_ptr<stream>& s) {
  std::lock_guard lock(mutex_);
  streams_.erase(std::remove(streams_.begin(), streams_.end(), s), streams_.end());
}

void stream_set::run_on_null(const std::function<void()>& work) {
  std::vector<std::shared_ptr<stream>> blocking;
  {
    std::lock_guard lock(mutex_);
    for (const auto& s : streams_)
      if (s->blocking()) blocking.push_back(s);
  }
  for (const auto& s : blocking) s->synchronize();
  work();
}

void stream_set::submit(const std::shared_ptr<stream>& s, std::function<void()> work) {
  if (s) {
    s->submit(std::move(work));
  } else {
    run_on_null(work);
  }
}

void stream_set::synchronize_all() {
  std::vector<std::shared_ptr<stream>> all;
  {
    std::lock_guard lock(mutex_);
    all = streams_;
  }
  for (const auto& s : all) s->synchronize();
}

}  // namespace qd::emulation
