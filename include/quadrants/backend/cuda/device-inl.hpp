// Implementation of backend/cuda/device.hpp.
#pragma once

#include <atomic>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "quadrants/backend/compile_only_module.hpp"
#include "quadrants/backend/cuda/device.hpp"
#include "quadrants/backend/cuda/driver.hpp"
#include "quadrants/backend/cuda/nvrtc.hpp"
#include "quadrants/backend/gpu_task_params.hpp"
#include "quadrants/base/env_integer.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/backend/cuda/prelude.hpp"
#include "quadrants/detail/format.hpp"

namespace qd::backend::cuda {
namespace detail {

inline std::atomic<std::uint64_t> next_context_generation{1};

// One GPU's primary context, retained for the life of every device and module
// that uses it; made current on whichever thread calls in.
class gpu_context {
 public:
  explicit gpu_context(int ordinal) : api_(driver()), generation_(next_context_generation.fetch_add(1)) {
    QD_CUDA_CHECK(api_.cuInit(0));
    int count = 0;
    QD_CUDA_CHECK(api_.cuDeviceGetCount(&count));
    if (count == 0) throw driver_error("the CUDA driver reports no GPU", "cuDeviceGetCount", 100);
    if (ordinal < 0 || ordinal >= count)
      throw driver_error(fmt::format("CUDA device {} does not exist ({} GPU(s)); set QD_CUDA_DEVICE to 0..{}", ordinal,
                                     count, count - 1),
                         "cuDeviceGet", 101);
    QD_CUDA_CHECK(api_.cuDeviceGet(&device_, ordinal));
    char name[256] = {};
    QD_CUDA_CHECK(api_.cuDeviceGetName(name, sizeof(name) - 1, device_));
    name_ = name;
    int major = 0, minor = 0;
    QD_CUDA_CHECK(api_.cuDeviceGetAttribute(&major, attribute_cc_major, device_));
    QD_CUDA_CHECK(api_.cuDeviceGetAttribute(&minor, attribute_cc_minor, device_));
    QD_CUDA_CHECK(api_.cuDeviceGetAttribute(&multiprocessors_, attribute_multiprocessor_count, device_));
    sm_ = major * 10 + minor;
    QD_CUDA_CHECK(api_.cuDevicePrimaryCtxRetain(&context_, device_));
  }
  gpu_context(const gpu_context&) = delete;
  gpu_context& operator=(const gpu_context&) = delete;
  ~gpu_context() { api_.cuDevicePrimaryCtxRelease(device_); }

  void make_current() const {
    thread_local std::uint64_t current = 0;  // the generation current on this thread
    if (current == generation_) return;
    QD_CUDA_CHECK(api_.cuCtxSetCurrent(context_));
    current = generation_;
  }
  const driver_api& api() const { return api_; }
  CUcontext handle() const { return context_; }
  int sm() const { return sm_; }
  int multiprocessors() const { return multiprocessors_; }
  const std::string& name() const { return name_; }

 private:
  const driver_api& api_;
  std::uint64_t generation_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  int sm_ = 0;
  int multiprocessors_ = 1;
  std::string name_;
};

// An entry point and the grid that fills the GPU with it.
struct function_info {
  CUfunction function = nullptr;
  unsigned grid = 1;
};

class cuda_module final : public loaded_module {
 public:
  cuda_module(std::shared_ptr<const gpu_context> context, std::span<const std::byte> binary, std::string_view what)
      : context_(std::move(context)), what_(what) {
    context_->make_current();
    QD_CUDA_CHECK(context_->api().cuModuleLoadData(&module_, binary.data()));
  }
  ~cuda_module() override {
    try {
      context_->make_current();
    } catch (const error&) {
    }
    context_->api().cuModuleUnload(module_);
  }

