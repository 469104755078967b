// Implementation of backend/amdgpu/device.hpp.
#pragma once

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "quadrants/backend/amdgpu/device.hpp"
#include "quadrants/backend/amdgpu/hip.hpp"
#include "quadrants/backend/amdgpu/hiprtc.hpp"
#include "quadrants/backend/compile_only_module.hpp"
#include "quadrants/backend/gpu_task_params.hpp"
#include "quadrants/base/env_integer.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/backend/amdgpu/prelude.hpp"
#include "quadrants/detail/format.hpp"

namespace qd::backend::amdgpu {
namespace detail {

inline std::atomic<std::uint64_t> next_gpu_generation{1};

// The gfx target in a hipDeviceProp_t. Its layout differs between HIP versions,
// so the properties land in a generous buffer and the "gfx..." name is found by
// its content (gcnArchName, e.g. "gfx90a:sramecc+:xnack-").
QD_FUNC std::string find_gfx_name(const unsigned char* props, std::size_t size) {
  for (std::size_t i = 0; i + 4 < size; ++i) {
    if (std::memcmp(props + i, "gfx", 3) != 0 || (i > 0 && props[i - 1] != 0)) continue;
    std::size_t end = i;
    while (end < size && props[end] != 0) ++end;
    return std::string(reinterpret_cast<const char*>(props + i), end - i);
  }
  return {};
}

// One GPU, selected on whichever thread calls in.
class gpu {
 public:
  explicit gpu(int ordinal) : api_(hip()), ordinal_(ordinal), generation_(next_gpu_generation.fetch_add(1)) {
    QD_HIP_CHECK(api_.hipInit(0));
    int count = 0;
    QD_HIP_CHECK(api_.hipGetDeviceCount(&count));
    if (count == 0) throw driver_error("the HIP runtime reports no GPU", "hipGetDeviceCount", 100);
    if (ordinal < 0 || ordinal >= count)
      throw driver_error(fmt::format("AMD GPU {} does not exist ({} GPU(s)); set QD_AMDGPU_DEVICE to 0..{}", ordinal,
                                     count, count - 1),
                         "hipSetDevice", 101);
    make_current();
    std::vector<unsigned char> props(16384, 0);
    QD_HIP_CHECK(api_.hipGetDeviceProperties(props.data(), ordinal));
    arch_ = find_gfx_name(props.data(), props.size());
    if (arch_.empty())
      throw driver_error("cannot read the GPU's gfx target from hipGetDeviceProperties; set amdgpu_arch (e.g. "
                         "\"gfx90a\")",
                         "hipGetDeviceProperties", 0);
  }
  gpu(const gpu&) = delete;
  gpu& operator=(const gpu&) = delete;

  void make_current() const {
    thread_local std::uint64_t current = 0;
    if (current == generation_) return;
    QD_HIP_CHECK(api_.hipSetDevice(ordinal_));
    current = generation_;
  }
  const hip_api& api() const { return api_; }
  const std::string& arch() const { return arch_; }

 private:
  const hip_api& api_;
  int ordinal_;
  std::uint64_t generation_;
  std::string arch_;
};

struct function_info {
  hipFunction_t function = nullptr;
  unsigned grid = 1;
};

class hip_module final : public loaded_module {
 public:
  hip_module(std::shared_ptr<const gpu> g, std::span<const std::byte> binary, std::string_view what)
      : gpu_(std::move(g)), what_(what) {
    gpu_->make_current();
    QD_HIP_CHECK(gpu_->api().hipModuleLoadData(&module_, binary.data()));
  }
  ~hip_module() override {
    try {
      gpu_->make_current();
    } catch (const error&) {
    }
    gpu_->api().hipModuleUnload(module_);
  }

