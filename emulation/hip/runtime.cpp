// The emulated HIP runtime (libqd_emulated_hip.so): the HIP calls Quadrants makes,
// and the neighbours a program around them needs (streams, events, async copies),
// answered for one emulated MI210 (gfx90a) whose memory is host memory and whose
// kernels are the emulated hipRTC's shared objects. Arguments are checked as HIP
// checks them, with HIP's error codes; each failure is also the thread's last error.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/exports.hpp"
#include "core/gpu.hpp"
#include "core/real_library.hpp"

QD_EMULATED_GPU_LIBRARY_MARKER

using hipError_t = int;
using hipModule_t = struct hip_module_st*;
using hipFunction_t = struct hip_function_st*;
using hipStream_t = struct hip_stream_st*;
using hipEvent_t = struct hip_event_st*;
using hipHostFn_t = void (*)(void*);
using hipGraph_t = struct hip_graph_st*;
using hipGraphExec_t = struct hip_graph_exec_st*;
using hipGraphNode_t = struct hip_graph_node_st*;
// hip_runtime_api.h's hipKernelNodeParams, for hipGraphExecKernelNodeSetParams.
struct hip_dim3 {
  unsigned x, y, z;
};
struct hipKernelNodeParams {
  hip_dim3 blockDim;
  void** extra;
  void* func;
  hip_dim3 gridDim;
  void** kernelParams;
  unsigned sharedMemBytes;
};

namespace {

namespace emu = qd::emulation;
using status = emu::gpu_status;
constexpr hipError_t hip_success = 0;

// --- the emulated device: an MI210 --------------------------------------------------------------

constexpr const char* device_name = "Quadrants emulated AMD Instinct MI210 (gfx90a)";
constexpr const char* gcn_arch_name = "gfx90a:sramecc+:xnack-";
// An MI210's CUs, 8 of them (not 104): the backends launch a full grid, every thread of
// which the host runs (emulation/cuda/driver.cpp says more).
constexpr int compute_units = 8;
constexpr int max_threads_per_block = 1024;
constexpr std::size_t total_memory = std::size_t{64} << 30;
constexpr int shared_memory_per_block = 64 << 10;

// hipDeviceProp_t as HIP 5 lays it out (hipGetDeviceProperties keeps that layout).
struct hip_device_properties {
  char name[256];
  std::size_t totalGlobalMem, sharedMemPerBlock;
  int regsPerBlock, warpSize, maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3], clockRate, memoryClockRate,
      memoryBusWidth;
  std::size_t totalConstMem;
  int major, minor, multiProcessorCount, l2CacheSize, maxThreadsPerMultiProcessor, computeMode, clockInstructionRate;
  unsigned arch;  // hipDeviceArch_t: 17 one-bit feature flags
  int concurrentKernels, pciDomainID, pciBusID, pciDeviceID;
  std::size_t maxSharedMemoryPerMultiProcessor;
  int isMultiGpuBoard, canMapHostMemory, gcnArch;
  char gcnArchName[256];
  int integrated, cooperativeLaunch, cooperativeMultiDeviceLaunch, maxTexture1DLinear, maxTexture1D, maxTexture2D[2],
      maxTexture3D[3];
  unsigned* hdpMemFlushCntl;
  unsigned* hdpRegFlushCntl;
  std::size_t memPitch, textureAlignment, texturePitchAlignment;
  int kernelExecTimeoutEnabled, ECCEnabled, tccDriver, cooperativeMultiDeviceUnmatchedFunc,
      cooperativeMultiDeviceUnmatchedGridDim, cooperativeMultiDeviceUnmatchedBlockDim,
      cooperativeMultiDeviceUnmatchedSharedMem, isLargeBar, asicRevision, managedMemory, directManagedMemAccessFromHost,
      concurrentManagedAccess, pageableMemoryAccess, pageableMemoryAccessUsesHostPageTables;
};
static_assert(sizeof(hip_device_properties) == 792 && offsetof(hip_device_properties, gcnArchName) == 396 &&
                  offsetof(hip_device_properties, arch) == 356,
              "the layout of HIP 5's hipDeviceProp_t");

