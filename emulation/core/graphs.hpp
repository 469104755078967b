// Graphs of an emulated GPU (CUDA and HIP stream capture, CUDA's conditional WHILE
// nodes): the work a capturing stream is given is appended to its graph instead of
// run; an instantiated graph runs that work again, in order, on the stream it is
// launched on. A WHILE node runs its body graph while its condition is non-zero; the
// condition's handle is the address of its value, which device code sets
// (cudaGraphSetConditional in device_builtins.h). A captured kernel launch is a node with
// a handle of its own, whose launch an instantiated graph can be given anew.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace qd::emulation {

using graph_work = std::vector<std::function<void()>>;

struct graph_condition {
  std::atomic<unsigned> value{0};
  unsigned default_value = 0;
  bool assign_default = false;  // the default is assigned at each launch of the graph
};

// A graph as capture (or cuGraphAddNode) built it: its nodes in order.
struct graph_record {
  struct node {
    std::function<void()> work;          // a captured operation
    void* kernel = nullptr;              // a kernel launch's node handle (else null)
    std::shared_ptr<graph_record> body;  // or a WHILE node: its body, run while *condition != 0
    graph_condition* condition = nullptr;
  };
  std::vector<node> nodes;
  std::vector<std::unique_ptr<graph_condition>> conditions;  // created on this graph
};

// An executable graph (CUgraphExec, hipGraphExec_t).
struct graph_exec_record {
  std::shared_ptr<const graph_work> work;              // replaced whole when a kernel node is given new parameters
  std::vector<std::pair<void*, std::size_t>> kernels;  // top-level kernel nodes: handle, index in `work`
};

// What instantiation fixes: the work of `g` and its WHILE nodes' bodies, as they are now;
// with `kernels`, where the top-level kernel nodes' work lies.
graph_work instantiate(const std::shared_ptr<const graph_record>& g,
                       std::vector<std::pair<void*, std::size_t>>* kernels = nullptr);

// What a stream is capturing into, if anything: as the stream that began the capture,
// or as one that joined it by waiting on an event recorded in it (cross-stream capture;
// its work is appended to the same graph, in submission order, and it leaves when the
// capture waits on an event it recorded).
class stream_capture {
 public:
  // Starts capturing into `into` (a new graph when null); false if already capturing.
  bool begin(std::shared_ptr<graph_record> into, void* handle);
  // The graph and the handle given to begin (null: not capturing, or only joined).
  std::shared_ptr<graph_record> end(void** handle);
  bool join(std::shared_ptr<graph_record> g);  // false if already capturing
  void leave();                                // a joined stream only
  std::shared_ptr<graph_record> graph();       // null: not capturing
  bool capturing();
  // Appends `work` (a kernel launch: a node with a handle) when capturing (true), else
  // leaves it to the caller (false).
  bool append(std::function<void()>& work, bool kernel);
  // The handle of the kernel node this stream appended last, if that was its last work
  // (cuStreamGetCaptureInfo's dependency set, as far as Quadrants asks for it).
  void* const* last_node();

 private:
  std::mutex mutex_;
  std::shared_ptr<graph_record> graph_;
  void* handle_ = nullptr;
  void* last_node_ = nullptr;
  bool joined_ = false;
};

}  // namespace qd::emulation
