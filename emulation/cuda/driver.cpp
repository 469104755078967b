// The emulated CUDA driver (libqd_emulated_cuda.so): the driver API calls Quadrants
// makes, and the neighbours a program around them needs (streams, events, async
// copies), answered for one emulated H200 whose memory is host memory and whose
// kernels are the emulated NVRTC's shared objects. Arguments are checked as the
// driver checks them, with the driver's result codes.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "core/exports.hpp"
#include "core/gpu.hpp"
#include "core/real_library.hpp"

QD_EMULATED_GPU_LIBRARY_MARKER

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphNode = struct CUgraphNode_st*;

// CUgraphNodeParams (cuda.h 12.3+), as far as conditional nodes go.
struct CUDA_CONDITIONAL_NODE_PARAMS {
  unsigned long long handle;
  int type;  // 0 IF, 1 WHILE, 2 SWITCH
  unsigned size;
  CUgraph* phGraph_out;
  CUcontext ctx;
};
struct CUgraphNodeParams {
  int type;  // 13: CU_GRAPH_NODE_TYPE_CONDITIONAL
  int reserved0[3];
  union {
    CUDA_CONDITIONAL_NODE_PARAMS conditional;
    long long reserved1[29];
  };
  long long reserved2;
};
static_assert(sizeof(CUgraphNodeParams) == 256);

// CUDA_KERNEL_NODE_PARAMS (v1), for cuGraphExecKernelNodeSetParams.
struct CUDA_KERNEL_NODE_PARAMS {
  CUfunction func;
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  void** kernelParams;
  void** extra;
};

