#include "core/gpu.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace qd::emulation {

unsigned block_limit(const function_record& f, unsigned device_max) {
  const unsigned bound = f.kernel->entry->max_threads_per_block;
  return bound ? std::min(bound, device_max) : device_max;
}

emulated_gpu::emulated_gpu(gpu_api api, std::size_t memory_bytes, bool (*accepts)(const std::string&))
    : api_(api), accepts_(accepts), memory_(memory_bytes) {}

void emulated_gpu::reset() {
  streams_.synchronize_all();
  for (const auto& s : stream_handles_.remove_if([](const stream_record&) { return true; })) streams_.forget(s->queue);
  events_.remove_if([](const event_record&) { return true; });
  graph_execs_.remove_if([](const graph_exec_record&) { return true; });
  graphs_.remove_if([](const graph_record&) { return true; });
  std::lock_guard lock(mutex_);
  functions_.remove_if([](const function_record&) { return true; });
  modules_.remove_if([](const module_record&) { return true; });
  memory_.release_all();
  sticky_ = gpu_status::ok;
}

gpu_status emulated_gpu::allocate(std::size_t bytes, void** out) {
  if (out == nullptr || bytes == 0) return gpu_status::invalid_value;
  *out = memory_.allocate(bytes);
  return *out ? gpu_status::ok : gpu_status::out_of_memory;
}

gpu_status emulated_gpu::memory_info(std::size_t* free_bytes, std::size_t* total_bytes) {
  if (!free_bytes || !total_bytes) return gpu_status::invalid_value;
  *total_bytes = memory_.capacity();
  *free_bytes = memory_.capacity() - memory_.used();
  return gpu_status::ok;
}

gpu_status emulated_gpu::release(void* p) {
  if (!memory_.is_device_pointer(p)) return gpu_status::invalid_value;
  streams_.synchronize_all();  // work queued on it finishes first, as a driver's free waits
  return memory_.release(p) ? gpu_status::ok : gpu_status::invalid_value;
}

bool emulated_gpu::lookup_stream(void* handle, std::shared_ptr<stream>& out) const {
  out = nullptr;
  if (handle == nullptr) return true;
  auto r = stream_handles_.find(handle);
  if (!r) return false;
  out = r->queue;
  return true;
}

gpu_status emulated_gpu::submit(void* stream_handle, std::function<void()> work, bool kernel) {
  std::shared_ptr<stream_record> rec;
  if (stream_handle != nullptr && !(rec = stream_handles_.find(stream_handle))) return gpu_status::invalid_handle;
  if (rec && rec->capture.append(work, kernel)) return gpu_status::ok;
  streams_.submit(rec ? rec->queue : nullptr, std::move(work));
  return gpu_status::ok;
}

bool emulated_gpu::is_capturing(void* stream_handle) const {
  auto rec = stream_handle ? stream_handles_.find(stream_handle) : nullptr;
  return rec && rec->capture.capturing();
}

gpu_status emulated_gpu::copy(void* dst, const void* src, std::size_t bytes, bool dst_device, bool src_device,
                              void* stream_handle, bool async) {
  std::shared_ptr<stream> s;
  if (!lookup_stream(stream_handle, s)) return gpu_status::invalid_handle;
  if (bytes == 0) return gpu_status::ok;
  if (dst == nullptr || src == nullptr) return gpu_status::invalid_value;
  if ((dst_device && !memory_.contains(dst, bytes)) || (src_device && !memory_.contains(src, bytes)))
    return gpu_status::invalid_value;
  return submit(async ? stream_handle : nullptr, [dst, src, bytes] { std::memmove(dst, src, bytes); });
}

gpu_status emulated_gpu::fill(void* dst, unsigned value, std::size_t count, std::size_t width, void* stream_handle,
                              bool async) {
  std::shared_ptr<stream> s;
  if (!lookup_stream(stream_handle, s)) return gpu_status::invalid_handle;
  if (count == 0) return gpu_status::ok;
  if (reinterpret_cast<std::uintptr_t>(dst) % width != 0 || count > SIZE_MAX / width ||
      !memory_.contains(dst, count * width))
    return gpu_status::invalid_value;
  return submit(async ? stream_handle : nullptr, [dst, value, count, width] {
    if (width == 1) {
      std::memset(dst, static_cast<int>(value & 0xffu), count);
    } else {
      auto* words = static_cast<std::uint32_t*>(dst);
      for (std::size_t i = 0; i < count; ++i) words[i] = value;
    }
  });
}

