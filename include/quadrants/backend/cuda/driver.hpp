// The CUDA driver API, opened with dlopen (libcuda.so.1, or QD_CUDA_PATH): the few
// handles, enums and entry points Quadrants uses, declared here (no CUDA headers).
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>

#include "quadrants/backend/shared_library.hpp"
#include "quadrants/base/api.hpp"

namespace qd::backend::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;
using CUgraphNode = struct CUgraphNode_st*;
using CUgraphConditionalHandle = unsigned long long;

// CUDA_CONDITIONAL_NODE_PARAMS and CUgraphNodeParams (cuda.h, 12.3+), for one node kind.
// Plain aggregates: value-initialize them (graph_node_params p{}).
struct conditional_node_params {
  CUgraphConditionalHandle handle;
  int type;       // CUgraphConditionalNodeType
  unsigned size;  // bodies
  CUgraph* bodies_out;
  CUcontext context;
};
struct graph_node_params {
  int type;  // CUgraphNodeType
  int reserved0[3];
  union {
    conditional_node_params conditional;
    long long reserved1[29];
  };
  long long reserved2;
};
static_assert(sizeof(conditional_node_params) == 32 && sizeof(graph_node_params) == 256 &&
              offsetof(graph_node_params, conditional) == 16 && offsetof(graph_node_params, reserved2) == 248);

inline constexpr CUresult cuda_success = 0;
inline constexpr int attribute_multiprocessor_count = 16;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
inline constexpr int attribute_cc_major = 75;              // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
inline constexpr int attribute_cc_minor = 76;              // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
inline constexpr unsigned stream_non_blocking = 1;         // CU_STREAM_NON_BLOCKING
inline constexpr unsigned event_disable_timing = 2;        // CU_EVENT_DISABLE_TIMING
inline constexpr int capture_mode_thread_local = 1;        // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
inline constexpr int graph_node_type_conditional = 13;     // CU_GRAPH_NODE_TYPE_CONDITIONAL
inline constexpr int conditional_type_while = 1;           // CU_GRAPH_COND_TYPE_WHILE
inline constexpr unsigned conditional_assign_default = 1;  // CU_GRAPH_COND_ASSIGN_DEFAULT
inline constexpr int conditional_nodes_version = 12030;    // cuDriverGetVersion: 12.3 has conditional nodes

// One row per entry point: the table's member, the exported symbol, its type.
#define QD_CUDA_DRIVER_ENTRY_POINTS(X)                                                                              \
  X(cuInit, "cuInit", CUresult(unsigned))                                                                           \
  X(cuDriverGetVersion, "cuDriverGetVersion", CUresult(int*))                                                       \
  X(cuDeviceGetCount, "cuDeviceGetCount", CUresult(int*))                                                           \
  X(cuDeviceGet, "cuDeviceGet", CUresult(CUdevice*, int))                                                           \
  X(cuDeviceGetName, "cuDeviceGetName", CUresult(char*, int, CUdevice))                                             \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", CUresult(int*, int, CUdevice))                                    \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult(CUcontext*, CUdevice))                           \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", CUresult(CUdevice))                                  \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", CUresult(CUcontext))                                                        \
  X(cuCtxSynchronize, "cuCtxSynchronize", CUresult())                                                               \
  X(cuMemAlloc, "cuMemAlloc_v2", CUresult(CUdeviceptr*, std::size_t))                                               \
  X(cuMemFree, "cuMemFree_v2", CUresult(CUdeviceptr))                                                               \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", CUresult(CUdeviceptr, const void*, std::size_t))                               \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", CUresult(void*, CUdeviceptr, std::size_t))                                     \
  X(cuMemsetD8, "cuMemsetD8_v2", CUresult(CUdeviceptr, unsigned char, std::size_t))                                 \
  X(cuModuleLoadData, "cuModuleLoadData", CUresult(CUmodule*, const void*))                                         \
  X(cuModuleUnload, "cuModuleUnload", CUresult(CUmodule))                                                           \
  X(cuModuleGetFunction, "cuModuleGetFunction", CUresult(CUfunction*, CUmodule, const char*))                       \
  X(cuLaunchKernel, "cuLaunchKernel",                                                                               \
    CUresult(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**,    \
             void**))                                                                                               \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor",                     \
    CUresult(int*, CUfunction, int, std::size_t))                                                                   \
  X(cuGetErrorName, "cuGetErrorName", CUresult(CUresult, const char**))                                             \
  X(cuGetErrorString, "cuGetErrorString", CUresult(CUresult, const char**))                                         \
  X(cuStreamCreate, "cuStreamCreate", CUresult(CUstream*, unsigned))                                                \
  X(cuStreamDestroy, "cuStreamDestroy_v2", CUresult(CUstream))                                                      \
  X(cuStreamSynchronize, "cuStreamSynchronize", CUresult(CUstream))                                                 \
  X(cuEventCreate, "cuEventCreate", CUresult(CUevent*, unsigned))                                                   \
  X(cuEventDestroy, "cuEventDestroy_v2", CUresult(CUevent))                                                         \
  X(cuEventRecord, "cuEventRecord", CUresult(CUevent, CUstream))                                                    \
  X(cuStreamWaitEvent, "cuStreamWaitEvent", CUresult(CUstream, CUevent, unsigned))

