// Implementation of backend/gpu_device.hpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "quadrants/backend/compile_only_module.hpp"
#include "quadrants/backend/gpu_device.hpp"
#include "quadrants/backend/gpu_task_params.hpp"
#include "quadrants/base/env_integer.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::backend {
namespace gpu_detail {

inline std::atomic<std::uint64_t> next_gpu_generation{1};

// One opened GPU, kept for the life of every device and module that uses it and made
// current on whichever thread calls in.
template <gpu_vendor Vendor>
class gpu_session {
 public:
  using values = gpu_api<Vendor>;
  using driver = gpu_driver_api<Vendor>;

  gpu_session(const driver& api, int ordinal) : api_(api), generation_(next_gpu_generation.fetch_add(1)) {
    QD_GPU_CALL(api_, init, 0);
    int count = 0;
    QD_GPU_CALL(api_, device_count, &count);
    if (count == 0)
      throw driver_error(fmt::format("{} reports no GPU", values::runtime), api_.symbol("device_count"), 100);
    if (ordinal < 0 || ordinal >= count)
      throw driver_error(fmt::format("{} {} does not exist ({} GPU(s)); set {} to 0..{}", values::gpu_noun, ordinal,
                                     count, values::device_variable, count - 1),
                         api_.symbol("device_count"), 101);
    facts_ = api_.steps.open(api_, ordinal);
  }
  gpu_session(const gpu_session&) = delete;
  gpu_session& operator=(const gpu_session&) = delete;
  ~gpu_session() { api_.steps.close(api_, facts_); }

  void make_current() const {
    thread_local std::uint64_t current = 0;  // the generation current on this thread
    if (current == generation_) return;
    api_.steps.make_current(api_, facts_);
    current = generation_;
  }
  // make_current() where a failure cannot be reported (destructors, release()).
  void try_make_current() const noexcept {
    try {
      make_current();
    } catch (const error&) {
    }
  }
  const driver& api() const { return api_; }
  const gpu_facts& facts() const { return facts_; }

 private:
  const driver& api_;
  std::uint64_t generation_;
  gpu_facts facts_;
};

// An entry point and the grid that fills the GPU with it.
struct function_info {
  gpu_function function = nullptr;
  unsigned grid = 1;
};

template <gpu_vendor Vendor>
class gpu_loaded_module final : public loaded_module {
 public:
  gpu_loaded_module(std::shared_ptr<const gpu_session<Vendor>> gpu, std::span<const std::byte> binary,
                    std::string_view what)
      : gpu_(std::move(gpu)), what_(what) {
    gpu_->make_current();
    QD_GPU_CALL(gpu_->api(), module_load, &module_, binary.data());
  }
  ~gpu_loaded_module() override {
    gpu_->try_make_current();
    gpu_->api().module_unload(module_);
  }

  void* entry(const std::string& name) const override {
    std::lock_guard lock(mutex_);
    if (auto it = entries_.find(name); it != entries_.end()) return it->second;
    gpu_->make_current();
    const auto& api = gpu_->api();
    function_info f;
    const gpu_result r = api.module_function(&f.function, module_, name.c_str());
    if (r != gpu_success)
      throw driver_error(fmt::format("{}: the loaded {} module has no entry point '{}': {}", what_,
                                     gpu_api<Vendor>::vendor_name, name, api.describe(r)),
                         api.symbol("module_function"), r);
    f.grid = api.steps.full_grid(api, gpu_->facts(), f.function);
    functions_.push_back(f);
    entries_.emplace(name, &functions_.back());
    return &functions_.back();
  }

 private:
  std::shared_ptr<const gpu_session<Vendor>> gpu_;
  std::string what_;
  gpu_module module_ = nullptr;
  mutable std::mutex mutex_;
  mutable std::deque<function_info> functions_;  // stable addresses: entry() hands them out
  mutable std::unordered_map<std::string, function_info*> entries_;
};

// The GPU's launch queues: a stream.
class gpu_queue : public launch_queue {
 public:
  gpu_stream stream() const { return stream_; }

