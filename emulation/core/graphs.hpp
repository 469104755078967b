// Graphs of an emulated GPU (CUDA and HIP stream capture): the work a capturing stream
// is given is appended to its graph instead of run; an instantiated graph runs that
// work again, in order, on the stream it is launched on.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace qd::emulation {

using graph_work = std::vector<std::function<void()>>;

// A graph as capture built it (cuStreamEndCapture's CUgraph).
struct graph_record {
  graph_work work;
};

// An executable graph (CUgraphExec): its own copy of the work, as instantiation fixes it.
struct graph_exec_record {
  std::shared_ptr<const graph_work> work;
};

// What a stream is capturing into, if anything.
class stream_capture {
 public:
  bool begin();                                 // false: already capturing
  std::shared_ptr<graph_record> end();          // null: not capturing
  bool capturing();
  // Appends `work` when capturing (true), else leaves it to the caller (false).
  bool append(std::function<void()>& work);

 private:
  std::mutex mutex_;
  std::shared_ptr<graph_record> graph_;
};

}  // namespace qd::emulation