  void* entry(const std::string& name) const override {
    std::lock_guard lock(mutex_);
    if (auto it = entries_.find(name); it != entries_.end()) return it->second;
    context_->make_current();
    const driver_api& api = context_->api();
    function_info f;
    CUresult r = api.cuModuleGetFunction(&f.function, module_, name.c_str());
    if (r != cuda_success)
      throw driver_error(fmt::format("{}: the loaded CUDA module has no entry point '{}': {}", what_, name,
                                     result_text(r)),
                         "cuModuleGetFunction", r);
    int blocks_per_sm = 0;
    QD_CUDA_CHECK(api.cuOccupancyMaxActiveBlocksPerMultiprocessor(
        &blocks_per_sm, f.function, static_cast<int>(limits::gpu_threads_per_block), 0));
    f.grid = static_cast<unsigned>(std::max(1, blocks_per_sm) * std::max(1, context_->multiprocessors()));
    functions_.push_back(f);
    entries_.emplace(name, &functions_.back());
    return &functions_.back();
  }

 private:
  std::shared_ptr<const gpu_context> context_;
  std::string what_;
  CUmodule module_ = nullptr;
  mutable std::mutex mutex_;
  mutable std::deque<function_info> functions_;  // stable addresses: entry() hands them out
  mutable std::unordered_map<std::string, function_info*> entries_;
};

// A CUDA graph: launches captured on a private non-blocking stream (so that no other
// thread's work on the legacy stream joins the capture), instantiated, and launched on
// the legacy stream, where it is ordered like any launch. A loop recording captures
// into the body of a conditional WHILE node instead, and ends the body with a launch of
// `set_while`, which sets the node's condition from the flag.
// CUDA's launch queues: a stream.
class cuda_queue : public launch_queue {
 public:
  CUstream stream() const { return stream_; }

 protected:
  CUstream stream_ = nullptr;
};

class cuda_recording final : public cuda_queue {
 public:
  explicit cuda_recording(std::shared_ptr<const gpu_context> context) : context_(std::move(context)) {
    const driver_api& api = context_->api();
    QD_CUDA_CHECK(api.cuStreamCreate(&stream_, stream_non_blocking));
    check_begin(api.cuStreamBeginCapture(stream_, capture_mode_thread_local), "cuStreamBeginCapture_v2");
  }
  cuda_recording(std::shared_ptr<const gpu_context> context, const void* flag, const function_info& set_while)
      : context_(std::move(context)), flag_(flag), set_while_(&set_while) {
    const driver_api& api = context_->api();
    QD_CUDA_CHECK(api.cuGraphCreate(&graph_, 0));
    // The default value 1, assigned at each launch of the graph: the body runs at least once.
    QD_CUDA_CHECK(api.cuGraphConditionalHandleCreate(&condition_, graph_, context_->handle(), 1,
                                                     conditional_assign_default));
    graph_node_params p{};
    p.type = graph_node_type_conditional;
    p.conditional.handle = condition_;
    p.conditional.type = conditional_type_while;
    p.conditional.size = 1;
    p.conditional.bodies_out = &body_;
    p.conditional.context = context_->handle();
    CUgraphNode node = nullptr;
    if (api.cuGraphAddNode_v2) {
      QD_CUDA_CHECK(api.cuGraphAddNode_v2(&node, graph_, nullptr, nullptr, 0, &p));
    } else {
      QD_CUDA_CHECK(api.cuGraphAddNode(&node, graph_, nullptr, 0, &p));
    }
    QD_CUDA_CHECK(api.cuStreamCreate(&stream_, stream_non_blocking));
    check_begin(api.cuStreamBeginCaptureToGraph(stream_, body_, nullptr, nullptr, 0, capture_mode_thread_local),
                "cuStreamBeginCaptureToGraph");
  }
  cuda_recording(const cuda_recording&) = delete;
  cuda_recording& operator=(const cuda_recording&) = delete;
  ~cuda_recording() override {
    try {
      context_->make_current();
    } catch (const error&) {
    }
    const driver_api& api = context_->api();
    if (capturing_) end_capture();
    if (exec_) api.cuGraphExecDestroy(exec_);
    if (graph_) api.cuGraphDestroy(graph_);  // a loop's body belongs to its node
    if (stream_) api.cuStreamDestroy(stream_);
  }

