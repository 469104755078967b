// The HIP runtime, opened with dlopen (libamdhip64, or QD_HIP_PATH): the few
// handles and entry points Quadrants uses, declared here (no HIP headers).
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>

#include "quadrants/backend/shared_library.hpp"
#include "quadrants/base/api.hpp"

namespace qd::backend::amdgpu {

using hipError_t = int;
using hipModule_t = struct hip_module_st*;
using hipFunction_t = struct hip_function_st*;
using hipStream_t = struct hip_stream_st*;
using hipEvent_t = struct hip_event_st*;
using hipGraph_t = struct hip_graph_st*;
using hipGraphExec_t = struct hip_graph_exec_st*;
using hipGraphNode_t = struct hip_graph_node_st*;

inline constexpr hipError_t hip_success = 0;
inline constexpr int hip_memcpy_host_to_device = 1;  // hipMemcpyHostToDevice
inline constexpr int hip_memcpy_device_to_host = 2;  // hipMemcpyDeviceToHost
inline constexpr unsigned hip_stream_non_blocking = 1;   // hipStreamNonBlocking
inline constexpr unsigned hip_event_disable_timing = 2;  // hipEventDisableTiming
inline constexpr int hip_capture_mode_thread_local = 1;  // hipStreamCaptureModeThreadLocal

// One row per entry point: the table's member, the exported symbol, its type.
#define QD_HIP_ENTRY_POINTS(X)                                                                                   \
  X(hipInit, "hipInit", hipError_t(unsigned))                                                                    \
  X(hipGetDeviceCount, "hipGetDeviceCount", hipError_t(int*))                                                    \
  X(hipSetDevice, "hipSetDevice", hipError_t(int))                                                               \
  X(hipGetDeviceProperties, "hipGetDeviceProperties", hipError_t(void*, int))                                    \
  X(hipMalloc, "hipMalloc", hipError_t(void**, std::size_t))                                                     \
  X(hipFree, "hipFree", hipError_t(void*))                                                                       \
  X(hipMemcpy, "hipMemcpy", hipError_t(void*, const void*, std::size_t, int))                                    \
  X(hipMemset, "hipMemset", hipError_t(void*, int, std::size_t))                                                 \
  X(hipModuleLoadData, "hipModuleLoadData", hipError_t(hipModule_t*, const void*))                               \
  X(hipModuleUnload, "hipModuleUnload", hipError_t(hipModule_t))                                                 \
  X(hipModuleGetFunction, "hipModuleGetFunction", hipError_t(hipFunction_t*, hipModule_t, const char*))          \
  X(hipModuleLaunchKernel, "hipModuleLaunchKernel",                                                              \
    hipError_t(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, hipStream_t, \
               void**, void**))                                                                                  \
  X(hipModuleOccupancyMaxPotentialBlockSize, "hipModuleOccupancyMaxPotentialBlockSize",                          \
    hipError_t(int*, int*, hipFunction_t, std::size_t, int))                                                     \
  X(hipGetErrorName, "hipGetErrorName", const char*(hipError_t))                                                 \
  X(hipGetErrorString, "hipGetErrorString", const char*(hipError_t))                                             \
  X(hipStreamCreateWithFlags, "hipStreamCreateWithFlags", hipError_t(hipStream_t*, unsigned))                    \
  X(hipStreamDestroy, "hipStreamDestroy", hipError_t(hipStream_t))                                               \
  X(hipEventCreateWithFlags, "hipEventCreateWithFlags", hipError_t(hipEvent_t*, unsigned))                       \
  X(hipEventDestroy, "hipEventDestroy", hipError_t(hipEvent_t))                                                  \
  X(hipEventRecord, "hipEventRecord", hipError_t(hipEvent_t, hipStream_t))                                       \
  X(hipStreamWaitEvent, "hipStreamWaitEvent", hipError_t(hipStream_t, hipEvent_t, unsigned))

// Entry points only some runtimes have (null when absent): HIP graphs.
#define QD_HIP_OPTIONAL_ENTRY_POINTS(X)                                                                          \
  X(hipStreamBeginCapture, "hipStreamBeginCapture", hipError_t(hipStream_t, int))                                \
  X(hipStreamEndCapture, "hipStreamEndCapture", hipError_t(hipStream_t, hipGraph_t*))                            \
  X(hipGraphInstantiate, "hipGraphInstantiate",                                                                  \
    hipError_t(hipGraphExec_t*, hipGraph_t, hipGraphNode_t*, char*, std::size_t))                                \
  X(hipGraphLaunch, "hipGraphLaunch", hipError_t(hipGraphExec_t, hipStream_t))                                   \
  X(hipGraphExecDestroy, "hipGraphExecDestroy", hipError_t(hipGraphExec_t))                                      \
  X(hipGraphDestroy, "hipGraphDestroy", hipError_t(hipGraph_t))

// The runtime's entry points, resolved once per process.
struct hip_api {
#define QD_HIP_MEMBER(member, exported, type) std::add_pointer_t<type> member = nullptr;
  QD_HIP_ENTRY_POINTS(QD_HIP_MEMBER)
  QD_HIP_OPTIONAL_ENTRY_POINTS(QD_HIP_MEMBER)
#undef QD_HIP_MEMBER
};

// Where libamdhip64 is looked for (QD_HIP_PATH, $ROCM_PATH, /opt/rocm, the system).
QD_FUNC library_search hip_library();

// Opens the runtime on first use and resolves every entry point; a missing
// library or symbol is a qd::driver_error naming it. Does not call hipInit.
QD_FUNC const hip_api& hip();

// Throws a qd::driver_error naming the call, its result, and where it was made.
QD_FUNC void throw_failed_hip_call(hipError_t r, const char* call, const char* file, int line);

}  // namespace qd::backend::amdgpu

// Checks one runtime call: QD_HIP_CHECK(api.hipInit(0)).
#define QD_HIP_CHECK(call)                                                                    \
  do {                                                                                        \
    const ::qd::backend::amdgpu::hipError_t qd_hip_result_ = (call);                          \
    if (qd_hip_result_ != ::qd::backend::amdgpu::hip_success)                                  \
      ::qd::backend::amdgpu::throw_failed_hip_call(qd_hip_result_, #call, __FILE__, __LINE__); \
  } while (false)

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/amdgpu/hip-inl.hpp"
#endif