gpu_status emulated_gpu::load_module(const void* image, void** out) {
  if (out == nullptr || image == nullptr) return gpu_status::invalid_value;
  blob_view blob;
  if (read_blob(image, blob) != blob_status::ok || blob.api != api_) return gpu_status::invalid_image;
  if (!accepts_(blob.target)) return gpu_status::no_binary;
  std::string error;
  auto program = loaded_program::load(blob, error);
  if (!program) return gpu_status::invalid_image;
  auto m = std::make_shared<module_record>();
  m->program = std::move(program);
  *out = modules_.add<void*>(std::move(m));
  return gpu_status::ok;
}

gpu_status emulated_gpu::unload_module(void* handle) {
  std::lock_guard lock(mutex_);
  auto m = modules_.remove(handle);
  if (!m) return gpu_status::invalid_handle;
  const module_record* raw = m.get();
  functions_.remove_if([raw](const function_record& f) { return f.module == raw; });
  return gpu_status::ok;  // launches in flight keep the code loaded until they end
}

gpu_status emulated_gpu::get_function(void* module_handle, const char* name, void** out) {
  if (out == nullptr || name == nullptr) return gpu_status::invalid_value;
  std::lock_guard lock(mutex_);
  auto m = modules_.find(module_handle);
  if (!m) return gpu_status::invalid_handle;
  if (auto it = m->functions.find(name); it != m->functions.end()) {
    *out = it->second;
    return gpu_status::ok;
  }
  const loaded_kernel* k = m->program->find(name);
  if (!k) return gpu_status::not_found;
  auto f = std::make_shared<function_record>();
  f->program = m->program;
  f->kernel = k;
  f->module = m.get();
  *out = functions_.add<void*>(std::move(f));
  m->functions.emplace(name, *out);
  return gpu_status::ok;
}

gpu_status emulated_gpu::launch(const function_record& f, qd_emu_dim grid, qd_emu_dim block, void** kernel_params,
                                const void* buffer, std::size_t buffer_size, void* stream_handle) {
  std::shared_ptr<stream> s;
  if (!lookup_stream(stream_handle, s)) return gpu_status::invalid_handle;
  std::function<void()> work;
  if (const gpu_status st = launch_work(f, grid, block, kernel_params, buffer, buffer_size, work); st != gpu_status::ok)
    return st;
  submit(stream_handle, std::move(work), true);
  return s ? gpu_status::ok : sticky_.load();  // the default stream ran it already
}

gpu_status emulated_gpu::set_kernel_node(void* exec_handle, void* node, const function_record& f, qd_emu_dim grid,
                                         qd_emu_dim block, void** kernel_params, const void* buffer,
                                         std::size_t buffer_size) {
  auto e = graph_execs_.find(exec_handle);
  if (!e) return gpu_status::invalid_handle;
  std::function<void()> work;
  if (const gpu_status st = launch_work(f, grid, block, kernel_params, buffer, buffer_size, work); st != gpu_status::ok)
    return st;
  std::lock_guard lock(mutex_);
  for (const auto& [handle, index] : e->kernels) {
    if (handle != node) continue;
    auto changed = std::make_shared<graph_work>(*e->work);  // launches already queued keep theirs
    (*changed)[index] = std::move(work);
    e->work = std::move(changed);
    return gpu_status::ok;
  }
  return gpu_status::invalid_value;  // not a top-level kernel node of this graph
}