  void instantiate() {
    if (set_while_) {
      void* flag = const_cast<void*>(flag_);
      void* args[] = {&flag, &condition_};
      QD_CUDA_CHECK(context_->api().cuLaunchKernel(set_while_->function, 1, 1, 1, 1, 1, 1, 0, stream_, args, nullptr));
    }
    const CUresult r = end_capture();
    if (r != cuda_success) throw_failed_call(r, "cuStreamEndCapture", __FILE__, __LINE__);
    QD_CUDA_CHECK(context_->api().cuGraphInstantiateWithFlags(&exec_, graph_, 0));
    QD_CUDA_CHECK(context_->api().cuStreamDestroy(stream_));
    stream_ = nullptr;
  }
  void launch() const {
    if (!exec_) throw internal_error("a CUDA graph replayed before it was instantiated");
    QD_CUDA_CHECK(context_->api().cuGraphLaunch(exec_, nullptr));
  }

 private:
  void check_begin(CUresult r, const char* call) {
    if (r != cuda_success) throw_failed_call(r, call, __FILE__, __LINE__);
    capturing_ = true;
  }
  CUresult end_capture() {
    capturing_ = false;
    CUgraph captured = nullptr;  // the graph a capture began, or the body it captured into
    const CUresult r = context_->api().cuStreamEndCapture(stream_, &captured);
    if (!set_while_) graph_ = captured;
    return r;
  }

  std::shared_ptr<const gpu_context> context_;
  const void* flag_ = nullptr;
  const function_info* set_while_ = nullptr;  // a loop recording: the kernel that sets its condition
  CUgraph graph_ = nullptr;
  CUgraph body_ = nullptr;
  CUgraphConditionalHandle condition_ = 0;
  CUgraphExec exec_ = nullptr;
  bool capturing_ = false;
};

// A fork branch's stream (non-blocking: other threads' legacy-stream work does not
// serialize it), with the events that order it after the work before the fork and the
// work after the join after it.
class cuda_branch final : public cuda_queue {
 public:
  explicit cuda_branch(std::shared_ptr<const gpu_context> context) : context_(std::move(context)) {
    const driver_api& api = context_->api();
    QD_CUDA_CHECK(api.cuStreamCreate(&stream_, stream_non_blocking));
    QD_CUDA_CHECK(api.cuEventCreate(&start_, event_disable_timing));
    QD_CUDA_CHECK(api.cuEventCreate(&done_, event_disable_timing));
  }
  cuda_branch(const cuda_branch&) = delete;
  cuda_branch& operator=(const cuda_branch&) = delete;
  ~cuda_branch() override {
    try {
      context_->make_current();
    } catch (const error&) {
    }
    const driver_api& api = context_->api();
    if (done_) api.cuEventDestroy(done_);
    if (start_) api.cuEventDestroy(start_);
    if (stream_) api.cuStreamDestroy(stream_);
  }
  void fork(CUstream origin) const {
    QD_CUDA_CHECK(context_->api().cuEventRecord(start_, origin));
    QD_CUDA_CHECK(context_->api().cuStreamWaitEvent(stream_, start_, 0));
  }
  void join(CUstream origin) const {
    QD_CUDA_CHECK(context_->api().cuEventRecord(done_, stream_));
    QD_CUDA_CHECK(context_->api().cuStreamWaitEvent(origin, done_, 0));
  }

