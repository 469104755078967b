// A GPU vendor's driver API as Quadrants uses it -- CUDA's driver API or the HIP
// runtime -- as one table of entry points, and what else differs between the two.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "quadrants/backend/gpu_entry_table.hpp"
#include "quadrants/base/api.hpp"

namespace qd::inline v0::backend {

// Both APIs' handles are opaque pointers (CUstream and hipStream_t alike), declared
// here once with the values both define alike: no CUDA or HIP header is needed.
using gpu_context = struct gpu_context_st*;  // CUDA's; HIP selects a device instead
using gpu_module = struct gpu_module_st*;
using gpu_function = struct gpu_function_st*;
using gpu_stream = struct gpu_stream_st*;  // null: the legacy (default) stream
using gpu_event = struct gpu_event_st*;
using gpu_graph = struct gpu_graph_st*;
using gpu_graph_exec = struct gpu_graph_exec_st*;
using gpu_graph_node = struct gpu_graph_node_st*;
inline constexpr unsigned gpu_stream_non_blocking = 1;   // CU_STREAM_NON_BLOCKING, hipStreamNonBlocking
inline constexpr unsigned gpu_event_disable_timing = 2;  // CU_EVENT_DISABLE_TIMING, hipEventDisableTiming
inline constexpr int gpu_capture_thread_local = 1;       // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, hipStream...
// Kernel parameters packed in one buffer (cuLaunchKernel's and hipModuleLaunchKernel's `extra`).
inline void* const gpu_launch_buffer_pointer = reinterpret_cast<void*>(1);  // CU_/HIP_LAUNCH_PARAM_BUFFER_POINTER
inline void* const gpu_launch_buffer_size = reinterpret_cast<void*>(2);     // CU_/HIP_LAUNCH_PARAM_BUFFER_SIZE

// Conditional graph nodes exist in CUDA only (12.3+); HIP has none, and its loops run
// their passes from the host. cuda.h's CUDA_CONDITIONAL_NODE_PARAMS and CUgraphNodeParams,
// for the one node kind used; plain aggregates: value-initialize them (params p{}).
using gpu_condition = unsigned long long;  // CUgraphConditionalHandle
struct gpu_conditional_node_params {
  gpu_condition handle;
  int type;       // CUgraphConditionalNodeType
  unsigned size;  // bodies
  gpu_graph* bodies_out;
  gpu_context context;
};
struct gpu_graph_node_params {
  int type;  // CUgraphNodeType
  int reserved0[3];
  union {
    gpu_conditional_node_params conditional;
    long long reserved1[29];
  };
  long long reserved2;
};
static_assert(sizeof(gpu_conditional_node_params) == 32 && sizeof(gpu_graph_node_params) == 256 &&
              offsetof(gpu_graph_node_params, conditional) == 16 && offsetof(gpu_graph_node_params, reserved2) == 248);
inline constexpr int gpu_graph_node_conditional = 13;          // CU_GRAPH_NODE_TYPE_CONDITIONAL
inline constexpr int gpu_conditional_while = 1;                // CU_GRAPH_COND_TYPE_WHILE
inline constexpr unsigned gpu_conditional_assign_default = 1;  // CU_GRAPH_COND_ASSIGN_DEFAULT
inline constexpr int gpu_conditional_nodes_version = 12030;    // cuDriverGetVersion of 12.3, the first with them

// A kernel node's launch, to give it new arguments in an instantiated graph: cuda.h's
// CUDA_KERNEL_NODE_PARAMS (v1, what cuGraphExecKernelNodeSetParams takes) and
// hip_runtime_api.h's hipKernelNodeParams (dim3 is three unsigned).
struct gpu_cuda_kernel_node {
  gpu_function func;
  unsigned grid[3], block[3], shared_bytes;
  void** kernel_params;
  void** extra;
};
struct gpu_hip_kernel_node {
  unsigned block[3];
  void** extra;
  void* func;
  unsigned grid[3];
  void** kernel_params;
  unsigned shared_bytes;
};
static_assert(sizeof(gpu_cuda_kernel_node) == 56 && offsetof(gpu_cuda_kernel_node, kernel_params) == 40 &&
              sizeof(gpu_hip_kernel_node) == 64 && offsetof(gpu_hip_kernel_node, extra) == 16 &&
              offsetof(gpu_hip_kernel_node, grid) == 32 && offsetof(gpu_hip_kernel_node, kernel_params) == 48 &&
              offsetof(gpu_hip_kernel_node, shared_bytes) == 56);

// What an opened GPU is (gpu_steps::open).
struct gpu_facts {
  int ordinal = 0;
  std::string name;               // the driver's name for it (CUDA)
  int sm = 0;                     // CUDA: the compute capability, major * 10 + minor
  std::string gfx;                // AMD: the gfx target, with its features ("gfx90a:sramecc+:xnack-")
  int multiprocessors = 1;        // CUDA: SMs, for the occupancy grid
  int device = 0;                 // CUDA: the CUdevice
  gpu_context context = nullptr;  // CUDA: the retained primary context
};

template <gpu_vendor Vendor>
struct gpu_driver_api;

// What differs between the vendors besides the entry points' names, as values side by
// side, CUDA's first.
template <gpu_vendor Vendor>
struct gpu_api {
  static constexpr bool cuda = Vendor == gpu_vendor::cuda;
  // libcuda's device pointers are integers (CUdeviceptr), HIP's are pointers.
  using device_ptr = std::conditional_t<cuda, unsigned long long, void*>;
  static constexpr const char* backend = cuda ? "cuda" : "amdgpu";  // device::name()
  static constexpr const char* vendor_name = cuda ? "CUDA" : "HIP";
  static constexpr const char* runtime = cuda ? "the CUDA driver" : "the HIP runtime";
  static constexpr const char* gpu_noun = cuda ? "CUDA device" : "AMD GPU";
  static constexpr const char* device_variable = cuda ? "QD_CUDA_DEVICE" : "QD_AMDGPU_DEVICE";
  // A task's parameter block: CUDA's kernelParams (a pointer per kernel parameter, the
  // usual way); for hipModuleLaunchKernel the block goes packed in `extra`, HIP's
  // documented way for module kernels, ended by HIP_LAUNCH_PARAM_END (3).
  static constexpr bool packed_parameters = !cuda;
  static constexpr std::uintptr_t launch_param_end = cuda ? 0 : 3;
  // hipRTC compiles one program at a time: HIP 5's (comgr underneath) crashes when two
  // threads compile at once.
  static constexpr bool concurrent_compile = cuda;
  // A one-dimensional launch of `f`, as a kernel node's parameters.
  using kernel_node = std::conditional_t<cuda, gpu_cuda_kernel_node, gpu_hip_kernel_node>;
  static kernel_node kernel_node_of(gpu_function f, unsigned grid, unsigned block, void** params, void** extra) {
    if constexpr (cuda)
      return {f, {grid, 1, 1}, {block, 1, 1}, 0, params, extra};
    else
      return {{block, 1, 1}, extra, f, {grid, 1, 1}, params, 0};
  }