  void* entry(const std::string& name) const override {
    std::lock_guard lock(mutex_);
    if (auto it = entries_.find(name); it != entries_.end()) return it->second;
    gpu_->make_current();
    const hip_api& api = gpu_->api();
    function_info f;
    hipError_t r = api.hipModuleGetFunction(&f.function, module_, name.c_str());
    if (r != hip_success)
      throw driver_error(fmt::format("{}: the loaded HIP module has no entry point '{}': {} {}", what_, name,
                                     api.hipGetErrorName(r), r),
                         "hipModuleGetFunction", r);
    // The smallest grid that reaches full occupancy with our block size.
    int grid = 0, block = 0;
    QD_HIP_CHECK(api.hipModuleOccupancyMaxPotentialBlockSize(&grid, &block, f.function, 0,
                                                             static_cast<int>(limits::gpu_threads_per_block)));
    if (block > 0 && block < static_cast<int>(limits::gpu_threads_per_block))
      grid = grid * block / static_cast<int>(limits::gpu_threads_per_block);
    f.grid = static_cast<unsigned>(std::max(1, grid));
    functions_.push_back(f);
    entries_.emplace(name, &functions_.back());
    return &functions_.back();
  }

 private:
  std::shared_ptr<const gpu> gpu_;
  std::string what_;
  hipModule_t module_ = nullptr;
  mutable std::mutex mutex_;
  mutable std::deque<function_info> functions_;  // stable addresses: entry() hands them out
  mutable std::unordered_map<std::string, function_info*> entries_;
};

// A HIP graph: launches captured on a private non-blocking stream, instantiated, and
// launched on the null stream, where it is ordered like any launch.
// HIP's launch queues: a stream.
class hip_queue : public launch_queue {
 public:
  hipStream_t stream() const { return stream_; }

 protected:
  hipStream_t stream_ = nullptr;
};

class hip_recording final : public hip_queue {
 public:
  explicit hip_recording(std::shared_ptr<const gpu> g) : gpu_(std::move(g)) {
    const hip_api& api = gpu_->api();
    QD_HIP_CHECK(api.hipStreamCreateWithFlags(&stream_, hip_stream_non_blocking));
    const hipError_t r = api.hipStreamBeginCapture(stream_, hip_capture_mode_thread_local);
    if (r != hip_success) {
      api.hipStreamDestroy(stream_);
      throw_failed_hip_call(r, "hipStreamBeginCapture", __FILE__, __LINE__);
    }
    capturing_ = true;
  }
  hip_recording(const hip_recording&) = delete;
  hip_recording& operator=(const hip_recording&) = delete;
  ~hip_recording() override {
    try {
      gpu_->make_current();
    } catch (const error&) {
    }
    const hip_api& api = gpu_->api();
    if (capturing_) end_capture();
    if (exec_) api.hipGraphExecDestroy(exec_);
    if (graph_) api.hipGraphDestroy(graph_);
    if (stream_) api.hipStreamDestroy(stream_);
  }

  void instantiate() {
    const hipError_t r = end_capture();
    if (r != hip_success) throw_failed_hip_call(r, "hipStreamEndCapture", __FILE__, __LINE__);
    QD_HIP_CHECK(gpu_->api().hipGraphInstantiate(&exec_, graph_, nullptr, nullptr, 0));
    QD_HIP_CHECK(gpu_->api().hipStreamDestroy(stream_));
    stream_ = nullptr;
  }
  void launch() const {
    if (!exec_) throw internal_error("a HIP graph replayed before it was instantiated");
    QD_HIP_CHECK(gpu_->api().hipGraphLaunch(exec_, nullptr));
  }

 private:
  hipError_t end_capture() {
    capturing_ = false;
    return gpu_->api().hipStreamEndCapture(stream_, &graph_);
  }

  std::shared_ptr<const gpu> gpu_;
  hipGraph_t graph_ = nullptr;
  hipGraphExec_t exec_ = nullptr;
  bool capturing_ = false;
};

// A fork branch's stream, with the events that order it after the work before the fork
// and the work after the join after it.
class hip_branch final : public hip_queue {
 public:
  explicit hip_branch(std::shared_ptr<const gpu> g) : gpu_(std::move(g)) {
    const hip_api& api = gpu_->api();
    QD_HIP_CHECK(api.hipStreamCreateWithFlags(&stream_, hip_stream_non_blocking));
    QD_HIP_CHECK(api.hipEventCreateWithFlags(&start_, hip_event_disable_timing));
    QD_HIP_CHECK(api.hipEventCreateWithFlags(&done_, hip_event_disable_timing));
  }
  hip_branch(const hip_branch&) = delete;
  hip_branch& operator=(const hip_branch&) = delete;
  ~hip_branch() override {
    try {
      gpu_->make_current();
    } catch (const error&) {
    }
    const hip_api& api = gpu_->api();
    if (done_) api.hipEventDestroy(done_);
    if (start_) api.hipEventDestroy(start_);
    if (stream_) api.hipStreamDestroy(stream_);
  }
  void fork(hipStream_t origin) const {
    QD_HIP_CHECK(gpu_->api().hipEventRecord(start_, origin));
    QD_HIP_CHECK(gpu_->api().hipStreamWaitEvent(stream_, start_, 0));
  }
  void join(hipStream_t origin) const {
    QD_HIP_CHECK(gpu_->api().hipEventRecord(done_, stream_));
    QD_HIP_CHECK(gpu_->api().hipStreamWaitEvent(origin, done_, 0));
  }