 protected:
  gpu_stream stream_ = nullptr;
};
inline gpu_stream stream_of(const launch_queue* q) { return q ? static_cast<const gpu_queue*>(q)->stream() : nullptr; }

template <gpu_vendor Vendor>
class gpu_recording;

// A queue with a stream of its own, non-blocking: other threads' work on the legacy
// stream neither joins what it records nor serializes what it runs.
template <gpu_vendor Vendor>
class gpu_own_stream : public gpu_queue {
 public:
  gpu_own_stream(const gpu_own_stream&) = delete;
  gpu_own_stream& operator=(const gpu_own_stream&) = delete;
  // The device graph this queue's launches belong to (a recording itself, or a branch
  // forked from one); null: they run.
  gpu_recording<Vendor>* records_into() const { return records_into_; }
  void set_records_into(gpu_recording<Vendor>* r) { records_into_ = r; }

 protected:
  explicit gpu_own_stream(std::shared_ptr<const gpu_session<Vendor>> gpu) : gpu_(std::move(gpu)) {
    QD_GPU_CALL(api(), stream_create, &stream_, gpu_stream_non_blocking);
  }
  ~gpu_own_stream() override {
    gpu_->try_make_current();
    if (stream_) api().stream_destroy(stream_);
  }
  const gpu_driver_api<Vendor>& api() const { return gpu_->api(); }

  std::shared_ptr<const gpu_session<Vendor>> gpu_;
  gpu_recording<Vendor>* records_into_ = nullptr;
};

// A device graph: launches captured on the queue's stream, instantiated, and launched on
// the legacy stream, where it is ordered like any launch. A loop recording (conditional
// nodes: CUDA 12.3+) captures into the body of a WHILE node instead, and ends the body
// with a launch of `set_while`, which sets the node's condition from the flag.
// A plain recording notes the kernel node each launch added (the node its stream's
// capture last added), so that an update can give those nodes new arguments in place.
template <gpu_vendor Vendor>
class gpu_recording final : public gpu_own_stream<Vendor> {
  using base = gpu_own_stream<Vendor>;
  using base::api;
  using base::stream_;

 public:
  explicit gpu_recording(std::shared_ptr<const gpu_session<Vendor>> gpu) : base(std::move(gpu)) {
    this->records_into_ = this;
    updatable_ = api().has_node_updates();
    begin(api().begin_capture(stream_, gpu_capture_thread_local), "begin_capture", "stream_, gpu_capture_thread_local");
  }
  gpu_recording(std::shared_ptr<const gpu_session<Vendor>> gpu, const void* flag, const function_info& set_while)
      : base(std::move(gpu)), flag_(flag), set_while_(&set_while) {
    try {
      begin_loop();
    } catch (...) {
      release();
      throw;
    }
  }
  ~gpu_recording() override {
    this->gpu_->try_make_current();
    release();
  }

  void instantiate() {
    if (set_while_) {
      void* flag = const_cast<void*>(flag_);
      void* args[] = {&flag, &condition_};  // conditional nodes are CUDA's: its kernelParams
      QD_GPU_CALL(api(), launch, set_while_->function, 1, 1, 1, 1, 1, 1, 0, stream_, args, nullptr);
    }
    api().check(end_capture(), "end_capture", "stream_, &captured", __FILE__, __LINE__);
    QD_GPU_CALL(api(), graph_instantiate, &exec_, graph_, 0);
    QD_GPU_CALL(api(), stream_destroy, stream_);
    stream_ = nullptr;
  }
  void launch() const {
    if (!exec_) throw internal_error("a device graph replayed before it was instantiated");
    QD_GPU_CALL(api(), graph_launch, exec_, nullptr);
  }

  // After a launch of `f` captured on `stream` (this recording's or a branch's): its node.
  void note_launch(gpu_function f, gpu_stream stream) {
    if (!updatable_) return;
    int status = 0;
    unsigned long long id = 0;
    gpu_graph graph = nullptr;
    const gpu_graph_node* last = nullptr;
    std::size_t count = 0;
    if (api().capture_info(stream, &status, &id, &graph, &last, &count) != gpu_success || count != 1 || !last) {
      updatable_ = false;  // not known: such a recording is recorded again instead
      nodes_.clear();
      return;
    }
    nodes_.push_back({last[0], f});
  }
  bool updating() const { return updating_; }
  bool begin_update() {
    if (!updatable_ || !exec_ || updating_) return false;
    updating_ = true;
    update_failed_ = false;
    next_ = 0;
    return true;
  }
  // The next recorded launch's new parameters; a launch of another entry point, one too
  // many or one the driver refuses fails the update.
  void update(gpu_function f, const typename gpu_api<Vendor>::kernel_node& params) {
    if (update_failed_ || next_ >= nodes_.size() || nodes_[next_].function != f ||
        api().exec_kernel_node_set_params(exec_, nodes_[next_].node, &params) != gpu_success) {
      update_failed_ = true;
      return;
    }
    ++next_;
  }
  bool end_update() {
    updating_ = false;
    return !update_failed_ && next_ == nodes_.size();
  }