hip_device_properties properties() {
  hip_device_properties p{};
  std::strncpy(p.name, device_name, sizeof(p.name) - 1);
  p.totalGlobalMem = total_memory;
  p.sharedMemPerBlock = shared_memory_per_block;
  p.regsPerBlock = 65536;
  p.warpSize = 64;
  p.maxThreadsPerBlock = max_threads_per_block;
  p.maxThreadsDim[0] = p.maxThreadsDim[1] = p.maxThreadsDim[2] = 1024;
  p.maxGridSize[0] = 2147483647;
  p.maxGridSize[1] = p.maxGridSize[2] = 65536;
  p.clockRate = 1700000;
  p.memoryClockRate = 1600000;
  p.memoryBusWidth = 4096;
  p.totalConstMem = std::size_t{2} << 30;
  p.major = 9;
  p.minor = 0;
  p.multiProcessorCount = compute_units;
  p.l2CacheSize = 8 << 20;
  p.maxThreadsPerMultiProcessor = 2048;
  p.clockInstructionRate = 100000;
  p.arch = (1u << 16) - 1;  // every feature but dynamic parallelism
  p.concurrentKernels = 1;
  p.maxSharedMemoryPerMultiProcessor = shared_memory_per_block;
  p.canMapHostMemory = 1;
  p.gcnArch = 910;
  std::strncpy(p.gcnArchName, gcn_arch_name, sizeof(p.gcnArchName) - 1);
  p.cooperativeLaunch = 1;
  p.memPitch = 2147483647;
  p.textureAlignment = 256;
  p.ECCEnabled = 1;
  p.isLargeBar = 1;
  p.managedMemory = 1;
  return p;
}

// A code object runs on its processor; a feature it names (sramecc±, xnack±) must be the device's.
bool runs_here(const std::string& target) {
  const std::string device = gcn_arch_name;
  if (target.substr(0, target.find(':')) != device.substr(0, device.find(':'))) return false;
  for (std::size_t at = target.find(':'); at != std::string::npos; at = target.find(':', at + 1)) {
    const std::string feature = target.substr(at + 1, target.find(':', at + 1) - at - 1);
    if (device.find(":" + feature) == std::string::npos) return false;
  }
  return true;
}

emu::emulated_gpu& gpu() {
  static emu::emulated_gpu* g = new emu::emulated_gpu(emu::gpu_api::hip, total_memory, &runs_here);
  return *g;
}

thread_local hipError_t last_error = hip_success;

// Every result passes here: a failure becomes the thread's last error.
hipError_t done(hipError_t e) {
  if (e != hip_success) last_error = e;
  return e;
}

hipError_t code(emu::gpu_status s) { return emu::result_code(emu::gpu_api::hip, s); }

// A call on the device: refused with the sticky error after a kernel failed.
template <class F>
hipError_t guarded(F&& call) {
  if (const emu::gpu_status sticky = gpu().sticky(); sticky != emu::gpu_status::ok) return done(code(sticky));
  return done(code(call()));
}

unsigned block_limit(const emu::function_record& f) { return emu::block_limit(f, max_threads_per_block); }

// Blocks of `block_size` threads a compute unit holds when registers do not limit it
// (the emulation has none): 2048 threads (32 waves of 64), 64 KiB of LDS. The answer sizes
// the backend's grid as on the GPU.
int resident_blocks(int block_size, std::size_t dynamic_shared) {
  if (block_size <= 0 || dynamic_shared > static_cast<std::size_t>(shared_memory_per_block)) return 0;
  int blocks = std::max(1, 2048 / block_size);
  if (dynamic_shared > 0) blocks = std::min(blocks, static_cast<int>(shared_memory_per_block / dynamic_shared));
  return blocks;
}

// For the calls both APIs export alike (core/exports.hpp).
using device_ptr = void*;
constexpr unsigned max_wait_event_flags = 0;  // HIP's stream waits take no flags

}  // namespace

// --- what both APIs export alike (core/exports.hpp), by HIP's names -------------------------

QD_EMU_SHARED_CALLS(QD_EMU_HIP_EXPORT)
QD_EMU_GRAPH_COUNTS_EXPORT

// --- the device ---------------------------------------------------------------------------------

QD_EMU_EXPORT hipError_t hipInit(unsigned flags) {
  return done(flags == 0 ? hip_success : code(status::invalid_value));
}

QD_EMU_EXPORT hipError_t hipDriverGetVersion(int* version) {
  if (!version) return done(code(status::invalid_value));
  *version = 50221153;
  return hip_success;
}
QD_EMU_EXPORT hipError_t hipRuntimeGetVersion(int* version) { return hipDriverGetVersion(version); }

QD_EMU_EXPORT hipError_t hipGetDeviceCount(int* count) {
  if (!count) return done(code(status::invalid_value));
  *count = 1;
  return hip_success;
}

QD_EMU_EXPORT hipError_t hipSetDevice(int device) {
  return done(device == 0 ? hip_success : code(status::invalid_device));
}