gpu_status emulated_gpu::launch_work(const function_record& f, qd_emu_dim grid, qd_emu_dim block, void** kernel_params,
                                     const void* buffer, std::size_t buffer_size, std::function<void()>& out) {
  const qd_emu_entry& entry = *f.kernel->entry;
  if (entry.param_count > 0 && kernel_params == nullptr && buffer == nullptr) return gpu_status::invalid_value;
  auto l = std::make_shared<kernel_launch>();
  l->program = f.program;
  l->entry = &entry;
  l->grid = grid;
  l->block = block;
  if (!capture_parameters(entry, kernel_params, buffer, buffer_size, *l)) return gpu_status::parameter_buffer_too_small;
  out = [this, l] {
    const launch_outcome o = run_kernel(*l);
    if (o.trap_code == 0) return;
    const gpu_status failed = o.trap_code == 2   ? gpu_status::kernel_assert
                              : o.trap_code == 3 ? gpu_status::kernel_no_fiber
                                                 : gpu_status::kernel_trap;
    gpu_status expected = gpu_status::ok;
    sticky_.compare_exchange_strong(expected, failed);
  };
  return gpu_status::ok;
}

gpu_status emulated_gpu::create_stream(bool blocking, void** out) {
  if (out == nullptr) return gpu_status::invalid_value;
  auto rec = std::make_shared<stream_record>();
  rec->queue = streams_.create(blocking);
  *out = stream_handles_.add<void*>(std::move(rec));
  return gpu_status::ok;
}

gpu_status emulated_gpu::destroy_stream(void* handle) {
  auto rec = stream_handles_.remove(handle);
  if (!rec) return gpu_status::invalid_handle;
  rec->queue->synchronize();
  streams_.forget(rec->queue);
  return gpu_status::ok;
}

gpu_status emulated_gpu::synchronize_stream(void* handle) {
  std::shared_ptr<stream> s;
  if (!lookup_stream(handle, s)) return gpu_status::invalid_handle;
  if (s) {
    s->synchronize();
  } else {
    streams_.run_on_null([] {});
  }
  return sticky_.load();
}

gpu_status emulated_gpu::query_stream(void* handle) {
  std::shared_ptr<stream> s;
  if (!lookup_stream(handle, s)) return gpu_status::invalid_handle;
  return !s || s->idle() ? gpu_status::ok : gpu_status::not_ready;
}

gpu_status emulated_gpu::host_function(void* stream_handle, void (*fn)(void*), void* data) {
  if (fn == nullptr) return gpu_status::invalid_value;
  std::shared_ptr<stream> s;
  if (!lookup_stream(stream_handle, s)) return gpu_status::invalid_handle;
  return submit(stream_handle, [fn, data] { fn(data); });
}

void emulated_gpu::synchronize() { streams_.synchronize_all(); }

gpu_status emulated_gpu::create_event(bool timing, void** out) {
  if (out == nullptr) return gpu_status::invalid_value;
  auto rec = std::make_shared<event_record>();
  rec->marks = std::make_shared<event>();
  rec->timing = timing;
  *out = events_.add<void*>(std::move(rec));
  return gpu_status::ok;
}

gpu_status emulated_gpu::destroy_event(void* handle) {
  return events_.remove(handle) ? gpu_status::ok : gpu_status::invalid_handle;
}

gpu_status emulated_gpu::record_event(void* handle, void* stream_handle) {
  auto rec = events_.find(handle);
  if (!rec) return gpu_status::invalid_handle;
  std::shared_ptr<stream_record> srec;
  if (stream_handle != nullptr && !(srec = stream_handles_.find(stream_handle))) return gpu_status::invalid_handle;
  if (std::shared_ptr<graph_record> g = srec ? srec->capture.graph() : nullptr) {  // marks a point of the capture
    std::lock_guard lock(mutex_);
    rec->captured = std::move(g);
    rec->recorded_on = srec;
    return gpu_status::ok;
  }
  {
    std::lock_guard lock(mutex_);
    rec->captured = nullptr;
  }
  auto e = rec->marks;
  const std::uint64_t mark = e->record();
  streams_.submit(srec ? srec->queue : nullptr, [e, mark] { e->complete(mark); });
  return gpu_status::ok;
}

