// Streams and events of an emulated GPU. Work on one stream runs in order on that
// stream's own host thread, so launches on different streams run concurrently.
// The default (null) stream is the legacy one: its work runs on the caller, after
// all work queued on blocking streams, so it is ordered against every one of them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace qd::emulation {

class stream {
 public:
  explicit stream(bool blocking);
  ~stream();  // finishes the queued work first
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  void submit(std::function<void()> work);
  void synchronize();
  bool idle();
  bool blocking() const { return blocking_; }

 private:
  void loop();
  const bool blocking_;
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false, stopping_ = false;
  std::thread thread_;
};

class event {
 public:
  // Marks the work queued before this point (on one stream): returns the mark.
  std::uint64_t record();
  void complete(std::uint64_t mark);
  // Waits for `mark` (0: the latest recorded).
  void wait(std::uint64_t mark = 0);
  bool done();
  bool recorded();
  std::uint64_t latest();
  std::chrono::steady_clock::time_point time();

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t recorded_ = 0, completed_ = 0;
  std::chrono::steady_clock::time_point time_{};
};

// The streams of one device (or context). Streams are owned by the API layer's
// handle table; this set knows the blocking ones for the null stream's ordering.
class stream_set {
 public:
  std::shared_ptr<stream> create(bool blocking);
  void forget(const std::shared_ptr<stream>& s);
  // Runs `work` on the null stream: on the caller, once every blocking stream is idle.
  void run_on_null(const std::function<void()>& work);
  // `s` null: the null stream.
  void submit(const std::shared_ptr<stream>& s, std::function<void()> work);
  void synchronize_all();

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<stream>> streams_;
};

}  // namespace qd::emulation