QD_EMU_EXPORT hipError_t hipGetDevice(int* device) {
  if (!device) return done(code(status::invalid_value));
  *device = 0;
  return hip_success;
}

QD_EMU_EXPORT hipError_t hipGetDeviceProperties(void* out, int device) {
  if (!out) return done(code(status::invalid_value));
  if (device != 0) return done(code(status::invalid_device));
  const hip_device_properties p = properties();
  std::memcpy(out, &p, sizeof(p));
  return hip_success;
}

QD_EMU_EXPORT hipError_t hipDeviceSynchronize() {
  gpu().synchronize();
  return done(code(gpu().sticky()));
}

QD_EMU_EXPORT hipError_t hipDeviceReset() {
  gpu().reset();
  return hip_success;
}

// --- memory ------------------------------------------------------------------------------------------

QD_EMU_EXPORT hipError_t hipMalloc(void** out, std::size_t bytes) {
  return guarded([&] {
    if (!out) return emu::gpu_status::invalid_value;
    if (bytes == 0) {  // HIP gives a null pointer for nothing
      *out = nullptr;
      return emu::gpu_status::ok;
    }
    return gpu().allocate(bytes, out);
  });
}

namespace {
// hipMemcpyKind: which sides are device memory; Default (4) asks the pointers.
hipError_t copy(void* dst, const void* src, std::size_t bytes, int kind, hipStream_t stream, bool async) {
  if (kind < 0 || kind > 4) return done(code(status::invalid_memcpy_direction));
  return guarded([&] {
    const bool dst_device = kind == 4 ? gpu().memory().is_device_pointer(dst) : (kind == 1 || kind == 3);
    const bool src_device = kind == 4 ? gpu().memory().is_device_pointer(src) : (kind == 2 || kind == 3);
    return gpu().copy(dst, src, bytes, dst_device, src_device, stream, async);
  });
}
}  // namespace

QD_EMU_EXPORT hipError_t hipMemcpy(void* dst, const void* src, std::size_t bytes, int kind) {
  return copy(dst, src, bytes, kind, nullptr, false);
}
QD_EMU_EXPORT hipError_t hipMemcpyAsync(void* dst, const void* src, std::size_t bytes, int kind, hipStream_t s) {
  return copy(dst, src, bytes, kind, s, true);
}
QD_EMU_EXPORT hipError_t hipMemset(void* dst, int value, std::size_t bytes) {
  return guarded([&] { return gpu().fill(dst, static_cast<unsigned>(value), bytes, 1, nullptr, false); });
}
QD_EMU_EXPORT hipError_t hipMemsetAsync(void* dst, int value, std::size_t bytes, hipStream_t s) {
  return guarded([&] { return gpu().fill(dst, static_cast<unsigned>(value), bytes, 1, s, true); });
}

// --- modules and functions -----------------------------------------------------------------------------

QD_EMU_EXPORT hipError_t hipModuleOccupancyMaxPotentialBlockSize(int* grid, int* block, hipFunction_t h,
                                                                 std::size_t dynamic_shared, int block_limit_arg) {
  return guarded([&] {
    auto f = gpu().function(h);
    if (!f) return emu::gpu_status::invalid_handle;
    if (!grid || !block || block_limit_arg < 0 || dynamic_shared > static_cast<std::size_t>(shared_memory_per_block))
      return emu::gpu_status::invalid_value;
    unsigned b = block_limit(*f);
    if (block_limit_arg > 0) b = std::min(b, static_cast<unsigned>(block_limit_arg));
    *block = static_cast<int>(b);
    *grid = compute_units * resident_blocks(static_cast<int>(b), dynamic_shared);
    return emu::gpu_status::ok;
  });
}

QD_EMU_EXPORT hipError_t hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, hipFunction_t h,
                                                                            int block_size,
                                                                            std::size_t dynamic_shared) {
  return guarded([&] {
    auto f = gpu().function(h);
    if (!f) return emu::gpu_status::invalid_handle;
    if (!blocks) return emu::gpu_status::invalid_value;
    *blocks = block_size > 0 && static_cast<unsigned>(block_size) <= block_limit(*f)
                  ? resident_blocks(block_size, dynamic_shared)
                  : 0;
    return emu::gpu_status::ok;
  });
}