gpu_status emulated_gpu::query_event(void* handle) {
  auto rec = events_.find(handle);
  if (!rec) return gpu_status::invalid_handle;
  return rec->marks->done() ? gpu_status::ok : gpu_status::not_ready;
}

gpu_status emulated_gpu::synchronize_event(void* handle) {
  auto rec = events_.find(handle);
  if (!rec) return gpu_status::invalid_handle;
  rec->marks->wait();
  return sticky_.load();
}

gpu_status emulated_gpu::wait_event(void* stream_handle, void* event_handle) {
  auto rec = events_.find(event_handle);
  if (!rec) return gpu_status::invalid_handle;
  std::shared_ptr<stream_record> srec;
  if (stream_handle != nullptr && !(srec = stream_handles_.find(stream_handle))) return gpu_status::invalid_handle;
  std::shared_ptr<graph_record> captured;
  std::shared_ptr<stream_record> recorder;
  {
    std::lock_guard lock(mutex_);
    captured = rec->captured;
    recorder = rec->recorded_on.lock();
  }
  const std::shared_ptr<graph_record> mine = srec ? srec->capture.graph() : nullptr;
  if (captured) {
    if (!srec) return gpu_status::capture_unsupported;  // the legacy stream cannot join a capture
    if (!mine) return srec->capture.join(std::move(captured)) ? gpu_status::ok : gpu_status::illegal_state;
    if (mine != captured) return gpu_status::illegal_state;  // another capture
    // The capture waits on a stream that joined it: that stream's branch ends here.
    if (recorder && recorder != srec) recorder->capture.leave();
    return gpu_status::ok;
  }
  if (mine) return gpu_status::capture_unsupported;  // a capture waiting on work outside it
  auto e = rec->marks;
  const std::uint64_t mark = e->latest();
  streams_.submit(srec ? srec->queue : nullptr, [e, mark] { e->wait(mark); });
  return gpu_status::ok;
}

gpu_status emulated_gpu::elapsed_ms(void* start, void* end, float* ms) {
  if (ms == nullptr) return gpu_status::invalid_value;
  auto a = events_.find(start), b = events_.find(end);
  if (!a || !b || !a->timing || !b->timing || !a->marks->recorded() || !b->marks->recorded())
    return gpu_status::invalid_handle;
  if (!a->marks->done() || !b->marks->done()) return gpu_status::not_ready;
  *ms = std::chrono::duration<float, std::milli>(b->marks->time() - a->marks->time()).count();
  return gpu_status::ok;
}

gpu_status emulated_gpu::begin_capture(void* stream_handle, void* graph_handle) {
  if (stream_handle == nullptr) return gpu_status::capture_unsupported;  // not the legacy stream
  auto rec = stream_handles_.find(stream_handle);
  if (!rec) return gpu_status::invalid_handle;
  std::shared_ptr<graph_record> into;
  if (graph_handle != nullptr && !(into = graphs_.find(graph_handle))) return gpu_status::invalid_handle;
  return rec->capture.begin(std::move(into), graph_handle) ? gpu_status::ok : gpu_status::illegal_state;
}

gpu_status emulated_gpu::create_graph(void** graph_out) {
  if (graph_out == nullptr) return gpu_status::invalid_value;
  *graph_out = graphs_.add<void*>(std::make_shared<graph_record>());
  return gpu_status::ok;
}

gpu_status emulated_gpu::create_condition(void* graph_handle, unsigned default_value, bool assign_default,
                                          unsigned long long* handle_out) {
  if (handle_out == nullptr) return gpu_status::invalid_value;
  auto g = graphs_.find(graph_handle);
  if (!g) return gpu_status::invalid_handle;
  auto c = std::make_unique<graph_condition>();
  c->default_value = default_value;
  c->assign_default = assign_default;
  *handle_out = reinterpret_cast<std::uintptr_t>(&c->value);
  std::lock_guard lock(mutex_);
  g->conditions.push_back(std::move(c));
  return gpu_status::ok;
}