// Entry points only some drivers have (null when absent): CUDA graphs (11.4+), and
// conditional nodes (12.3+; used only when cuDriverGetVersion says 12.3 or later;
// cuGraphAddNode_v2, with edge data, is 12.4's and preferred where present).
#define QD_CUDA_DRIVER_OPTIONAL_ENTRY_POINTS(X)                                                                     \
  X(cuStreamBeginCapture, "cuStreamBeginCapture_v2", CUresult(CUstream, int))                                       \
  X(cuStreamEndCapture, "cuStreamEndCapture", CUresult(CUstream, CUgraph*))                                         \
  X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags",                                                     \
    CUresult(CUgraphExec*, CUgraph, unsigned long long))                                                            \
  X(cuGraphLaunch, "cuGraphLaunch", CUresult(CUgraphExec, CUstream))                                                \
  X(cuGraphExecDestroy, "cuGraphExecDestroy", CUresult(CUgraphExec))                                                \
  X(cuGraphDestroy, "cuGraphDestroy", CUresult(CUgraph))                                                           \
  X(cuGraphCreate, "cuGraphCreate", CUresult(CUgraph*, unsigned))                                                   \
  X(cuGraphConditionalHandleCreate, "cuGraphConditionalHandleCreate",                                               \
    CUresult(CUgraphConditionalHandle*, CUgraph, CUcontext, unsigned, unsigned))                                    \
  X(cuGraphAddNode, "cuGraphAddNode", CUresult(CUgraphNode*, CUgraph, const CUgraphNode*, std::size_t,             \
                                               graph_node_params*))                                                 \
  X(cuGraphAddNode_v2, "cuGraphAddNode_v2",                                                                         \
    CUresult(CUgraphNode*, CUgraph, const CUgraphNode*, const void*, std::size_t, graph_node_params*))              \
  X(cuStreamBeginCaptureToGraph, "cuStreamBeginCaptureToGraph",                                                     \
    CUresult(CUstream, CUgraph, const CUgraphNode*, const void*, std::size_t, int))

// The driver's entry points, resolved once per process.
struct driver_api {
#define QD_CUDA_DRIVER_MEMBER(member, exported, type) std::add_pointer_t<type> member = nullptr;
  QD_CUDA_DRIVER_ENTRY_POINTS(QD_CUDA_DRIVER_MEMBER)
  QD_CUDA_DRIVER_OPTIONAL_ENTRY_POINTS(QD_CUDA_DRIVER_MEMBER)
#undef QD_CUDA_DRIVER_MEMBER
};

// Where libcuda is looked for (QD_CUDA_PATH, then the usual directories).
QD_FUNC library_search driver_library();

// Opens the driver on first use and resolves every entry point; a missing library
// or required symbol is a qd::driver_error naming it. Does not call cuInit.
QD_FUNC const driver_api& driver();

// "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)", also when the driver
// cannot describe its own error (the stub library).
QD_FUNC std::string result_text(CUresult r);

// Throws a qd::driver_error naming the call, its result, and where it was made.
QD_FUNC void throw_failed_call(CUresult r, const char* call, const char* file, int line);

}  // namespace qd::backend::cuda

// Checks one driver call: QD_CUDA_CHECK(api.cuInit(0)).
#define QD_CUDA_CHECK(call)                                                                   \
  do {                                                                                        \
    const ::qd::backend::cuda::CUresult qd_cuda_result_ = (call);                             \
    if (qd_cuda_result_ != ::qd::backend::cuda::cuda_success)                                  \
      ::qd::backend::cuda::throw_failed_call(qd_cuda_result_, #call, __FILE__, __LINE__);     \
  } while (false)

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/cuda/driver-inl.hpp"
#endif