namespace {

namespace emu = qd::emulation;
using status = emu::gpu_status;
constexpr CUresult cuda_success = 0;

// --- the emulated device: an H200 ----------------------------------------------------------

constexpr const char* device_name = "Quadrants emulated NVIDIA H200 (sm_90)";
constexpr int sm_major = 9, sm_minor = 0;
// An H200's SM has its attributes; the device has 8 of them, not 132. Every thread of a
// launch is run on the host, and the backends launch a full grid (blocks per SM x SMs)
// whatever the iteration count: 132 SMs made each launch 270,336 emulated threads, most of
// which only evaluate the prologue and return (emulated_cuda/heat_diffusion: 35 CPU s, 2 s
// with 8 SMs). 8 x 2048 = 16,384 threads still exceed most tests' spaces (and the larger
// ones then stride more often, which is the path worth checking).
constexpr int multiprocessors = 8;
constexpr int max_threads_per_block = 1024;
constexpr std::size_t total_memory = std::size_t{141} << 30;
constexpr int shared_memory_per_block = 48 << 10;

bool attribute(int which, int& value) {
  switch (which) {
    case 1: value = max_threads_per_block; return true;  // MAX_THREADS_PER_BLOCK
    case 2: value = 1024; return true;                   // MAX_BLOCK_DIM_X
    case 3: value = 1024; return true;
    case 4: value = 64; return true;
    case 5: value = 2147483647; return true;  // MAX_GRID_DIM_X
    case 6: value = 65535; return true;
    case 7: value = 65535; return true;
    case 8: value = shared_memory_per_block; return true;
    case 9: value = 65536; return true;        // TOTAL_CONSTANT_MEMORY
    case 10: value = 32; return true;          // WARP_SIZE
    case 11: value = 2147483647; return true;  // MAX_PITCH
    case 12: value = 65536; return true;       // MAX_REGISTERS_PER_BLOCK
    case 13: value = 1980000; return true;     // CLOCK_RATE (kHz)
    case 14: value = 512; return true;         // TEXTURE_ALIGNMENT
    case 16: value = multiprocessors; return true;
    case 17: value = 0; return true;         // KERNEL_EXEC_TIMEOUT
    case 18: value = 0; return true;         // INTEGRATED
    case 19: value = 1; return true;         // CAN_MAP_HOST_MEMORY
    case 20: value = 0; return true;         // COMPUTE_MODE: default
    case 31: value = 1; return true;         // CONCURRENT_KERNELS
    case 32: value = 1; return true;         // ECC_ENABLED
    case 33: value = 0; return true;         // PCI_BUS_ID
    case 34: value = 0; return true;         // PCI_DEVICE_ID
    case 35: value = 0; return true;         // TCC_DRIVER
    case 36: value = 2619000; return true;   // MEMORY_CLOCK_RATE (kHz)
    case 37: value = 6144; return true;      // GLOBAL_MEMORY_BUS_WIDTH
    case 38: value = 60 << 20; return true;  // L2_CACHE_SIZE
    case 39: value = 2048; return true;      // MAX_THREADS_PER_MULTIPROCESSOR
    case 40: value = 3; return true;         // ASYNC_ENGINE_COUNT
    case 41: value = 1; return true;         // UNIFIED_ADDRESSING
    case 75: value = sm_major; return true;
    case 76: value = sm_minor; return true;
    case 81: value = 233472; return true;  // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
    case 82: value = 65536; return true;   // MAX_REGISTERS_PER_MULTIPROCESSOR
    case 83: value = 1; return true;       // MANAGED_MEMORY
    case 95: value = 1; return true;       // COOPERATIVE_LAUNCH
    case 97: value = 232448; return true;  // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    case 106: value = 32; return true;     // MAX_BLOCKS_PER_MULTIPROCESSOR
    default: return false;
  }
}

// A CUBIN runs on its own major architecture at its minor version or later; PTX
// (compute_XY) is compiled for any device at least that new.
bool runs_here(const std::string& target) {
  const bool cubin = target.rfind("sm_", 0) == 0, ptx = target.rfind("compute_", 0) == 0;
  if (!cubin && !ptx) return false;
  const int arch = std::atoi(target.c_str() + (cubin ? 3 : 8));
  return cubin ? arch / 10 == sm_major && arch % 10 <= sm_minor : arch <= sm_major * 10 + sm_minor;
}

// The primary context of device 0: what it holds goes when its last reference does.
struct driver_state {
  std::atomic<bool> initialized{false};
  std::mutex mutex;  // the context's references
  int references = 0;
  std::atomic<bool> alive{false};
  emu::emulated_gpu gpu{emu::gpu_api::cuda, total_memory, &runs_here};
};

driver_state& state() {
  static driver_state* s = new driver_state;  // never destroyed: stream threads may outlive main
  return *s;
}

const CUcontext primary_context = reinterpret_cast<CUcontext>(
    static_cast<std::uintptr_t>((1u << 8) | static_cast<unsigned>(emu::handle_kind::context)));
thread_local CUcontext current_context = nullptr;

CUresult code(emu::gpu_status s) { return emu::result_code(emu::gpu_api::cuda, s); }

// Every call that works in a context: the driver initialized, a live context current,
// and no kernel failure since (a sticky error, returned by every later call).
CUresult need_context() {
  driver_state& d = state();
  if (!d.initialized) return code(status::not_initialized);
  if (current_context != primary_context || !d.alive) return code(status::invalid_context);
  return code(d.gpu.sticky());
}

CUresult need_device(CUdevice dev) {
  if (!state().initialized) return code(status::not_initialized);
  return dev == 0 ? cuda_success : code(status::invalid_device);
}

emu::emulated_gpu& gpu() { return state().gpu; }

unsigned block_limit(const emu::function_record& f) { return emu::block_limit(f, max_threads_per_block); }
using emu::as_pointer;

// Every call in a context: need_context(), then the call.
template <class F>
CUresult guarded(F&& call) {
  if (CUresult r = need_context(); r != cuda_success) return r;
  return code(call());
}

// For the calls both APIs export alike (core/exports.hpp).
using device_ptr = CUdeviceptr;
constexpr unsigned max_wait_event_flags = 1;  // CU_EVENT_WAIT_EXTERNAL

}  // namespace

// --- what both APIs export alike (core/exports.hpp), by CUDA's names ---------------------

QD_EMU_SHARED_CALLS(QD_EMU_CUDA_EXPORT)
QD_EMU_GRAPH_COUNTS_EXPORT

// --- initialization and the device -------------------------------------------------------

QD_EMU_EXPORT CUresult cuInit(unsigned flags) {
  if (flags != 0) return code(status::invalid_value);
  state().initialized = true;
  return cuda_success;
}

// 13.0, or QD_EMULATED_CUDA_DRIVER_VERSION (e.g. 12020: a driver without conditional nodes).
QD_EMU_EXPORT CUresult cuDriverGetVersion(int* version) {
  if (!version) return code(status::invalid_value);
  const char* env = std::getenv("QD_EMULATED_CUDA_DRIVER_VERSION");
  *version = env && *env ? std::atoi(env) : 13000;
  return cuda_success;
}

QD_EMU_EXPORT CUresult cuDeviceGetCount(int* count) {
  if (!count) return code(status::invalid_value);
  if (!state().initialized) return code(status::not_initialized);
  *count = 1;
  return cuda_success;
}