 private:
  std::shared_ptr<const gpu> gpu_;
  hipEvent_t start_ = nullptr, done_ = nullptr;
};

// Whether the runtime has the graph entry points.
inline bool has_graphs(const hip_api& api) {
  return api.hipStreamBeginCapture && api.hipStreamEndCapture && api.hipGraphInstantiate && api.hipGraphLaunch &&
         api.hipGraphExecDestroy && api.hipGraphDestroy;
}

class amdgpu_device final : public device {
 public:
  explicit amdgpu_device(const device_options& o) : options_(o) {
    if (!o.arch.empty()) check_gfx_spelling(o.arch);  // the device's own name is taken as it is
    if (!o.compile_only) {
      int ordinal = o.ordinal;
      if (ordinal < 0) {
        const char* env = std::getenv("QD_AMDGPU_DEVICE");
        ordinal = env && *env ? static_cast<int>(qd::detail::parse_env_integer("QD_AMDGPU_DEVICE", env, 0, 1023)) : 0;
      }
      gpu_ = std::make_shared<const gpu>(ordinal);
      if (options_.arch.empty()) options_.arch = gpu_->arch();
    } else if (options_.arch.empty()) {
      throw user_error("compile_only with arch = amdgpu needs the target: set amdgpu_arch (e.g. \"gfx90a\") or "
                       "QD_AMDGPU_ARCH");
    }
    locate_library(hiprtc_library());  // a missing hipRTC is reported now, not at the first kernel
    compiler_.arch = options_.arch;
    compiler_.opt_level = o.opt_level;
    compiler_.fast_math = o.fast_math;
    prelude_ = translation_unit_prelude();
    if (gpu_) {
      void* p = nullptr;
      QD_HIP_CHECK(gpu_->api().hipMalloc(&p, 64));
      QD_HIP_CHECK(gpu_->api().hipMemset(p, 0, 64));
      error_record_ = static_cast<std::int64_t*>(p);
    }
  }
  ~amdgpu_device() override {
    if (error_record_) release(error_record_);
  }

  std::string_view name() const override { return "amdgpu"; }
  // hipRTC compiles one program at a time.
  device_traits traits() const override {
    return {.splits_by_default = true,
            .concurrent_compile = false,
            .records_launches = gpu_ && has_graphs(gpu_->api()),
            .branch_queues = gpu_ != nullptr};
  }
  std::string target() const override { return options_.arch; }
  std::string compiler_identity() const override { return "hiprtc " + hiprtc_fingerprint(); }
  std::string code_options() const override {
    std::string s;
    for (const auto& f : hiprtc_flags(compiler_)) s += f + " ";
    return s;
  }

  void* allocate(std::size_t bytes) override {
    const gpu& g = current("qd::ndarray");
    void* p = nullptr;
    // Rounded up to 8 bytes: u8 atomics update the aligned word holding their byte.
    QD_HIP_CHECK(g.api().hipMalloc(&p, (std::max<std::size_t>(bytes, 1) + 7) / 8 * 8));
    return p;
  }
  void release(void* p) noexcept override {
    if (!gpu_ || p == nullptr) return;
    try {
      gpu_->make_current();
    } catch (const error&) {
    }
    gpu_->api().hipFree(p);
  }
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    const gpu& g = current("qd::ndarray::from_host");
    QD_HIP_CHECK(g.api().hipMemcpy(dst, src, bytes, hip_memcpy_host_to_device));
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    const gpu& g = current("qd::ndarray::to_host");
    QD_HIP_CHECK(g.api().hipMemcpy(dst, src, bytes, hip_memcpy_device_to_host));
  }