 private:
  std::shared_ptr<const gpu_context> context_;
  CUevent start_ = nullptr, done_ = nullptr;
};

// Whether the driver has the graph entry points (11.4+).
inline bool has_graphs(const driver_api& api) {
  return api.cuStreamBeginCapture && api.cuStreamEndCapture && api.cuGraphInstantiateWithFlags &&
         api.cuGraphLaunch && api.cuGraphExecDestroy && api.cuGraphDestroy;
}
// Whether it has conditional nodes: 12.3 or later, and their entry points.
inline bool has_conditional_nodes(const driver_api& api) {
  int version = 0;
  if (api.cuDriverGetVersion(&version) != cuda_success || version < conditional_nodes_version) return false;
  return has_graphs(api) && api.cuGraphCreate && api.cuGraphConditionalHandleCreate &&
         (api.cuGraphAddNode_v2 || api.cuGraphAddNode) && api.cuStreamBeginCaptureToGraph;
}

class cuda_device final : public device {
 public:
  explicit cuda_device(const device_options& o) : options_(o) {
    if (!o.compile_only) {
      int ordinal = o.ordinal;
      if (ordinal < 0) {
        const char* env = std::getenv("QD_CUDA_DEVICE");
        ordinal = env && *env ? static_cast<int>(qd::detail::parse_env_integer("QD_CUDA_DEVICE", env, 0, 1023)) : 0;
      }
      context_ = std::make_shared<const gpu_context>(ordinal);
      if (options_.arch == 0) options_.arch = context_->sm();
    } else if (options_.arch == 0) {
      throw user_error("compile_only with arch = cuda needs the target: set cuda_arch (e.g. 90 for sm_90) or "
                       "QD_CUDA_ARCH");
    }
    if (options_.arch < 10 || options_.arch > 999)
      throw user_error(fmt::format("cuda_arch = {} is not a compute capability; use major * 10 + minor, e.g. 90",
                                   options_.arch));
    locate_library(nvrtc_library());  // a missing NVRTC is reported now, not at the first kernel
    compiler_.sm = options_.arch;
    compiler_.opt_level = o.opt_level;
    compiler_.fast_math = o.fast_math;
    prelude_ = translation_unit_prelude();
    if (context_) {
      context_->make_current();
      CUdeviceptr p = 0;
      QD_CUDA_CHECK(context_->api().cuMemAlloc(&p, 64));
      QD_CUDA_CHECK(context_->api().cuMemsetD8(p, 0, 64));
      error_record_ = reinterpret_cast<std::int64_t*>(p);
      graphs_ = has_graphs(context_->api());
      conditional_nodes_ = has_conditional_nodes(context_->api());
    }
  }
  ~cuda_device() override {
    if (error_record_) release(error_record_);
  }

  std::string_view name() const override { return "cuda"; }
  device_traits traits() const override {
    return {.splits_by_default = true,
            .records_launches = graphs_,
            .device_loops = conditional_nodes_,
            .branch_queues = context_ != nullptr};
  }
  std::string target() const override { return fmt::format("sm_{}", options_.arch); }
  std::string compiler_identity() const override { return "nvrtc " + nvrtc_fingerprint(); }
  std::string code_options() const override {
    std::string s;
    for (const auto& f : nvrtc_flags(compiler_)) s += f + " ";
    return s;
  }

  void* allocate(std::size_t bytes) override {
    const gpu_context& c = context("qd::ndarray");
    c.make_current();
    CUdeviceptr p = 0;
    // Rounded up to 8 bytes: u8 atomics update the aligned word holding their byte.
    QD_CUDA_CHECK(c.api().cuMemAlloc(&p, (std::max<std::size_t>(bytes, 1) + 7) / 8 * 8));
    return reinterpret_cast<void*>(p);
  }
  void release(void* p) noexcept override {
    if (!context_ || p == nullptr) return;
    try {
      context_->make_current();
    } catch (const error&) {
    }
    context_->api().cuMemFree(reinterpret_cast<CUdeviceptr>(p));
  }
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    const gpu_context& c = context("qd::ndarray::from_host");
    c.make_current();
    QD_CUDA_CHECK(c.api().cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(dst), src, bytes));
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    const gpu_context& c = context("qd::ndarray::to_host");
    c.make_current();
    QD_CUDA_CHECK(c.api().cuMemcpyDtoH(dst, reinterpret_cast<CUdeviceptr>(src), bytes));
  }