QD_EMU_EXPORT CUresult cuDeviceGet(CUdevice* dev, int ordinal) {
  if (!dev) return code(status::invalid_value);
  if (CUresult r = need_device(ordinal); r != cuda_success) return r;
  *dev = ordinal;
  return cuda_success;
}

QD_EMU_EXPORT CUresult cuDeviceGetName(char* name, int length, CUdevice dev) {
  if (CUresult r = need_device(dev); r != cuda_success) return r;
  if (!name || length <= 0) return code(status::invalid_value);
  std::strncpy(name, device_name, static_cast<std::size_t>(length));
  name[length - 1] = '\0';
  return cuda_success;
}

QD_EMU_EXPORT CUresult cuDeviceGetAttribute(int* value, int which, CUdevice dev) {
  if (CUresult r = need_device(dev); r != cuda_success) return r;
  if (!value) return code(status::invalid_value);
  return attribute(which, *value) ? cuda_success : code(status::invalid_value);
}

QD_EMU_EXPORT CUresult cuDeviceTotalMem_v2(std::size_t* bytes, CUdevice dev) {
  if (CUresult r = need_device(dev); r != cuda_success) return r;
  if (!bytes) return code(status::invalid_value);
  *bytes = total_memory;
  return cuda_success;
}

QD_EMU_EXPORT CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  if (CUresult r = need_device(dev); r != cuda_success) return r;
  if (!major || !minor) return code(status::invalid_value);
  *major = sm_major;
  *minor = sm_minor;
  return cuda_success;
}

// --- contexts --------------------------------------------------------------------------------

QD_EMU_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  if (CUresult r = need_device(dev); r != cuda_success) return r;
  if (!ctx) return code(status::invalid_value);
  driver_state& d = state();
  std::lock_guard lock(d.mutex);
  ++d.references;
  d.alive = true;
  *ctx = primary_context;
  return cuda_success;
}

QD_EMU_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  if (CUresult r = need_device(dev); r != cuda_success) return r;
  driver_state& d = state();
  std::lock_guard lock(d.mutex);
  if (d.references == 0) return code(status::invalid_context);
  if (--d.references == 0) {
    d.gpu.reset();
    d.alive = false;
  }
  return cuda_success;
}

QD_EMU_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }

QD_EMU_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  if (CUresult r = need_device(dev); r != cuda_success) return r;
  driver_state& d = state();
  std::lock_guard lock(d.mutex);
  d.gpu.reset();
  d.references = 0;
  d.alive = false;
  return cuda_success;
}

QD_EMU_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned* flags, int* active) {
  if (CUresult r = need_device(dev); r != cuda_success) return r;
  if (!flags || !active) return code(status::invalid_value);
  *flags = 0;
  *active = state().alive ? 1 : 0;
  return cuda_success;
}

QD_EMU_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (!state().initialized) return code(status::not_initialized);
  if (ctx != nullptr && ctx != primary_context) return code(status::invalid_context);
  current_context = ctx;
  return cuda_success;
}

QD_EMU_EXPORT CUresult cuCtxGetCurrent(CUcontext* ctx) {
  if (!state().initialized) return code(status::not_initialized);
  if (!ctx) return code(status::invalid_value);
  *ctx = current_context;
  return cuda_success;
}

QD_EMU_EXPORT CUresult cuCtxGetDevice(CUdevice* dev) {
  if (!dev) return code(status::invalid_value);
  return guarded([&] {
    *dev = 0;
    return emu::gpu_status::ok;
  });
}

QD_EMU_EXPORT CUresult cuCtxSynchronize() {
  if (!state().initialized) return code(status::not_initialized);
  if (current_context != primary_context || !state().alive) return code(status::invalid_context);
  gpu().synchronize();
  return code(gpu().sticky());
}

// --- memory --------------------------------------------------------------------------------------

QD_EMU_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* out, std::size_t bytes) {
  return guarded([&] {
    void* p = nullptr;
    const emu::gpu_status s = out ? gpu().allocate(bytes, &p) : emu::gpu_status::invalid_value;
    if (s == emu::gpu_status::ok) *out = reinterpret_cast<std::uintptr_t>(p);
    return s;
  });
}

QD_EMU_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, std::size_t* size, CUdeviceptr p) {
  return guarded([&] {
    void* b = nullptr;
    std::size_t s = 0;
    if (!gpu().memory().range_of(as_pointer(p), &b, &s)) return emu::gpu_status::not_found;
    if (base) *base = reinterpret_cast<std::uintptr_t>(b);
    if (size) *size = s;
    return emu::gpu_status::ok;
  });
}

// --- functions and launches ----------------------------------------------------------------------