gpu_status emulated_gpu::add_while_node(void* graph_handle, unsigned long long condition, void** body_out) {
  if (body_out == nullptr) return gpu_status::invalid_value;
  auto g = graphs_.find(graph_handle);
  if (!g) return gpu_status::invalid_handle;
  std::lock_guard lock(mutex_);
  graph_condition* found = nullptr;
  for (const auto& c : g->conditions)
    if (reinterpret_cast<std::uintptr_t>(&c->value) == condition) found = c.get();
  if (!found) return gpu_status::invalid_value;  // a condition of another graph, or none
  auto body = std::make_shared<graph_record>();
  g->nodes.push_back({nullptr, nullptr, body, found});
  *body_out = graphs_.add<void*>(std::move(body));
  return gpu_status::ok;
}

gpu_status emulated_gpu::end_capture(void* stream_handle, void** graph_out) {
  if (graph_out == nullptr) return gpu_status::invalid_value;
  auto rec = stream_handle ? stream_handles_.find(stream_handle) : nullptr;
  if (!rec) return gpu_status::invalid_handle;
  void* existing = nullptr;
  std::shared_ptr<graph_record> g = rec->capture.end(&existing);
  if (!g) return gpu_status::illegal_state;
  *graph_out = existing ? existing : graphs_.add<void*>(std::move(g));
  return gpu_status::ok;
}

gpu_status emulated_gpu::capture_status(void* stream_handle, int* out) {
  if (out == nullptr) return gpu_status::invalid_value;
  std::shared_ptr<stream> s;
  if (!lookup_stream(stream_handle, s)) return gpu_status::invalid_handle;
  *out = is_capturing(stream_handle) ? 1 : 0;
  return gpu_status::ok;
}

gpu_status emulated_gpu::capture_info(void* stream_handle, int* status, unsigned long long* id, void** graph,
                                      void* const** dependencies, std::size_t* count) {
  if (status == nullptr) return gpu_status::invalid_value;
  auto rec = stream_handle ? stream_handles_.find(stream_handle) : nullptr;
  if (stream_handle && !rec) return gpu_status::invalid_handle;
  const std::shared_ptr<graph_record> g = rec ? rec->capture.graph() : nullptr;
  *status = g ? 1 : 0;
  if (id) *id = reinterpret_cast<std::uintptr_t>(g.get());
  if (graph) *graph = nullptr;
  void* const* last = rec ? rec->capture.last_node() : nullptr;
  if (dependencies) *dependencies = last;
  if (count) *count = last ? 1 : 0;
  return gpu_status::ok;
}

gpu_status emulated_gpu::instantiate_graph(void* graph_handle, void** exec_out) {
  if (exec_out == nullptr) return gpu_status::invalid_value;
  auto g = graphs_.find(graph_handle);
  if (!g) return gpu_status::invalid_handle;
  auto e = std::make_shared<graph_exec_record>();
  {
    std::lock_guard lock(mutex_);
    e->work = std::make_shared<const graph_work>(instantiate(g, &e->kernels));
  }
  *exec_out = graph_execs_.add<void*>(std::move(e));
  graphs_instantiated_.fetch_add(1);
  return gpu_status::ok;
}

gpu_status emulated_gpu::launch_graph(void* exec_handle, void* stream_handle) {
  auto e = graph_execs_.find(exec_handle);
  if (!e) return gpu_status::invalid_handle;
  graph_launches_.fetch_add(1);
  std::shared_ptr<const graph_work> work;
  {
    std::lock_guard lock(mutex_);  // set_kernel_node replaces it
    work = e->work;
  }
  const gpu_status s = submit(stream_handle, [work] {
    for (const std::function<void()>& w : *work) w();
  });
  if (s != gpu_status::ok) return s;
  return stream_handle ? gpu_status::ok : sticky_.load();  // the default stream ran it already
}

gpu_status emulated_gpu::destroy_graph(void* graph_handle) {
  return graphs_.remove(graph_handle) ? gpu_status::ok : gpu_status::invalid_handle;
}

gpu_status emulated_gpu::destroy_graph_exec(void* exec_handle) {
  return graph_execs_.remove(exec_handle) ? gpu_status::ok : gpu_status::invalid_handle;
}

}  // namespace qd::emulation