 private:
  void begin_loop() {
    const gpu_context context = this->gpu_->facts().context;
    QD_GPU_CALL(api(), graph_create, &graph_, 0);
    // The default value 1, assigned at each launch of the graph: the body runs at least once.
    QD_GPU_CALL(api(), condition_create, &condition_, graph_, context, 1, gpu_conditional_assign_default);
    gpu_graph_node_params p{};
    p.type = gpu_graph_node_conditional;
    p.conditional.handle = condition_;
    p.conditional.type = gpu_conditional_while;
    p.conditional.size = 1;
    p.conditional.bodies_out = &body_;
    p.conditional.context = context;
    gpu_graph_node node = nullptr;
    if (api().graph_add_node_v2) {
      QD_GPU_CALL(api(), graph_add_node_v2, &node, graph_, nullptr, nullptr, 0, &p);
    } else {
      QD_GPU_CALL(api(), graph_add_node, &node, graph_, nullptr, 0, &p);
    }
    begin(api().begin_capture_to_graph(stream_, body_, nullptr, nullptr, 0, gpu_capture_thread_local),
          "begin_capture_to_graph", "stream_, body_, nullptr, nullptr, 0, gpu_capture_thread_local");
  }
  void begin(gpu_result r, const char* entry, const char* arguments) {
    api().check(r, entry, arguments, __FILE__, __LINE__);
    capturing_ = true;
  }
  gpu_result end_capture() {
    capturing_ = false;
    gpu_graph captured = nullptr;  // the graph a capture began, or the body it captured into
    const gpu_result r = api().end_capture(stream_, &captured);
    if (!set_while_) graph_ = captured;
    return r;
  }
  // What the graph holds; the stream goes with the base.
  void release() noexcept {
    if (capturing_) end_capture();
    if (exec_) api().graph_exec_destroy(exec_);
    if (graph_) api().graph_destroy(graph_);  // a loop's body belongs to its node
    exec_ = nullptr;
    graph_ = nullptr;
  }

  struct kernel_node {
    gpu_graph_node node;
    gpu_function function;
  };
  std::vector<kernel_node> nodes_;  // in launch order
  bool updatable_ = false;          // a plain recording whose every launch's node is known
  bool updating_ = false, update_failed_ = false;
  std::size_t next_ = 0;  // during an update: the node the next launch updates
  const void* flag_ = nullptr;
  const function_info* set_while_ = nullptr;  // a loop recording: the kernel that sets its condition
  gpu_graph graph_ = nullptr;
  gpu_graph body_ = nullptr;
  gpu_condition condition_ = 0;
  gpu_graph_exec exec_ = nullptr;
  bool capturing_ = false;
};

// A fork branch's stream, with the events that order it after the work before the fork
// and the work after the join after it.
template <gpu_vendor Vendor>
class gpu_branch final : public gpu_own_stream<Vendor> {
 public:
  explicit gpu_branch(std::shared_ptr<const gpu_session<Vendor>> gpu) : gpu_own_stream<Vendor>(std::move(gpu)) {
    QD_GPU_CALL(this->api(), event_create, &start_, gpu_event_disable_timing);
    QD_GPU_CALL(this->api(), event_create, &done_, gpu_event_disable_timing);
  }
  ~gpu_branch() override {
    this->gpu_->try_make_current();
    if (done_) this->api().event_destroy(done_);
    if (start_) this->api().event_destroy(start_);
  }
  // After the work queued on `origin` (null: the legacy stream) ...
  void fork(gpu_stream origin) const {
    QD_GPU_CALL(this->api(), event_record, start_, origin);
    QD_GPU_CALL(this->api(), stream_wait_event, this->stream(), start_, 0);
  }
  // ... and before the work queued on it next.
  void join(gpu_stream origin) const {
    QD_GPU_CALL(this->api(), event_record, done_, this->stream());
    QD_GPU_CALL(this->api(), stream_wait_event, origin, done_, 0);
  }

 private:
  gpu_event start_ = nullptr, done_ = nullptr;
};

template <gpu_vendor Vendor>
class gpu_device final : public device {
 public:
  using values = gpu_api<Vendor>;