  static device_ptr to_device(const void* p) {
    if constexpr (cuda)
      return reinterpret_cast<std::uintptr_t>(p);
    else
      return const_cast<void*>(p);
  }
  static void* from_device(device_ptr p) {
    if constexpr (cuda)
      return reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
    else
      return p;
  }
};

// The steps each vendor writes its own way, handed to the table by the vendor's driver
// accessor (backend/cuda/driver-inl.hpp, backend/amdgpu/hip-inl.hpp).
template <gpu_vendor Vendor>
struct gpu_steps {
  using driver = gpu_driver_api<Vendor>;
  // Describes GPU `ordinal` (after init and the count check) and retains what it needs.
  gpu_facts (*open)(const driver& api, int ordinal) = nullptr;
  // Releases what open() retained.
  void (*close)(const driver& api, const gpu_facts& gpu) noexcept = nullptr;
  // Makes the GPU current on the calling thread (CUDA: its context; HIP: the device).
  void (*make_current)(const driver& api, const gpu_facts& gpu) = nullptr;
  // The grid that fills the GPU with `function` in blocks of limits::gpu_threads_per_block
  // (the two occupancy APIs answer different questions).
  unsigned (*full_grid)(const driver& api, const gpu_facts& gpu, gpu_function function) = nullptr;
  // "CUDA_ERROR_NO_DEVICE 100 (no CUDA-capable device is detected)".
  std::string (*result_text)(const driver& api, gpu_result r) = nullptr;
};

// One row per entry point: the member, CUDA's symbol, HIP's (nullptr: that vendor has
// none), the type. Required: a library without it is not usable.
#define QD_GPU_DRIVER_ENTRY_POINTS(X)                                                                                  \
  X(init, "cuInit", "hipInit", gpu_result(unsigned))                                                                   \
  X(driver_version, "cuDriverGetVersion", "hipDriverGetVersion", gpu_result(int*))                                     \
  X(device_count, "cuDeviceGetCount", "hipGetDeviceCount", gpu_result(int*))                                           \
  X(device_get, "cuDeviceGet", nullptr, gpu_result(int*, int))                                                         \
  X(device_name, "cuDeviceGetName", nullptr, gpu_result(char*, int, int))                                              \
  X(device_attribute, "cuDeviceGetAttribute", nullptr, gpu_result(int*, int, int))                                     \
  X(device_properties, nullptr, "hipGetDeviceProperties", gpu_result(void*, int))                                      \
  X(primary_context_retain, "cuDevicePrimaryCtxRetain", nullptr, gpu_result(gpu_context*, int))                        \
  X(primary_context_release, "cuDevicePrimaryCtxRelease_v2", nullptr, gpu_result(int))                                 \
  X(context_set_current, "cuCtxSetCurrent", nullptr, gpu_result(gpu_context))                                          \
  X(set_device, nullptr, "hipSetDevice", gpu_result(int))                                                              \
  X(synchronize, "cuCtxSynchronize", "hipDeviceSynchronize", gpu_result())                                             \
  X(mem_alloc, "cuMemAlloc_v2", "hipMalloc", gpu_result(device_ptr*, std::size_t))                                     \
  X(mem_free, "cuMemFree_v2", "hipFree", gpu_result(device_ptr))                                                       \
  X(copy_to_device, "cuMemcpyHtoD_v2", "hipMemcpyHtoD", gpu_result(device_ptr, const void*, std::size_t))              \
  X(copy_to_host, "cuMemcpyDtoH_v2", "hipMemcpyDtoH", gpu_result(void*, device_ptr, std::size_t))                      \
  X(memset_d8, "cuMemsetD8_v2", "hipMemsetD8", gpu_result(device_ptr, unsigned char, std::size_t))                     \
  X(module_load, "cuModuleLoadData", "hipModuleLoadData", gpu_result(gpu_module*, const void*))                        \
  X(module_unload, "cuModuleUnload", "hipModuleUnload", gpu_result(gpu_module))                                        \
  X(module_function, "cuModuleGetFunction", "hipModuleGetFunction",                                                    \
    gpu_result(gpu_function*, gpu_module, const char*))                                                                \
  X(launch, "cuLaunchKernel", "hipModuleLaunchKernel",                                                                 \
    gpu_result(gpu_function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, gpu_stream, void**, \
               void**))                                                                                                \
  X(occupancy_blocks_per_sm, "cuOccupancyMaxActiveBlocksPerMultiprocessor", nullptr,                                   \
    gpu_result(int*, gpu_function, int, std::size_t))                                                                  \
  X(occupancy_block_size, nullptr, "hipModuleOccupancyMaxPotentialBlockSize",                                          \
    gpu_result(int*, int*, gpu_function, std::size_t, int))                                                            \
  X(get_error_name, "cuGetErrorName", nullptr, gpu_result(gpu_result, const char**))                                   \
  X(get_error_string, "cuGetErrorString", nullptr, gpu_result(gpu_result, const char**))                               \
  X(error_name, nullptr, "hipGetErrorName", const char*(gpu_result))                                                   \
  X(error_string, nullptr, "hipGetErrorString", const char*(gpu_result))                                               \
  X(stream_create, "cuStreamCreate", "hipStreamCreateWithFlags", gpu_result(gpu_stream*, unsigned))                    \
  X(stream_destroy, "cuStreamDestroy_v2", "hipStreamDestroy", gpu_result(gpu_stream))                                  \
  X(stream_synchronize, "cuStreamSynchronize", "hipStreamSynchronize", gpu_result(gpu_stream))                         \
  X(stream_wait_event, "cuStreamWaitEvent", "hipStreamWaitEvent", gpu_result(gpu_stream, gpu_event, unsigned))         \
  X(event_create, "cuEventCreate", "hipEventCreateWithFlags", gpu_result(gpu_event*, unsigned))                        \
  X(event_destroy, "cuEventDestroy_v2", "hipEventDestroy", gpu_result(gpu_event))                                      \
  X(event_record, "cuEventRecord", "hipEventRecord", gpu_result(gpu_event, gpu_stream))

// Entry points only some versions have (null when absent): graphs (CUDA 11.4+), the
// node a capture last added and new arguments for a kernel node in place, and CUDA's
// conditional nodes (12.3+; cuGraphAddNode_v2, with edge data, is 12.4's and preferred
// where present).
#define QD_GPU_DRIVER_OPTIONAL_ENTRY_POINTS(X)                                                                       \
  X(begin_capture, "cuStreamBeginCapture_v2", "hipStreamBeginCapture", gpu_result(gpu_stream, int))                  \
  X(end_capture, "cuStreamEndCapture", "hipStreamEndCapture", gpu_result(gpu_stream, gpu_graph*))                    \
  X(graph_instantiate, "cuGraphInstantiateWithFlags", "hipGraphInstantiateWithFlags",                                \
    gpu_result(gpu_graph_exec*, gpu_graph, unsigned long long))                                                      \
  X(graph_launch, "cuGraphLaunch", "hipGraphLaunch", gpu_result(gpu_graph_exec, gpu_stream))                         \
  X(graph_exec_destroy, "cuGraphExecDestroy", "hipGraphExecDestroy", gpu_result(gpu_graph_exec))                     \
  X(graph_destroy, "cuGraphDestroy", "hipGraphDestroy", gpu_result(gpu_graph))                                       \
  X(capture_info, "cuStreamGetCaptureInfo_v2", "hipStreamGetCaptureInfo_v2",                                         \
    gpu_result(gpu_stream, int*, unsigned long long*, gpu_graph*, const gpu_graph_node**, std::size_t*))             \
  X(exec_kernel_node_set_params, "cuGraphExecKernelNodeSetParams", "hipGraphExecKernelNodeSetParams",                \
    gpu_result(gpu_graph_exec, gpu_graph_node, const void*))                                                         \
  X(graph_create, "cuGraphCreate", nullptr, gpu_result(gpu_graph*, unsigned))                                        \
  X(condition_create, "cuGraphConditionalHandleCreate", nullptr,                                                     \
    gpu_result(gpu_condition*, gpu_graph, gpu_context, unsigned, unsigned))                                          \
  X(graph_add_node, "cuGraphAddNode", nullptr,                                                                       \
    gpu_result(gpu_graph_node*, gpu_graph, const gpu_graph_node*, std::size_t, gpu_graph_node_params*))              \
  X(graph_add_node_v2, "cuGraphAddNode_v2", nullptr,                                                                 \
    gpu_result(gpu_graph_node*, gpu_graph, const gpu_graph_node*, const void*, std::size_t, gpu_graph_node_params*)) \
  X(begin_capture_to_graph, "cuStreamBeginCaptureToGraph", nullptr,                                                  \
    gpu_result(gpu_stream, gpu_graph, const gpu_graph_node*, const void*, std::size_t, int))

// The driver's entry points for one vendor, resolved once per process by the vendor's
// driver() (backend/cuda/driver.hpp) or hip() (backend/amdgpu/hip.hpp).
template <gpu_vendor Vendor>
struct gpu_driver_api {
  using device_ptr = typename gpu_api<Vendor>::device_ptr;
  static constexpr gpu_vendor vendor = Vendor;
  static constexpr const char* calls = gpu_api<Vendor>::cuda ? "CUDA driver call" : "HIP call";
  gpu_steps<Vendor> steps;
  QD_GPU_ENTRY_TABLE(gpu_driver_api, QD_GPU_DRIVER_ENTRY_POINTS, QD_GPU_DRIVER_OPTIONAL_ENTRY_POINTS)
  std::string describe(gpu_result r) const { return steps.result_text(*this, r); }

  // Whether the library has graphs: stream capture, instantiation, launch.
  bool has_graphs() const {
    return begin_capture && end_capture && graph_instantiate && graph_launch && graph_exec_destroy && graph_destroy;
  }
  // Whether a recorded graph's kernel nodes can be found and given new arguments in place.
  bool has_node_updates() const { return has_graphs() && capture_info && exec_kernel_node_set_params; }
  // Whether it has conditional WHILE nodes (CUDA 12.3+): their entry points, and a
  // driver that says it is 12.3 or later.
  bool has_conditional_nodes() const {
    if (!has_graphs() || !graph_create || !condition_create || !(graph_add_node_v2 || graph_add_node) ||
        !begin_capture_to_graph)
      return false;
    int version = 0;
    return driver_version(&version) == gpu_success && version >= gpu_conditional_nodes_version;
  }
};

}  // namespace qd::inline v0::backend
