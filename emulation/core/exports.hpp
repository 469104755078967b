// What the emulated CUDA driver and HIP runtime export alike: one row per call, naming
// CUDA's symbol and HIP's, its parameters, and what it asks of the emulated GPU. Each
// API file expands the rows with its own names and its own guard, so these calls are
// written once (hipify's mapping, run backwards).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/gpu.hpp"
#include "core/real_library.hpp"

namespace qd::emulation {

// A device pointer as either API passes it: CUdeviceptr (an integer) or void*.
inline void* as_pointer(unsigned long long p) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(p)); }
inline void* as_pointer(void* p) { return p; }

}  // namespace qd::emulation

// X(CUDA symbol, HIP symbol, (parameters), the call). An API file expands them where
// gpu() (its emulated_gpu), status (emulation::gpu_status), device_ptr (its device
// pointer type), emu (the namespace) and max_wait_event_flags are declared; handles
// are plain pointers, as both APIs' opaque types are.
#define QD_EMU_SHARED_CALLS(X)                                                                                         \
  X(cuMemFree_v2, hipFree, (device_ptr p), p == device_ptr{} ? status::ok : gpu().release(emu::as_pointer(p)))         \
  X(cuMemGetInfo_v2, hipMemGetInfo, (std::size_t * free_bytes, std::size_t * total_bytes),                             \
    gpu().memory_info(free_bytes, total_bytes))                                                                        \
  X(cuMemcpyHtoD_v2, hipMemcpyHtoD, (device_ptr dst, const void* src, std::size_t bytes),                              \
    gpu().copy(emu::as_pointer(dst), src, bytes, true, false, nullptr, false))                                         \
  X(cuMemcpyDtoH_v2, hipMemcpyDtoH, (void* dst, device_ptr src, std::size_t bytes),                                    \
    gpu().copy(dst, emu::as_pointer(src), bytes, false, true, nullptr, false))                                         \
  X(cuMemcpyDtoD_v2, hipMemcpyDtoD, (device_ptr dst, device_ptr src, std::size_t bytes),                               \
    gpu().copy(emu::as_pointer(dst), emu::as_pointer(src), bytes, true, true, nullptr, false))                         \
  X(cuMemcpyHtoDAsync_v2, hipMemcpyHtoDAsync, (device_ptr dst, const void* src, std::size_t bytes, void* s),           \
    gpu().copy(emu::as_pointer(dst), src, bytes, true, false, s, true))                                                \
  X(cuMemcpyDtoHAsync_v2, hipMemcpyDtoHAsync, (void* dst, device_ptr src, std::size_t bytes, void* s),                 \
    gpu().copy(dst, emu::as_pointer(src), bytes, false, true, s, true))                                                \
  X(cuMemcpyDtoDAsync_v2, hipMemcpyDtoDAsync, (device_ptr dst, device_ptr src, std::size_t bytes, void* s),            \
    gpu().copy(emu::as_pointer(dst), emu::as_pointer(src), bytes, true, true, s, true))                                \
  X(cuMemsetD8_v2, hipMemsetD8, (device_ptr dst, unsigned char value, std::size_t count),                              \
    gpu().fill(emu::as_pointer(dst), value, count, 1, nullptr, false))                                                 \
  X(cuMemsetD32_v2, hipMemsetD32, (device_ptr dst, unsigned value, std::size_t count),                                 \
    gpu().fill(emu::as_pointer(dst), value, count, 4, nullptr, false))                                                 \
  X(cuMemsetD8Async, hipMemsetD8Async, (device_ptr dst, unsigned char value, std::size_t count, void* s),              \
    gpu().fill(emu::as_pointer(dst), value, count, 1, s, true))                                                        \
  X(cuMemsetD32Async, hipMemsetD32Async, (device_ptr dst, unsigned value, std::size_t count, void* s),                 \
    gpu().fill(emu::as_pointer(dst), value, count, 4, s, true))                                                        \
  X(cuModuleLoadData, hipModuleLoadData, (void** out, const void* image), gpu().load_module(image, out))               \
  X(cuModuleLoadDataEx, hipModuleLoadDataEx, (void** out, const void* image, unsigned, void*, void**),                 \
    gpu().load_module(image, out))                                                                                     \
  X(cuModuleUnload, hipModuleUnload, (void* m), gpu().unload_module(m))                                                \
  X(cuModuleGetFunction, hipModuleGetFunction, (void** out, void* m, const char* name),                                \
    gpu().get_function(m, name, out))                                                                                  \
  X(cuStreamCreate, hipStreamCreateWithFlags, (void** out, unsigned flags), /* 1: non-blocking */                      \
    flags > 1 ? status::invalid_value : gpu().create_stream(flags == 0, out))                                          \
  X(cuStreamDestroy_v2, hipStreamDestroy, (void* s), gpu().destroy_stream(s))                                          \
  X(cuStreamSynchronize, hipStreamSynchronize, (void* s), gpu().synchronize_stream(s))                                 \
  X(cuStreamQuery, hipStreamQuery, (void* s), gpu().query_stream(s))                                                   \
  X(cuLaunchHostFunc, hipLaunchHostFunc, (void* s, void (*fn)(void*), void* data), gpu().host_function(s, fn, data))   \
  X(cuStreamWaitEvent, hipStreamWaitEvent, (void* s, void* e, unsigned flags),                                         \
    flags > max_wait_event_flags ? status::invalid_value : gpu().wait_event(s, e))                                     \
  X(cuEventCreate, hipEventCreateWithFlags, (void** out, unsigned flags), /* 2: timing disabled */                     \
    (flags & ~0x7u) != 0 ? status::invalid_value : gpu().create_event((flags & 0x2u) == 0, out))                       \
  X(cuEventDestroy_v2, hipEventDestroy, (void* e), gpu().destroy_event(e))                                             \
  X(cuEventRecord, hipEventRecord, (void* e, void* s), gpu().record_event(e, s))                                       \
  X(cuEventQuery, hipEventQuery, (void* e), gpu().query_event(e))                                                      \
  X(cuEventSynchronize, hipEventSynchronize, (void* e), gpu().synchronize_event(e))                                    \
  X(cuEventElapsedTime_v2, hipEventElapsedTime, (float* ms, void* start, void* end), gpu().elapsed_ms(start, end, ms)) \
  X(cuStreamBeginCapture_v2, hipStreamBeginCapture, (void* s, int mode),                                               \
    mode<0 || mode> 2 ? status::invalid_value : gpu().begin_capture(s))                                                \
  X(cuStreamEndCapture, hipStreamEndCapture, (void* s, void** graph), gpu().end_capture(s, graph))                     \
  X(cuStreamIsCapturing, hipStreamIsCapturing, (void* s, int* capture_status), /* 1: active, 0: none */                \
    gpu().capture_status(s, capture_status))                                                                           \
  X(cuStreamGetCaptureInfo_v2, hipStreamGetCaptureInfo_v2,                                                             \
    (void* s, int* capture_status, unsigned long long* id, void** graph, void* const** deps, std::size_t* count),      \
    gpu().capture_info(s, capture_status, id, graph, deps, count))                                                     \
  X(cuGraphCreate, hipGraphCreate, (void** out, unsigned flags),                                                       \
    flags != 0 ? status::invalid_value : gpu().create_graph(out))                                                      \
  X(cuGraphInstantiateWithFlags, hipGraphInstantiateWithFlags, (void** out, void* g, unsigned long long flags),        \
    flags != 0 ? status::invalid_value : gpu().instantiate_graph(g, out))                                              \
  X(cuGraphLaunch, hipGraphLaunch, (void* e, void* s), gpu().launch_graph(e, s))                                       \
  X(cuGraphExecDestroy, hipGraphExecDestroy, (void* e), gpu().destroy_graph_exec(e))                                   \
  X(cuGraphDestroy, hipGraphDestroy, (void* g), gpu().destroy_graph(g))

// Defines one row as CUDA's (or HIP's) export, calling the API file's guarded(call).
#define QD_EMU_CUDA_EXPORT(cuda_name, hip_name, params, ...) \
  QD_EMU_EXPORT int cuda_name params {                       \
    return guarded([&] { return __VA_ARGS__; });             \
  }
#define QD_EMU_HIP_EXPORT(cuda_name, hip_name, params, ...) \
  QD_EMU_EXPORT int hip_name params {                       \
    return guarded([&] { return __VA_ARGS__; });            \
  }

// Not a driver API: the emulation's own counts, for tests (graphs instantiated, graph launches).
#define QD_EMU_GRAPH_COUNTS_EXPORT                                                                              \
  QD_EMU_EXPORT void qd_emulated_graph_counts(unsigned long long* instantiated, unsigned long long* launches) { \
    if (instantiated) *instantiated = gpu().graphs_instantiated();                                              \
    if (launches) *launches = gpu().graph_launches();                                                           \
  }