  gpu_device(std::shared_ptr<const gpu_session<Vendor>> gpu, gpu_compiler_binding binding)
      : gpu_(std::move(gpu)), binding_(std::move(binding)) {
    if (!gpu_) return;
    const auto& api = gpu_->api();
    gpu_->make_current();
    typename values::device_ptr p{};
    QD_GPU_CALL(api, mem_alloc, &p, 64);
    QD_GPU_CALL(api, memset_d8, p, 0, 64);
    error_record_ = static_cast<std::int64_t*>(values::from_device(p));
    graphs_ = api.has_graphs();
    device_loops_ = !binding_.loop_kernel.empty() && api.has_conditional_nodes();
  }
  ~gpu_device() override {
    if (error_record_) release(error_record_);
  }

  std::string_view name() const override { return values::backend; }
  device_traits traits() const override {
    return {.splits_by_default = true,
            .concurrent_compile = values::concurrent_compile,
            .records_launches = graphs_,
            .device_loops = device_loops_,
            .branch_queues = gpu_ != nullptr,
            .wide_offsets = binding_.wide_offsets};
  }
  std::string target() const override { return binding_.target; }
  std::string compiler_identity() const override { return binding_.identity(); }
  std::string code_options() const override { return binding_.options; }

  void* allocate(std::size_t bytes) override {
    const gpu_session<Vendor>& g = current("qd::ndarray");
    typename values::device_ptr p{};
    // Rounded up to 8 bytes: u8 atomics update the aligned word holding their byte.
    QD_GPU_CALL(g.api(), mem_alloc, &p, (std::max<std::size_t>(bytes, 1) + 7) / 8 * 8);
    return values::from_device(p);
  }
  void release(void* p) noexcept override {
    if (!gpu_ || p == nullptr) return;
    gpu_->try_make_current();
    gpu_->api().mem_free(values::to_device(p));
  }
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    const gpu_session<Vendor>& g = current("qd::ndarray::from_host");
    QD_GPU_CALL(g.api(), copy_to_device, values::to_device(dst), src, bytes);
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    const gpu_session<Vendor>& g = current("qd::ndarray::to_host");
    QD_GPU_CALL(g.api(), copy_to_host, dst, values::to_device(src), bytes);
  }