  std::string prelude() const override { return prelude_; }
  std::vector<std::byte> compile(std::string_view source, std::string_view what) override {
    return compile_cubin(source, compiler_, what);
  }
  std::unique_ptr<loaded_module> load(std::span<const std::byte> binary, std::string_view what) override {
    if (!context_) return std::make_unique<compile_only_module>();
    return std::make_unique<cuda_module>(context_, binary, what);
  }
  void launch(void* entry, bool parallel, const launch_context& c) override {
    const gpu_context& g = context("launching a kernel");
    g.make_current();
    const auto* f = static_cast<const function_info*>(entry);
    gpu_task_params params;
    fill_gpu_task_params(c, error_record_, params);
    void* args[] = {&params};
    const gpu_launch_shape shape = gpu_launch_shape_of(parallel, f->grid, c.block_dim);
    CUstream stream = c.queue ? static_cast<const cuda_queue*>(c.queue)->stream() : nullptr;
    QD_CUDA_CHECK(g.api().cuLaunchKernel(f->function, shape.grid, 1, 1, shape.block, 1, 1, 0, stream, args, nullptr));
    if ((c.check_errors || c.wide_bounds) && !c.queue) {
      // Bounds checks are on: the launch must report its first out-of-range access.
      std::int64_t record[5] = {0, 0, 0, 0, 0};
      QD_CUDA_CHECK(g.api().cuMemcpyDtoH(record, reinterpret_cast<CUdeviceptr>(error_record_), sizeof(record)));
      if (record[0] != 0) {
        for (int k = 0; k < 5; ++k) c.error[k] = record[k];
        QD_CUDA_CHECK(g.api().cuMemsetD8(reinterpret_cast<CUdeviceptr>(error_record_), 0, sizeof(record)));
      }
    }
  }
  std::unique_ptr<launch_queue> begin_recording() override {
    context("recording a device graph").make_current();
    return std::make_unique<cuda_recording>(context_);
  }
  std::unique_ptr<launch_queue> begin_loop_recording(const void* flag) override {
    context("recording a device graph").make_current();
    std::call_once(set_while_once_, [&] {
      set_while_module_ = load(compile(graph_loop_source(), "qd_graph_set_while"), "qd_graph_set_while");
      set_while_ = static_cast<const function_info*>(set_while_module_->entry("qd_graph_set_while"));
    });
    return std::make_unique<cuda_recording>(context_, flag, *set_while_);
  }
  void end_recording(launch_queue& r) override {
    context("recording a device graph").make_current();
    static_cast<cuda_recording&>(r).instantiate();
  }
  void replay(launch_queue& r) override {
    context("replaying a device graph").make_current();
    static_cast<const cuda_recording&>(r).launch();
  }
  std::unique_ptr<launch_queue> make_branch_queue() override {
    context("a fork's branch").make_current();
    return std::make_unique<cuda_branch>(context_);
  }
  void fork(launch_queue* origin, std::span<launch_queue* const> branches) override {
    context("a fork's branch").make_current();
    const CUstream from = origin ? static_cast<const cuda_queue*>(origin)->stream() : nullptr;
    for (launch_queue* b : branches) static_cast<const cuda_branch*>(b)->fork(from);
  }
  void join(launch_queue* origin, std::span<launch_queue* const> branches) override {
    context("a fork's branch").make_current();
    const CUstream to = origin ? static_cast<const cuda_queue*>(origin)->stream() : nullptr;
    for (launch_queue* b : branches) static_cast<const cuda_branch*>(b)->join(to);
  }

 private:
  const gpu_context& context(std::string_view what) const {
    if (!context_)
      throw user_error(fmt::format("{}: compile_only is set, so there is no CUDA device: kernels can be compiled "
                                   "(kernel.compile()) and cached, but nothing can be allocated or run",
                                   what));
    return *context_;
  }

  device_options options_;
  nvrtc_options compiler_;
  std::shared_ptr<const gpu_context> context_;  // null in compile-only mode
  std::string prelude_;
  std::int64_t* error_record_ = nullptr;
  bool graphs_ = false;             // the driver has CUDA graphs
  bool conditional_nodes_ = false;  // and conditional nodes (12.3+)
  std::once_flag set_while_once_;
  std::unique_ptr<loaded_module> set_while_module_;
  const function_info* set_while_ = nullptr;
};

}  // namespace detail

QD_FUNC std::unique_ptr<device> make_device(const device_options& options) {
  return std::make_unique<detail::cuda_device>(options);
}

}  // namespace qd::backend::cuda