QD_EMU_EXPORT CUresult cuFuncGetAttribute(int* value, int which, CUfunction h) {
  return guarded([&] {
    auto f = gpu().function(h);
    if (!f) return emu::gpu_status::invalid_handle;
    if (!value) return emu::gpu_status::invalid_value;
    switch (which) {
      case 0: *value = static_cast<int>(block_limit(*f)); break;  // MAX_THREADS_PER_BLOCK
      case 1:
      case 2:
      case 3: *value = 0; break;   // static shared, constant, local bytes
      case 4: *value = 32; break;  // registers
      case 5:
      case 6: *value = sm_major * 10 + sm_minor; break;  // PTX and binary versions
      case 7: *value = 0; break;
      case 8: *value = shared_memory_per_block; break;
      default: return emu::gpu_status::invalid_value;
    }
    return emu::gpu_status::ok;
  });
}

QD_EMU_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction h, int block_size,
                                                                   std::size_t dynamic_shared) {
  return guarded([&] {
    auto f = gpu().function(h);
    if (!f) return emu::gpu_status::invalid_handle;
    if (!blocks) return emu::gpu_status::invalid_value;
    // What an H200 holds when registers do not limit it: 2048 threads and 32 blocks per
    // SM, 228 KiB of shared memory. (The emulation has no register file; the answer sizes
    // the backends' grids as on the GPU, and each thread then strides through memory only
    // a few times, which is also what keeps the emulated launch fast.)
    const bool fits = block_size > 0 && static_cast<unsigned>(block_size) <= block_limit(*f) &&
                      dynamic_shared <= static_cast<std::size_t>(shared_memory_per_block);
    int resident = fits ? std::min(32, 2048 / block_size) : 0;
    if (dynamic_shared > 0) resident = std::min(resident, static_cast<int>(233472 / dynamic_shared));
    *blocks = resident;
    return emu::gpu_status::ok;
  });
}

namespace {

// Checks a launch as cuLaunchKernel does, then hands it to `use` (a launch, or a kernel
// node's new parameters) with its parameters: kernelParams, or one packed buffer.
template <class Use>
CUresult checked_launch(CUfunction h, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared_bytes, void** params, void** extra, Use use) {
  if (CUresult r = need_context(); r != cuda_success) return r;
  auto f = gpu().function(h);
  if (!f) return code(status::invalid_handle);
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) return code(status::invalid_value);
  if (bx > 1024 || by > 1024 || bz > 64 || static_cast<unsigned long long>(bx) * by * bz > max_threads_per_block)
    return code(status::invalid_value);
  if (gx > 2147483647u || gy > 65535 || gz > 65535) return code(status::invalid_value);
  if (shared_bytes > static_cast<unsigned>(shared_memory_per_block)) return code(status::invalid_value);
  if (bx * by * bz > block_limit(*f)) return code(status::beyond_launch_bounds);
  // Parameters: kernelParams, or one packed buffer in `extra`, not both.
  const void* buffer = nullptr;
  std::size_t buffer_size = 0;
  if (extra) {
    if (params) return code(status::invalid_value);
    bool have_pointer = false, have_size = false;
    for (std::size_t i = 0; extra[i] != nullptr; i += 2) {
      const auto key = reinterpret_cast<std::uintptr_t>(extra[i]);
      if (key == 1) {  // CU_LAUNCH_PARAM_BUFFER_POINTER
        buffer = extra[i + 1];
        have_pointer = true;
      } else if (key == 2 && extra[i + 1]) {  // CU_LAUNCH_PARAM_BUFFER_SIZE
        buffer_size = *static_cast<const std::size_t*>(extra[i + 1]);
        have_size = true;
      } else {
        return code(status::invalid_value);
      }
    }
    if (!have_pointer || !have_size) return code(status::invalid_value);
  }
  return code(use(*f, {gx, gy, gz}, {bx, by, bz}, params, buffer, buffer_size));
}

}  // namespace

QD_EMU_EXPORT CUresult cuLaunchKernel(CUfunction h, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                      unsigned bz, unsigned shared_bytes, CUstream stream, void** params,
                                      void** extra) {
  return checked_launch(
      h, gx, gy, gz, bx, by, bz, shared_bytes, params, extra,
      [&](const emu::function_record& f, qd_emu_dim grid, qd_emu_dim block, void** p, const void* buffer,
          std::size_t size) { return gpu().launch(f, grid, block, p, buffer, size, stream); });
}