  std::string prelude() const override { return prelude_; }
  std::vector<std::byte> compile(std::string_view source, std::string_view what) override {
    return compile_code_object(source, compiler_, what);
  }
  std::unique_ptr<loaded_module> load(std::span<const std::byte> binary, std::string_view what) override {
    if (!gpu_) return std::make_unique<compile_only_module>();
    return std::make_unique<hip_module>(gpu_, binary, what);
  }
  void launch(void* entry, bool parallel, const launch_context& c) override {
    const gpu& g = current("launching a kernel");
    const auto* f = static_cast<const function_info*>(entry);
    gpu_task_params params;
    fill_gpu_task_params(c, error_record_, params);
    std::size_t size = sizeof(params);
    // HIP_LAUNCH_PARAM_BUFFER_POINTER, HIP_LAUNCH_PARAM_BUFFER_SIZE, HIP_LAUNCH_PARAM_END.
    void* config[] = {reinterpret_cast<void*>(1), &params, reinterpret_cast<void*>(2), &size,
                      reinterpret_cast<void*>(3)};
    const gpu_launch_shape shape = gpu_launch_shape_of(parallel, f->grid, c.block_dim);
    hipStream_t stream = c.queue ? static_cast<const hip_queue*>(c.queue)->stream() : nullptr;
    QD_HIP_CHECK(g.api().hipModuleLaunchKernel(f->function, shape.grid, 1, 1, shape.block, 1, 1, 0, stream, nullptr,
                                               config));
    if ((c.check_errors || c.wide_bounds) && !c.queue) {
      std::int64_t record[5] = {0, 0, 0, 0, 0};
      QD_HIP_CHECK(g.api().hipMemcpy(record, error_record_, sizeof(record), hip_memcpy_device_to_host));
      if (record[0] != 0) {
        for (int k = 0; k < 5; ++k) c.error[k] = record[k];
        QD_HIP_CHECK(g.api().hipMemset(error_record_, 0, sizeof(record)));
      }
    }
  }
  std::unique_ptr<launch_queue> begin_recording() override {
    current("recording a device graph");
    return std::make_unique<hip_recording>(gpu_);
  }
  void end_recording(launch_queue& r) override {
    current("recording a device graph");
    static_cast<hip_recording&>(r).instantiate();
  }
  void replay(launch_queue& r) override {
    current("replaying a device graph");
    static_cast<const hip_recording&>(r).launch();
  }
  std::unique_ptr<launch_queue> make_branch_queue() override {
    current("a fork's branch");
    return std::make_unique<hip_branch>(gpu_);
  }
  void fork(launch_queue* origin, std::span<launch_queue* const> branches) override {
    current("a fork's branch");
    const hipStream_t from = origin ? static_cast<const hip_queue*>(origin)->stream() : nullptr;
    for (launch_queue* b : branches) static_cast<const hip_branch*>(b)->fork(from);
  }
  void join(launch_queue* origin, std::span<launch_queue* const> branches) override {
    current("a fork's branch");
    const hipStream_t to = origin ? static_cast<const hip_queue*>(origin)->stream() : nullptr;
    for (launch_queue* b : branches) static_cast<const hip_branch*>(b)->join(to);
  }

 private:
  const gpu& current(std::string_view what) const {
    if (!gpu_)
      throw user_error(fmt::format("{}: compile_only is set, so there is no AMD GPU: kernels can be compiled "
                                   "(kernel.compile()) and cached, but nothing can be allocated or run",
                                   what));
    gpu_->make_current();
    return *gpu_;
  }

  device_options options_;
  hiprtc_options compiler_;
  std::shared_ptr<const gpu> gpu_;  // null in compile-only mode
  std::string prelude_;
  std::int64_t* error_record_ = nullptr;
};

}  // namespace detail

QD_FUNC std::unique_ptr<device> make_device(const device_options& options) {
  return std::make_unique<detail::amdgpu_device>(options);
}

}  // namespace qd::backend::amdgpu