  std::string prelude() const override { return binding_.prelude; }
  std::vector<std::byte> compile(std::string_view source, std::string_view what) override {
    return binding_.compile(source, what);
  }
  std::unique_ptr<loaded_module> load(std::span<const std::byte> binary, std::string_view what) override {
    if (!gpu_) return std::make_unique<compile_only_module>();
    return std::make_unique<gpu_loaded_module<Vendor>>(gpu_, binary, what);
  }
  void launch(void* entry, bool parallel, const launch_context& c) override {
    const gpu_session<Vendor>& g = current("launching a kernel");
    const auto& api = g.api();
    const auto* f = static_cast<const function_info*>(entry);
    gpu_task_params params;
    fill_gpu_task_params(c, error_record_, params);
    std::size_t size = sizeof(params);
    void* per_parameter[] = {&params};
    void* packed[] = {gpu_launch_buffer_pointer, &params, gpu_launch_buffer_size, &size,
                      reinterpret_cast<void*>(values::launch_param_end)};
    void** kernel_params = values::packed_parameters ? nullptr : per_parameter;
    void** extra = values::packed_parameters ? packed : nullptr;
    const gpu_launch_shape shape = gpu_launch_shape_of(parallel, f->grid, c.block_dim);
    gpu_recording<Vendor>* graph =
        c.queue ? static_cast<const gpu_own_stream<Vendor>*>(c.queue)->records_into() : nullptr;
    if (graph && graph->updating()) {
      graph->update(f->function, values::kernel_node_of(f->function, shape.grid, shape.block, kernel_params, extra));
      return;
    }
    QD_GPU_CALL(api, launch, f->function, shape.grid, 1, 1, shape.block, 1, 1, 0, stream_of(c.queue), kernel_params,
                extra);
    if (graph) graph->note_launch(f->function, stream_of(c.queue));
    if ((c.check_errors || c.wide_bounds) && !c.queue) {
      // Bounds checks are on: the launch must report its first out-of-range access.
      std::int64_t record[5] = {0, 0, 0, 0, 0};
      QD_GPU_CALL(api, copy_to_host, record, values::to_device(error_record_), sizeof(record));
      if (record[0] != 0) {
        for (int k = 0; k < 5; ++k) c.error[k] = record[k];
        QD_GPU_CALL(api, memset_d8, values::to_device(error_record_), 0, sizeof(record));
      }
    }
  }
  std::unique_ptr<launch_queue> begin_recording() override {
    current("recording a device graph");
    return std::make_unique<gpu_recording<Vendor>>(gpu_);
  }
  std::unique_ptr<launch_queue> begin_loop_recording(const void* flag) override {
    current("recording a device graph");
    std::call_once(set_while_once_, [&] {
      set_while_module_ = load(compile(binding_.loop_kernel, "qd_graph_set_while"), "qd_graph_set_while");
      set_while_ = static_cast<const function_info*>(set_while_module_->entry("qd_graph_set_while"));
    });
    return std::make_unique<gpu_recording<Vendor>>(gpu_, flag, *set_while_);
  }
  void end_recording(launch_queue& r) override {
    current("recording a device graph");
    static_cast<gpu_recording<Vendor>&>(r).instantiate();
  }
  void replay(launch_queue& r) override {
    current("replaying a device graph");
    static_cast<const gpu_recording<Vendor>&>(r).launch();
  }
  bool begin_update(launch_queue& r) override {
    current("updating a device graph");
    return static_cast<gpu_recording<Vendor>&>(r).begin_update();
  }
  bool end_update(launch_queue& r) override { return static_cast<gpu_recording<Vendor>&>(r).end_update(); }
  std::unique_ptr<launch_queue> make_branch_queue() override {
    current("a fork's branch");
    return std::make_unique<gpu_branch<Vendor>>(gpu_);
  }
  // A branch forked from a recording records into it, or updates it: then no events.
  void fork(launch_queue* origin, std::span<launch_queue* const> branches) override {
    current("a fork's branch");
    gpu_recording<Vendor>* graph =
        origin ? static_cast<const gpu_own_stream<Vendor>*>(origin)->records_into() : nullptr;
    for (launch_queue* b : branches) {
      auto* branch = static_cast<gpu_branch<Vendor>*>(b);
      branch->set_records_into(graph);
      if (!graph || !graph->updating()) branch->fork(stream_of(origin));
    }
  }
  void join(launch_queue* origin, std::span<launch_queue* const> branches) override {
    current("a fork's branch");
    gpu_recording<Vendor>* graph =
        origin ? static_cast<const gpu_own_stream<Vendor>*>(origin)->records_into() : nullptr;
    for (launch_queue* b : branches) {
      auto* branch = static_cast<gpu_branch<Vendor>*>(b);
      if (!graph || !graph->updating()) branch->join(stream_of(origin));
      branch->set_records_into(nullptr);
    }
  }

 private:
  // The GPU, current on this thread; in compile-only mode, a qd::user_error for `what`.
  const gpu_session<Vendor>& current(std::string_view what) const {
    if (!gpu_)
      throw user_error(
          fmt::format("{}: compile_only is set, so there is no {}: kernels can be compiled "
                      "(kernel.compile()) and cached, but nothing can be allocated or run",
                      what, values::gpu_noun));
    gpu_->make_current();
    return *gpu_;
  }

  std::shared_ptr<const gpu_session<Vendor>> gpu_;  // null in compile-only mode
  gpu_compiler_binding binding_;
  std::int64_t* error_record_ = nullptr;
  bool graphs_ = false;        // the driver has graphs
  bool device_loops_ = false;  // and conditional nodes, and the vendor a loop kernel
  std::once_flag set_while_once_;
  std::unique_ptr<loaded_module> set_while_module_;
  const function_info* set_while_ = nullptr;
};

}  // namespace gpu_detail

template <gpu_vendor Vendor>
std::unique_ptr<device> make_gpu_device(const gpu_driver_api<Vendor>& (*driver)(), int ordinal, bool compile_only,
                                        const gpu_binder& bind) {
  std::shared_ptr<const gpu_detail::gpu_session<Vendor>> gpu;
  if (!compile_only) {
    if (ordinal < 0) {
      const char* variable = gpu_api<Vendor>::device_variable;
      const char* env = std::getenv(variable);
      ordinal = env && *env ? static_cast<int>(qd::detail::parse_env_integer(variable, env, 0, 1023)) : 0;
    }
    gpu = std::make_shared<const gpu_detail::gpu_session<Vendor>>(driver(), ordinal);
  }
  gpu_compiler_binding binding = bind(gpu ? &gpu->facts() : nullptr);
  return std::make_unique<gpu_detail::gpu_device<Vendor>>(std::move(gpu), std::move(binding));
}

}  // namespace qd::inline v0::backend