// A kernel node of an instantiated graph given a new launch (later launches of the graph run it).
// QD_EMULATED_CUDA_REFUSE_NODE_UPDATES set: CUDA_ERROR_NOT_SUPPORTED (for the backends'
// fallback: the graph is recorded again).
QD_EMU_EXPORT CUresult cuGraphExecKernelNodeSetParams(void* exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p) {
  if (const char* refuse = std::getenv("QD_EMULATED_CUDA_REFUSE_NODE_UPDATES"); refuse && *refuse)
    return code(status::not_supported);
  if (!p) return code(status::invalid_value);
  return checked_launch(
      p->func, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY, p->blockDimZ, p->sharedMemBytes,
      p->kernelParams, p->extra,
      [&](const emu::function_record& f, qd_emu_dim grid, qd_emu_dim block, void** params, const void* buffer,
          std::size_t size) { return gpu().set_kernel_node(exec, node, f, grid, block, params, buffer, size); });
}

// --- older names of shared calls ------------------------------------------------------------------

QD_EMU_EXPORT CUresult cuStreamDestroy(CUstream h) { return cuStreamDestroy_v2(h); }
QD_EMU_EXPORT CUresult cuEventDestroy(CUevent h) { return cuEventDestroy_v2(h); }
QD_EMU_EXPORT CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  return cuEventElapsedTime_v2(ms, start, end);
}
QD_EMU_EXPORT CUresult cuStreamBeginCapture(CUstream h, int mode) { return cuStreamBeginCapture_v2(h, mode); }

// --- conditional nodes (core/graphs.hpp) ----------------------------------------------------------

QD_EMU_EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream h, CUgraph g, const CUgraphNode* deps, const void* data,
                                                   std::size_t count, int mode) {
  return guarded([&] {
    // Only into an empty dependency set (the body of a conditional node, as Quadrants uses it).
    if (mode < 0 || mode > 2 || count != 0 || deps || data) return emu::gpu_status::invalid_value;
    return gpu().begin_capture(h, g);
  });
}
// QD_EMULATED_CUDA_REFUSE_CONDITIONAL set: CUDA_ERROR_NOT_SUPPORTED (a driver that reports
// 12.3+ but refuses conditional nodes, for the backends' fallback to the host loop).
QD_EMU_EXPORT CUresult cuGraphConditionalHandleCreate(unsigned long long* out, CUgraph g, CUcontext ctx,
                                                      unsigned default_value, unsigned flags) {
  if (const char* refuse = std::getenv("QD_EMULATED_CUDA_REFUSE_CONDITIONAL"); refuse && *refuse)
    return code(status::not_supported);
  return guarded([&] {
    if (ctx != primary_context || (flags & ~1u) != 0) return emu::gpu_status::invalid_value;
    return gpu().create_condition(g, default_value, (flags & 1u) != 0, out);  // 1: CU_GRAPH_COND_ASSIGN_DEFAULT
  });
}
// Conditional WHILE nodes only, with no dependencies: what Quadrants adds.
QD_EMU_EXPORT CUresult cuGraphAddNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, std::size_t count,
                                      CUgraphNodeParams* params) {
  return guarded([&] {
    if (!out || !params || deps || count != 0) return emu::gpu_status::invalid_value;
    if (params->type != 13 || params->conditional.type != 1 || params->conditional.size != 1 ||
        !params->conditional.phGraph_out || params->conditional.ctx != primary_context)
      return emu::gpu_status::invalid_value;
    void* body = nullptr;
    const emu::gpu_status s = gpu().add_while_node(g, params->conditional.handle, &body);
    if (s != emu::gpu_status::ok) return s;
    params->conditional.phGraph_out[0] = static_cast<CUgraph>(body);
    *out = reinterpret_cast<CUgraphNode>(body);
    return s;
  });
}
QD_EMU_EXPORT CUresult cuGraphAddNode_v2(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, const void* edges,
                                         std::size_t count, CUgraphNodeParams* params) {
  if (edges) return code(status::invalid_value);  // no dependencies, so no edge data
  return cuGraphAddNode(out, g, deps, count, params);
}

// --- errors ------------------------------------------------------------------------------------------

QD_EMU_EXPORT CUresult cuGetErrorName(CUresult value, const char** name) {
  if (!name) return code(status::invalid_value);
  *name = emu::result_name(emu::gpu_api::cuda, value);
  return *name ? cuda_success : code(status::invalid_value);
}

QD_EMU_EXPORT CUresult cuGetErrorString(CUresult value, const char** text) {
  if (!text) return code(status::invalid_value);
  *text = emu::result_text(emu::gpu_api::cuda, value);
  return *text ? cuda_success : code(status::invalid_value);
}
