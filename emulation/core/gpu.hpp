// One emulated GPU as both driver APIs see it: device memory, loaded modules and
// their functions, streams and events, launches, and the sticky error a failed kernel
// leaves. The CUDA and HIP files describe the device and check what their APIs check
// differently; everything else is here (the calls both export alike: core/exports.hpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/blob.hpp"
#include "core/device_memory.hpp"
#include "core/executor.hpp"
#include "core/graphs.hpp"
#include "core/handles.hpp"
#include "core/loaded_program.hpp"
#include "core/results.hpp"
#include "core/streams.hpp"

namespace qd::emulation {

struct module_record {
  std::shared_ptr<const loaded_program> program;
  std::map<std::string, void*> functions;  // one handle per name, as drivers give
};
struct function_record {
  std::shared_ptr<const loaded_program> program;
  const loaded_kernel* kernel = nullptr;
  const module_record* module = nullptr;
};
struct stream_record {
  std::shared_ptr<stream> queue;
  stream_capture capture;
};
struct event_record {
  std::shared_ptr<event> marks;
  bool timing = true;
  // Recorded on a capturing stream: the capture it marks, and the stream that recorded it.
  std::shared_ptr<graph_record> captured;
  std::weak_ptr<stream_record> recorded_on;
};

// The most threads a block of `f` may have: its __launch_bounds__, else the device's.
unsigned block_limit(const function_record& f, unsigned device_max);

class emulated_gpu {
 public:
  // `accepts` says whether a binary compiled for a target runs on this device.
  emulated_gpu(gpu_api api, std::size_t memory_bytes, bool (*accepts)(const std::string& target));
  emulated_gpu(const emulated_gpu&) = delete;
  emulated_gpu& operator=(const emulated_gpu&) = delete;

  // The status of the first kernel that failed since the last reset (ok if none).
  gpu_status sticky() const { return sticky_.load(); }
  // Releases everything (a context's end, hipDeviceReset); handles become invalid.
  void reset();

  device_memory& memory() { return memory_; }
  // cuMemGetInfo / hipMemGetInfo.
  gpu_status memory_info(std::size_t* free_bytes, std::size_t* total_bytes);
  gpu_status allocate(std::size_t bytes, void** out);
  gpu_status release(void* p);
  // Copies or fills on a stream (null: the default stream); `*_device` says which side
  // must lie inside one allocation. Synchronous unless `async` and a stream is given.
  gpu_status copy(void* dst, const void* src, std::size_t bytes, bool dst_device, bool src_device, void* stream_handle,
                  bool async);
  gpu_status fill(void* dst, unsigned value, std::size_t count, std::size_t width, void* stream_handle, bool async);

  gpu_status load_module(const void* image, void** out);
  gpu_status unload_module(void* handle);
  gpu_status get_function(void* module_handle, const char* name, void** out);
  std::shared_ptr<function_record> function(void* handle) const { return functions_.find(handle); }

  // A launch whose dimensions the API layer checked; parameters from kernel_params or a packed buffer.
  gpu_status launch(const function_record& f, qd_emu_dim grid, qd_emu_dim block, void** kernel_params,
                    const void* buffer, std::size_t buffer_size, void* stream_handle);
  // The same launch as a kernel node's new parameters in an instantiated graph
  // (cuGraphExecKernelNodeSetParams): later launches of the graph run it, those queued run the old.
  gpu_status set_kernel_node(void* exec_handle, void* node, const function_record& f, qd_emu_dim grid, qd_emu_dim block,
                             void** kernel_params, const void* buffer, std::size_t buffer_size);

  gpu_status create_stream(bool blocking, void** out);
  gpu_status destroy_stream(void* handle);
  gpu_status synchronize_stream(void* handle);
  gpu_status query_stream(void* handle);
  gpu_status host_function(void* stream_handle, void (*fn)(void*), void* data);
  void synchronize();

  gpu_status create_event(bool timing, void** out);
  gpu_status destroy_event(void* handle);
  gpu_status record_event(void* handle, void* stream_handle);
  gpu_status query_event(void* handle);
  gpu_status synchronize_event(void* handle);
  gpu_status wait_event(void* stream_handle, void* event_handle);
  gpu_status elapsed_ms(void* start, void* end, float* ms);

  // Graphs (core/graphs.hpp): capture on a created stream (into a new graph, or into
  // `graph_handle`), instantiate, launch; WHILE nodes and their conditions.
  gpu_status begin_capture(void* stream_handle, void* graph_handle = nullptr);
  gpu_status create_graph(void** graph_out);
  // The handle is the address of the condition's value (what device code stores to).
  gpu_status create_condition(void* graph_handle, unsigned default_value, bool assign_default,
                              unsigned long long* handle_out);
  // Appends a WHILE node on `condition` (created on this graph) and gives its body graph.
  gpu_status add_while_node(void* graph_handle, unsigned long long condition, void** body_out);
  gpu_status end_capture(void* stream_handle, void** graph_out);
  // 1 when the stream is capturing, else 0 (both APIs' capture status values).
  gpu_status capture_status(void* stream_handle, int* out);
  // cuStreamGetCaptureInfo_v2: the status, and while capturing the capture's id, its graph
  // (null for the emulation's), and the node the stream added last when that was a kernel.
  gpu_status capture_info(void* stream_handle, int* status, unsigned long long* id, void** graph,
                          void* const** dependencies, std::size_t* count);
  gpu_status instantiate_graph(void* graph_handle, void** exec_out);
  gpu_status launch_graph(void* exec_handle, void* stream_handle);
  gpu_status destroy_graph(void* graph_handle);
  gpu_status destroy_graph_exec(void* exec_handle);
  // Counts since the process started, for tests: graphs instantiated, graph launches.
  std::uint64_t graphs_instantiated() const { return graphs_instantiated_.load(); }
  std::uint64_t graph_launches() const { return graph_launches_.load(); }

 private:
  bool lookup_stream(void* handle, std::shared_ptr<stream>& out) const;
  // Queues `work` on the stream a handle names (null: the null stream, which runs it on
  // the caller), or appends it to the graph that stream is capturing (a kernel launch: a
  // node with a handle).
  gpu_status submit(void* stream_handle, std::function<void()> work, bool kernel = false);
  // A launch's work, its parameters copied.
  gpu_status launch_work(const function_record& f, qd_emu_dim grid, qd_emu_dim block, void** kernel_params,
                         const void* buffer, std::size_t buffer_size, std::function<void()>& out);
  // Whether the stream a handle names is capturing (began or joined a capture).
  bool is_capturing(void* stream_handle) const;

  const gpu_api api_;
  bool (*const accepts_)(const std::string&);
  std::atomic<gpu_status> sticky_{gpu_status::ok};
  std::mutex mutex_;  // module/function bookkeeping
  device_memory memory_;
  stream_set streams_;
  handle_table<module_record> modules_{handle_kind::module};
  handle_table<function_record> functions_{handle_kind::function};
  handle_table<stream_record> stream_handles_{handle_kind::stream};
  handle_table<event_record> events_{handle_kind::event};
  handle_table<graph_record> graphs_{handle_kind::graph};
  handle_table<graph_exec_record> graph_execs_{handle_kind::graph_exec};
  std::atomic<std::uint64_t> graphs_instantiated_{0}, graph_launches_{0};
};

}  // namespace qd::emulation