namespace {

// Checks a launch as hipModuleLaunchKernel does, then hands it to `use` (a launch, or a
// kernel node's new parameters) with its parameters: kernelParams, or one packed buffer.
template <class Use>
hipError_t checked_launch(hipFunction_t h, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned shared_bytes, void** params, void** extra, Use use) {
  if (const emu::gpu_status sticky = gpu().sticky(); sticky != emu::gpu_status::ok) return done(code(sticky));
  auto f = gpu().function(h);
  if (!f) return done(code(status::invalid_handle));
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) return done(code(status::invalid_value));
  if (gx > 2147483647u || gy > 65536 || gz > 65536) return done(code(status::invalid_value));
  if (static_cast<unsigned long long>(bx) * by * bz > max_threads_per_block) return done(code(status::invalid_value));
  if (shared_bytes > static_cast<unsigned>(shared_memory_per_block)) return done(code(status::invalid_value));
  if (params && extra) return done(code(status::invalid_value));
  if (bx * by * bz > block_limit(*f)) return done(code(status::beyond_launch_bounds));  // beyond __launch_bounds__
  // extra: exactly {HIP_LAUNCH_PARAM_BUFFER_POINTER, p, HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END}.
  const void* buffer = nullptr;
  std::size_t buffer_size = 0;
  if (extra) {
    if (reinterpret_cast<std::uintptr_t>(extra[0]) != 1 || reinterpret_cast<std::uintptr_t>(extra[2]) != 2 ||
        reinterpret_cast<std::uintptr_t>(extra[4]) != 3 || extra[3] == nullptr)
      return done(code(status::invalid_value));
    buffer = extra[1];
    buffer_size = *static_cast<const std::size_t*>(extra[3]);
  }
  return done(code(use(*f, {gx, gy, gz}, {bx, by, bz}, params, buffer, buffer_size)));
}

}  // namespace

QD_EMU_EXPORT hipError_t hipModuleLaunchKernel(hipFunction_t h, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                               unsigned by, unsigned bz, unsigned shared_bytes, hipStream_t stream,
                                               void** params, void** extra) {
  return checked_launch(
      h, gx, gy, gz, bx, by, bz, shared_bytes, params, extra,
      [&](const emu::function_record& f, qd_emu_dim grid, qd_emu_dim block, void** p, const void* buffer,
          std::size_t size) { return gpu().launch(f, grid, block, p, buffer, size, stream); });
}

// A kernel node of an instantiated graph given a new launch (later launches of the graph
// run it); `func` is the module function the node launched.
QD_EMU_EXPORT hipError_t hipGraphExecKernelNodeSetParams(hipGraphExec_t exec, hipGraphNode_t node,
                                                         const hipKernelNodeParams* p) {
  if (!p) return done(code(status::invalid_value));
  return checked_launch(
      static_cast<hipFunction_t>(p->func), p->gridDim.x, p->gridDim.y, p->gridDim.z, p->blockDim.x, p->blockDim.y,
      p->blockDim.z, p->sharedMemBytes, p->kernelParams, p->extra,
      [&](const emu::function_record& f, qd_emu_dim grid, qd_emu_dim block, void** params, const void* buffer,
          std::size_t size) { return gpu().set_kernel_node(exec, node, f, grid, block, params, buffer, size); });
}

// --- shorter forms of shared calls, and graphs ---------------------------------------------------------

QD_EMU_EXPORT hipError_t hipStreamCreate(hipStream_t* out) {
  return hipStreamCreateWithFlags(reinterpret_cast<void**>(out), 0);
}
QD_EMU_EXPORT hipError_t hipEventCreate(hipEvent_t* out) {
  return hipEventCreateWithFlags(reinterpret_cast<void**>(out), 0);
}
QD_EMU_EXPORT hipError_t hipGraphInstantiate(hipGraphExec_t* out, hipGraph_t g, hipGraphNode_t* error_node, char* log,
                                             std::size_t log_size) {
  if (error_node) *error_node = nullptr;
  if (log && log_size) *log = '\0';
  return guarded([&] { return gpu().instantiate_graph(g, reinterpret_cast<void**>(out)); });
}

// --- errors --------------------------------------------------------------------------------------------

QD_EMU_EXPORT const char* hipGetErrorName(hipError_t e) {
  const char* name = emu::result_name(emu::gpu_api::hip, e);
  return name ? name : "hipErrorUnknown";
}

QD_EMU_EXPORT const char* hipGetErrorString(hipError_t e) {
  const char* text = emu::result_text(emu::gpu_api::hip, e);
  return text ? text : "unknown error";
}

QD_EMU_EXPORT hipError_t hipGetLastError() {
  const hipError_t e = last_error;
  last_error = hip_success;
  return e;
}

QD_EMU_EXPORT hipError_t hipPeekAtLastError() { return last_error; }
