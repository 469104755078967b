// The emulated GPUs (emulation/, run as emulated_cuda/emulated_gpu and
// emulated_amdgpu/emulated_gpu): bad input fails as a driver fails it, with its result
// code, surfaced by the backend as a qd::driver_error -- through the backend's own code
// where it can reach the case, else by calling the emulated API as a program would;
// and what the backends do not use yet works: hand-written kernels with parameters of
// several types, packed parameter buffers, 3-D grids, __syncthreads, streams and events,
// __trap and assert. Without an emulated GPU each case reports itself skipped.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "quadrants/backend/amdgpu/device.hpp"
#include "quadrants/backend/amdgpu/hip.hpp"
#include "quadrants/backend/amdgpu/hiprtc.hpp"
#include "quadrants/backend/cuda/device.hpp"
#include "quadrants/backend/cuda/driver.hpp"
#include "quadrants/backend/cuda/nvrtc.hpp"
#include "quadrants/backend/shared_library.hpp"
#include "quadrants/base/error.hpp"

namespace {

namespace cu = qd::backend::cuda;
namespace hip = qd::backend::amdgpu;

// The library a variable names, if it is the emulation; else the case is skipped.
std::unique_ptr<qd::backend::shared_library> emulated(const qd::backend::library_search& search, const char* api) {
  std::unique_ptr<qd::backend::shared_library> lib;
  try {
    lib = std::make_unique<qd::backend::shared_library>(search);
  } catch (const qd::error& e) {
    const std::string why = std::string("skipped on ") + api + ": " + e.what();
    MESSAGE(why);
    return nullptr;
  }
  if (!lib->optional_symbol("qd_emulated_gpu_library")) {
    const std::string why = std::string("skipped on ") + api + ": " + lib->path() + " is not the emulation";
    MESSAGE(why);
    return nullptr;
  }
  return lib;
}

// The real compiler the emulated one checks programs with (its file), or empty.
std::string real_compiler(const qd::backend::library_search& search) {
  qd::backend::shared_library lib(search);
  auto f = reinterpret_cast<const char* (*)()>(lib.symbol("qd_emulation_real_compiler"));
  const char* path = f();
  return path ? path : "";
}

// `call` must throw a qd::driver_error with the driver's `code`, named in its message.
template <class Call>
void expect_driver_error(Call&& call, int code, const char* name) {
  try {
    call();
    FAIL("the emulated driver accepted it");
  } catch (const qd::driver_error& e) {
    CHECK(e.code() == code);
    CHECK(std::string(e.what()).find(name) != std::string::npos);
  }
}

template <class F>
F entry(const qd::backend::shared_library& lib, const char* name) {
  return reinterpret_cast<F>(lib.symbol(name));
}

// Kernels written by hand, as a program using the driver API would.
const char* const plain_kernels = R"(
extern "C" __global__ void __launch_bounds__(256) bounded(int* out) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}
extern "C" __global__ void mixed(const float* x, float* y, float a, long long n, unsigned char bump) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i] + bump;
}
extern "C" __global__ void indices(unsigned* out) {
  unsigned block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  unsigned thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  unsigned id = block * (blockDim.x * blockDim.y * blockDim.z) + thread;
  out[id] = blockIdx.x | blockIdx.y << 4 | blockIdx.z << 8 | threadIdx.x << 12 | threadIdx.y << 16 | threadIdx.z << 20;
}
extern "C" __global__ void wait_for(volatile int* flag, int* saw) {
  for (long long i = 0; i < 2000000000ll && *flag == 0; ++i) {
  }
  *saw = *flag;
}
extern "C" __global__ void set_flag(int* flag) { atomicExch(flag, 1); }
extern "C" __global__ void add_one(int* x) { x[threadIdx.x] += 1; }
extern "C" __global__ void compiled_for(int* p) {
#if defined(__CUDA_ARCH__)
  *p = __CUDA_ARCH__;
#elif defined(__gfx90a__) && defined(__HIP_DEVICE_COMPILE__)
  *p = 90;
#else
  *p = -1;
#endif
}
#ifdef __HIP__
#define STOP() abort()
#else
#define STOP() __trap()
#endif
extern "C" __global__ void trap_if(const int* p) { if (*p) STOP(); }
)";

// A block reduction in shared memory: every thread must meet the others at each barrier.
const char* const barrier_kernel = R"(
extern "C" __global__ void block_sum(const int* in, int* out) {
  __shared__ int partial[256];
  partial[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}
)";

// --- CUDA ------------------------------------------------------------------------------------

// A device through the backend (it retains the primary context and makes it current),
// the emulated driver's entry points, and one module of hand-written kernels.
struct cuda_fixture {
  std::unique_ptr<qd::backend::shared_library> lib = emulated(cu::driver_library(), "cuda");
  std::unique_ptr<qd::backend::device> device;
  const cu::driver_api* api = nullptr;
  cu::CUmodule module = nullptr;

  explicit operator bool() const { return lib != nullptr; }
  cuda_fixture() {
    if (!lib) return;
    device = cu::make_device({});
    api = &cu::driver();
    const auto cubin = cu::compile_cubin(plain_kernels, cu::nvrtc_options{.sm = 90}, "hand-written kernels");
    QD_CUDA_CHECK(api->cuModuleLoadData(&module, cubin.data()));
  }
  ~cuda_fixture() {
    if (module) api->cuModuleUnload(module);
  }
  cu::CUfunction function(const char* name) const {
    cu::CUfunction f = nullptr;
    QD_CUDA_CHECK(api->cuModuleGetFunction(&f, module, name));
    return f;
  }
  template <class T>
  T* allocate(std::size_t count) const {
    return static_cast<T*>(device->allocate(count * sizeof(T)));
  }
};

}  // namespace

TEST_CASE("emulated cuda: the device is an H200 (sm_90, 132 SMs) whose name says it is emulated") {
  cuda_fixture f;
  if (!f) return;
  char name[256] = {};
  QD_CUDA_CHECK(f.api->cuDeviceGetName(name, sizeof(name), 0));
  CHECK(std::string(name) == "Quadrants emulated NVIDIA H200 (sm_90)");
  int major = 0, minor = 0, sms = 0;
  QD_CUDA_CHECK(f.api->cuDeviceGetAttribute(&major, cu::attribute_cc_major, 0));
  QD_CUDA_CHECK(f.api->cuDeviceGetAttribute(&minor, cu::attribute_cc_minor, 0));
  QD_CUDA_CHECK(f.api->cuDeviceGetAttribute(&sms, cu::attribute_multiprocessor_count, 0));
  CHECK(major * 10 + minor == 90);
  CHECK(sms == 132);
  CHECK(f.device->target() == "sm_90");
  int value = 0;
  CHECK(f.api->cuDeviceGetAttribute(&value, 100000, 0) == 1);  // an attribute no driver has: INVALID_VALUE
  // The program was compiled for sm_90, with NVRTC's predefined macros.
  int* p = f.allocate<int>(1);
  void* args[] = {&p};
  QD_CUDA_CHECK(f.api->cuLaunchKernel(f.function("compiled_for"), 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  f.device->copy_to_host(&value, p, sizeof(int));
  CHECK(value == 900);
  f.device->release(p);
}

TEST_CASE("emulated cuda: a copy beyond an allocation or through a freed pointer is a qd::driver_error") {
  cuda_fixture f;
  if (!f) return;
  std::vector<char> host(256, 7);
  auto* p = f.allocate<char>(64);
  f.device->copy_from_host(p, host.data(), 64);  // exactly the allocation: fine
  f.device->copy_to_host(host.data(), p + 60, 4);
  auto expect_invalid = [](auto&& call) { expect_driver_error(call, 1, "CUDA_ERROR_INVALID_VALUE"); };
  expect_invalid([&] { f.device->copy_from_host(p, host.data(), 65); });
  expect_invalid([&] { f.device->copy_to_host(host.data(), p + 60, 5); });
  expect_invalid([&] { f.device->copy_to_host(host.data(), p - 8, 8); });
  f.device->release(p);
  expect_invalid([&] { f.device->copy_to_host(host.data(), p, 8); });  // use after free
  expect_invalid([&] { f.device->copy_from_host(p, host.data(), 8); });
  // Freeing what is not (or no longer) an allocation: the backend's release() ignores
  // the result, so the driver is asked directly.
  CHECK(f.api->cuMemFree(reinterpret_cast<cu::CUdeviceptr>(p)) == 1);
  CHECK(f.api->cuMemFree(reinterpret_cast<cu::CUdeviceptr>(host.data())) == 1);
}

TEST_CASE("emulated cuda: too many threads per block, and a block beyond __launch_bounds__, fail the launch") {
  cuda_fixture f;
  if (!f) return;
  int* out = f.allocate<int>(2048);
  void* args[] = {&out};
  const cu::CUfunction bounded = f.function("bounded");
  CHECK(f.api->cuLaunchKernel(bounded, 1, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr) == 0);
  CHECK(f.api->cuLaunchKernel(bounded, 1, 1, 1, 2048, 1, 1, 0, nullptr, args, nullptr) == 1);   // > 1024: INVALID_VALUE
  CHECK(f.api->cuLaunchKernel(bounded, 1, 1, 1, 1, 1, 65, 0, nullptr, args, nullptr) == 1);     // z > 64
  CHECK(f.api->cuLaunchKernel(bounded, 0, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr) == 1);    // an empty grid
  CHECK(f.api->cuLaunchKernel(bounded, 1, 1, 1, 512, 1, 1, 0, nullptr, args, nullptr) == 701);  // LAUNCH_OUT_OF_RESOURCES
  CHECK(f.api->cuLaunchKernel(bounded, 1, 1, 1, 256, 1, 1, 0, nullptr, nullptr, nullptr) == 1);  // no parameters
  CHECK_THROWS_WITH_AS(QD_CUDA_CHECK(f.api->cuLaunchKernel(bounded, 2, 1, 1, 512, 1, 1, 0, nullptr, args, nullptr)),
                       doctest::Contains("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"), qd::driver_error);
  int occupancy = -1;
  QD_CUDA_CHECK(f.api->cuOccupancyMaxActiveBlocksPerMultiprocessor(&occupancy, bounded, 512, 0));
  CHECK(occupancy == 0);
  f.device->release(out);
}

TEST_CASE("emulated cuda: an unloaded module and its functions are invalid handles") {
  cuda_fixture f;
  if (!f) return;
  const cu::CUfunction add_one = f.function("add_one");
  int* x = f.allocate<int>(4);
  void* args[] = {&x};
  QD_CUDA_CHECK(f.api->cuLaunchKernel(add_one, 1, 1, 1, 4, 1, 1, 0, nullptr, args, nullptr));
  QD_CUDA_CHECK(f.api->cuModuleUnload(f.module));
  cu::CUfunction again = nullptr;
  CHECK(f.api->cuModuleGetFunction(&again, f.module, "add_one") == 400);  // CUDA_ERROR_INVALID_HANDLE
  CHECK(f.api->cuLaunchKernel(add_one, 1, 1, 1, 4, 1, 1, 0, nullptr, args, nullptr) == 400);
  CHECK(f.api->cuModuleUnload(f.module) == 400);
  CHECK_THROWS_WITH_AS(QD_CUDA_CHECK(f.api->cuModuleUnload(f.module)), doctest::Contains("CUDA_ERROR_INVALID_HANDLE"),
                       qd::driver_error);
  f.module = nullptr;
  f.device->release(x);
}

TEST_CASE("emulated cuda: a foreign, corrupt or wrong-architecture image is refused, an unknown name not found") {
  cuda_fixture f;
  if (!f) return;
  cu::CUmodule m = nullptr;
  const char elf[64] = "\x7f" "ELF not an emulated CUBIN";
  CHECK(f.api->cuModuleLoadData(&m, elf) == 200);  // CUDA_ERROR_INVALID_IMAGE
  auto cubin = cu::compile_cubin(plain_kernels, cu::nvrtc_options{.sm = 90}, "kernels");
  cubin[cubin.size() / 2] ^= std::byte{0x5a};
  CHECK(f.api->cuModuleLoadData(&m, cubin.data()) == 200);
  const auto older = cu::compile_cubin(plain_kernels, cu::nvrtc_options{.sm = 80}, "kernels for sm_80");
  CHECK(f.api->cuModuleLoadData(&m, older.data()) == 209);  // CUDA_ERROR_NO_BINARY_FOR_GPU
  const auto code_object = hip::compile_code_object(plain_kernels, hip::hiprtc_options{}, "a HIP code object");
  CHECK(f.api->cuModuleLoadData(&m, code_object.data()) == 200);  // the emulated HIP's, not a CUBIN
  cu::CUfunction fn = nullptr;
  CHECK(f.api->cuModuleGetFunction(&fn, f.module, "no_such_kernel") == 500);  // CUDA_ERROR_NOT_FOUND
}

TEST_CASE("emulated cuda: a thread without a current context is refused") {
  cuda_fixture f;
  if (!f) return;
  auto get_current = entry<cu::CUresult (*)(cu::CUcontext*)>(*f.lib, "cuCtxGetCurrent");
  cu::CUcontext context = nullptr;
  QD_CUDA_CHECK(get_current(&context));
  REQUIRE(context != nullptr);
  QD_CUDA_CHECK(f.api->cuCtxSetCurrent(nullptr));
  cu::CUdeviceptr p = 0;
  CHECK(f.api->cuMemAlloc(&p, 64) == 201);  // CUDA_ERROR_INVALID_CONTEXT
  CHECK(f.api->cuCtxSynchronize() == 201);
  QD_CUDA_CHECK(f.api->cuCtxSetCurrent(context));
  QD_CUDA_CHECK(f.api->cuMemAlloc(&p, 64));
  QD_CUDA_CHECK(f.api->cuMemFree(p));
}

TEST_CASE("emulated cuda: parameters of several types arrive through kernelParams and through a packed buffer") {
  cuda_fixture f;
  if (!f) return;
  const long long n = 1000;
  std::vector<float> hx(n), hy(n, 1.0f);
  for (long long i = 0; i < n; ++i) hx[static_cast<std::size_t>(i)] = static_cast<float>(i);
  float* x = f.allocate<float>(n);
  float* y = f.allocate<float>(n);
  f.device->copy_from_host(x, hx.data(), n * sizeof(float));
  f.device->copy_from_host(y, hy.data(), n * sizeof(float));
  float a = 2.0f;
  unsigned char bump = 3;
  void* args[] = {&x, &y, &a, const_cast<long long*>(&n), &bump};
  const cu::CUfunction mixed = f.function("mixed");
  QD_CUDA_CHECK(f.api->cuLaunchKernel(mixed, (n + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr));
  // The same call with the parameters packed at their alignments: 8, 8, 4, (pad) 8, 1.
  struct {
    float* x;
    float* y;
    float a;
    long long n;
    unsigned char bump;
  } packed{x, y, 0.5f, n, 0};
  std::size_t size = sizeof(packed);
  void* extra[] = {reinterpret_cast<void*>(1), &packed, reinterpret_cast<void*>(2), &size, nullptr};
  QD_CUDA_CHECK(f.api->cuLaunchKernel(mixed, (n + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, nullptr, extra));
  std::size_t too_small = 20;
  void* short_extra[] = {reinterpret_cast<void*>(1), &packed, reinterpret_cast<void*>(2), &too_small, nullptr};
  CHECK(f.api->cuLaunchKernel(mixed, 1, 1, 1, 128, 1, 1, 0, nullptr, nullptr, short_extra) == 1);
  CHECK(f.api->cuLaunchKernel(mixed, 1, 1, 1, 128, 1, 1, 0, nullptr, args, extra) == 1);  // both at once
  f.device->copy_to_host(hy.data(), y, n * sizeof(float));
  int wrong = 0;
  for (long long i = 0; i < n; ++i) {
    const float first = 2.0f * static_cast<float>(i) + 1.0f + 3.0f;
    wrong += hy[static_cast<std::size_t>(i)] != 0.5f * static_cast<float>(i) + first;
  }
  CHECK(wrong == 0);
  f.device->release(x);
  f.device->release(y);
}

TEST_CASE("emulated cuda: a 3-D grid of 3-D blocks gives every thread its own indices") {
  cuda_fixture f;
  if (!f) return;
  const unsigned gx = 3, gy = 2, gz = 2, bx = 4, by = 3, bz = 2;
  const unsigned total = gx * gy * gz * bx * by * bz;
  unsigned* out = f.allocate<unsigned>(total);
  void* args[] = {&out};
  QD_CUDA_CHECK(f.api->cuLaunchKernel(f.function("indices"), gx, gy, gz, bx, by, bz, 0, nullptr, args, nullptr));
  std::vector<unsigned> got(total);
  f.device->copy_to_host(got.data(), out, total * sizeof(unsigned));
  int wrong = 0;
  for (unsigned z = 0; z < gz; ++z)
    for (unsigned y = 0; y < gy; ++y)
      for (unsigned x = 0; x < gx; ++x)
        for (unsigned tz = 0; tz < bz; ++tz)
          for (unsigned ty = 0; ty < by; ++ty)
            for (unsigned tx = 0; tx < bx; ++tx) {
              const unsigned id = ((z * gy + y) * gx + x) * (bx * by * bz) + (tz * by + ty) * bx + tx;
              wrong += got[id] != (x | y << 4 | z << 8 | tx << 12 | ty << 16 | tz << 20);
            }
  CHECK(wrong == 0);
  f.device->release(out);
}

TEST_CASE("emulated cuda: the threads of a block meet at __syncthreads") {
  cuda_fixture f;
  if (!f) return;
  const auto cubin = cu::compile_cubin(barrier_kernel, cu::nvrtc_options{.sm = 90}, "block_sum");
  cu::CUmodule m = nullptr;
  QD_CUDA_CHECK(f.api->cuModuleLoadData(&m, cubin.data()));
  cu::CUfunction sum = nullptr;
  QD_CUDA_CHECK(f.api->cuModuleGetFunction(&sum, m, "block_sum"));
  const unsigned blocks = 6;
  std::vector<int> in(blocks * 256);
  std::iota(in.begin(), in.end(), -300);
  int* din = f.allocate<int>(in.size());
  int* dout = f.allocate<int>(blocks);
  f.device->copy_from_host(din, in.data(), in.size() * sizeof(int));
  void* args[] = {&din, &dout};
  QD_CUDA_CHECK(f.api->cuLaunchKernel(sum, blocks, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  std::vector<int> got(blocks);
  f.device->copy_to_host(got.data(), dout, blocks * sizeof(int));
  for (unsigned b = 0; b < blocks; ++b)
    CHECK(got[b] == std::accumulate(in.begin() + b * 256, in.begin() + (b + 1) * 256, 0));
  QD_CUDA_CHECK(f.api->cuModuleUnload(m));
  f.device->release(din);
  f.device->release(dout);
}

TEST_CASE("emulated cuda: launches on two streams run at once; on one stream, in order; events mark them") {
  cuda_fixture f;
  if (!f) return;
  using stream_create = cu::CUresult (*)(cu::CUstream*, unsigned);
  using stream_op = cu::CUresult (*)(cu::CUstream);
  using event_create = cu::CUresult (*)(struct CUevent_st**, unsigned);
  using event_record = cu::CUresult (*)(struct CUevent_st*, cu::CUstream);
  using event_op = cu::CUresult (*)(struct CUevent_st*);
  using elapsed = cu::CUresult (*)(float*, struct CUevent_st*, struct CUevent_st*);
  auto create = entry<stream_create>(*f.lib, "cuStreamCreate");
  auto destroy = entry<stream_op>(*f.lib, "cuStreamDestroy_v2");
  auto synchronize = entry<stream_op>(*f.lib, "cuStreamSynchronize");
  auto new_event = entry<event_create>(*f.lib, "cuEventCreate");
  auto record = entry<event_record>(*f.lib, "cuEventRecord");
  auto event_sync = entry<event_op>(*f.lib, "cuEventSynchronize");
  auto event_query = entry<event_op>(*f.lib, "cuEventQuery");
  auto event_destroy = entry<event_op>(*f.lib, "cuEventDestroy_v2");
  auto time_between = entry<elapsed>(*f.lib, "cuEventElapsedTime");
  cu::CUstream s1 = nullptr, s2 = nullptr;
  QD_CUDA_CHECK(create(&s1, 1));  // CU_STREAM_NON_BLOCKING
  QD_CUDA_CHECK(create(&s2, 1));
  int* flag = f.allocate<int>(2);
  f.device->copy_from_host(flag, std::vector<int>{0, 0}.data(), 2 * sizeof(int));
  int* saw = flag + 1;
  struct CUevent_st *start = nullptr, *end = nullptr;
  QD_CUDA_CHECK(new_event(&start, 0));
  QD_CUDA_CHECK(new_event(&end, 0));
  QD_CUDA_CHECK(record(start, s1));
  void* wait_args[] = {&flag, &saw};
  void* set_args[] = {&flag};
  // The first waits for a flag only the second sets: one stream after the other would never end.
  QD_CUDA_CHECK(f.api->cuLaunchKernel(f.function("wait_for"), 1, 1, 1, 1, 1, 1, 0, s1, wait_args, nullptr));
  QD_CUDA_CHECK(f.api->cuLaunchKernel(f.function("set_flag"), 1, 1, 1, 1, 1, 1, 0, s2, set_args, nullptr));
  QD_CUDA_CHECK(record(end, s1));
  QD_CUDA_CHECK(event_sync(end));
  CHECK(event_query(end) == 0);
  float ms = -1.0f;
  QD_CUDA_CHECK(time_between(&ms, start, end));
  CHECK(ms >= 0.0f);
  int host[2] = {0, 0};
  f.device->copy_to_host(host, flag, sizeof(host));
  CHECK(host[1] == 1);
  // In order on one stream: eight increments of the same element.
  int* counter = f.allocate<int>(1);
  f.device->copy_from_host(counter, host, sizeof(int));  // host[0] == 1
  void* add_args[] = {&counter};
  for (int k = 0; k < 8; ++k)
    QD_CUDA_CHECK(f.api->cuLaunchKernel(f.function("add_one"), 1, 1, 1, 1, 1, 1, 0, s2, add_args, nullptr));
  QD_CUDA_CHECK(synchronize(s2));
  f.device->copy_to_host(host, counter, sizeof(int));
  CHECK(host[0] == 9);
  QD_CUDA_CHECK(destroy(s1));
  QD_CUDA_CHECK(destroy(s2));
  CHECK(destroy(s1) == 400);
  QD_CUDA_CHECK(event_destroy(start));
  QD_CUDA_CHECK(event_destroy(end));
  f.device->release(flag);
  f.device->release(counter);
}

// A kernel that ends a conditional WHILE node's body: counts down, then loops while non-zero.
const char* const count_down_kernel = R"(
typedef unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned int value);
extern "C" __global__ void count_down(int* n, cudaGraphConditionalHandle handle) {
  *n -= 1;
  cudaGraphSetConditional(handle, *n > 0 ? 1u : 0u);
}
)";

TEST_CASE("emulated cuda: captured launches replay in order; a WHILE node loops while its body sets the condition") {
  cuda_fixture f;
  if (!f) return;
  const cu::driver_api& api = *f.api;
  cu::CUstream s = nullptr;
  QD_CUDA_CHECK(api.cuStreamCreate(&s, cu::stream_non_blocking));
  int* counter = f.allocate<int>(1);
  int host = 0;
  f.device->copy_from_host(counter, &host, sizeof(int));
  void* add_args[] = {&counter};
  // Capture records the launches without running them.
  CHECK(api.cuStreamBeginCapture(nullptr, cu::capture_mode_thread_local) == 900);  // not the legacy stream
  cu::CUgraph graph = nullptr;
  CHECK(api.cuStreamEndCapture(s, &graph) == 401);  // not capturing
  QD_CUDA_CHECK(api.cuStreamBeginCapture(s, cu::capture_mode_thread_local));
  CHECK(api.cuStreamBeginCapture(s, cu::capture_mode_thread_local) == 401);  // already capturing
  for (int k = 0; k < 3; ++k)
    QD_CUDA_CHECK(api.cuLaunchKernel(f.function("add_one"), 1, 1, 1, 1, 1, 1, 0, s, add_args, nullptr));
  QD_CUDA_CHECK(api.cuStreamEndCapture(s, &graph));
  f.device->copy_to_host(&host, counter, sizeof(int));
  CHECK(host == 0);
  auto counts = entry<void (*)(unsigned long long*, unsigned long long*)>(*f.lib, "qd_emulated_graph_counts");
  unsigned long long instantiated = 0, launched = 0, instantiated_after = 0, launched_after = 0;
  counts(&instantiated, &launched);
  cu::CUgraphExec exec = nullptr;
  QD_CUDA_CHECK(api.cuGraphInstantiateWithFlags(&exec, graph, 0));
  QD_CUDA_CHECK(api.cuGraphDestroy(graph));  // the executable graph keeps what it needs
  QD_CUDA_CHECK(api.cuGraphLaunch(exec, nullptr));
  QD_CUDA_CHECK(api.cuGraphLaunch(exec, s));
  QD_CUDA_CHECK(api.cuStreamSynchronize(s));
  f.device->copy_to_host(&host, counter, sizeof(int));
  CHECK(host == 6);
  counts(&instantiated_after, &launched_after);
  CHECK(instantiated_after == instantiated + 1);
  CHECK(launched_after == launched + 2);
  QD_CUDA_CHECK(api.cuGraphExecDestroy(exec));
  CHECK(api.cuGraphExecDestroy(exec) == 400);

  // A WHILE node whose body counts down to zero; the default 1 runs it at least once.
  const auto cubin = cu::compile_cubin(count_down_kernel, cu::nvrtc_options{.sm = 90}, "count_down");
  cu::CUmodule m = nullptr;
  QD_CUDA_CHECK(api.cuModuleLoadData(&m, cubin.data()));
  cu::CUfunction count_down = nullptr;
  QD_CUDA_CHECK(api.cuModuleGetFunction(&count_down, m, "count_down"));
  cu::CUcontext ctx = nullptr;
  QD_CUDA_CHECK(entry<cu::CUresult (*)(cu::CUcontext*)>(*f.lib, "cuCtxGetCurrent")(&ctx));
  QD_CUDA_CHECK(api.cuGraphCreate(&graph, 0));
  cu::CUgraphConditionalHandle condition = 0;
  QD_CUDA_CHECK(api.cuGraphConditionalHandleCreate(&condition, graph, ctx, 1, cu::conditional_assign_default));
  cu::graph_node_params p{};
  p.type = cu::graph_node_type_conditional;
  p.conditional.handle = condition;
  p.conditional.type = cu::conditional_type_while;
  p.conditional.size = 1;
  cu::CUgraph body = nullptr;
  p.conditional.bodies_out = &body;
  p.conditional.context = ctx;
  cu::CUgraphNode node = nullptr;
  QD_CUDA_CHECK(api.cuGraphAddNode(&node, graph, nullptr, 0, &p));
  QD_CUDA_CHECK(api.cuStreamBeginCaptureToGraph(s, body, nullptr, nullptr, 0, cu::capture_mode_thread_local));
  void* count_args[] = {&counter, &condition};
  QD_CUDA_CHECK(api.cuLaunchKernel(count_down, 1, 1, 1, 1, 1, 1, 0, s, count_args, nullptr));
  cu::CUgraph captured = nullptr;
  QD_CUDA_CHECK(api.cuStreamEndCapture(s, &captured));
  CHECK(captured == body);
  QD_CUDA_CHECK(api.cuGraphInstantiateWithFlags(&exec, graph, 0));
  for (const int start : {5, 1, 0}) {
    CAPTURE(start);
    host = start;
    f.device->copy_from_host(counter, &host, sizeof(int));
    QD_CUDA_CHECK(api.cuGraphLaunch(exec, nullptr));
    f.device->copy_to_host(&host, counter, sizeof(int));
    CHECK(host == (start > 0 ? 0 : -1));  // a do-while: the body ran once even from 0
  }
  QD_CUDA_CHECK(api.cuGraphExecDestroy(exec));
  QD_CUDA_CHECK(api.cuGraphDestroy(graph));
  QD_CUDA_CHECK(api.cuModuleUnload(m));
  QD_CUDA_CHECK(api.cuStreamDestroy(s));
  f.device->release(counter);
}

TEST_CASE("emulated cuda: a source NVRTC rejects fails with NVRTC's log; one the emulation cannot build says so") {
  cuda_fixture f;
  if (!f) return;
  const std::string real = real_compiler(cu::nvrtc_library());
  if (real.empty()) {
    MESSAGE("the real NVRTC is not installed: the emulated NVRTC checks nothing with it");
    return;
  }
  // Valid C++ for the host compiler, but device code may not call a __host__ function.
  const char* host_call = "__host__ int host_only() { return 1; }\n"
                          "extern \"C\" __global__ void k(int* p) { *p = host_only(); }\n";
  try {
    cu::compile_cubin(host_call, cu::nvrtc_options{.sm = 90}, "kernel 'k'");
    FAIL("a __global__ function calling a __host__ function compiled");
  } catch (const qd::compile_error& e) {
    CHECK(e.log().find("host_only") != std::string::npos);
    CHECK(e.log().find("__host__") != std::string::npos);  // NVRTC's words, not the host compiler's
  }
  // NVRTC knows the warp shuffles; the emulated device does not (yet).
  const char* shuffle = "extern \"C\" __global__ void k(int* p) { *p = __shfl_down_sync(0xffffffffu, *p, 1); }\n";
  CHECK_THROWS_WITH_AS(cu::compile_cubin(shuffle, cu::nvrtc_options{.sm = 90}, "kernel 'k'"),
                       doctest::Contains("NVRTC accepted this program, but the emulation"), qd::compile_error);
}

TEST_CASE("emulated cuda: kernels in namespaces and extern \"C\" blocks are found by their symbol names") {
  cuda_fixture f;
  if (!f) return;
  const char* source = R"(
namespace physics {
__global__ void __launch_bounds__(128, 2) scale(int* p, int by) { p[threadIdx.x] *= by; }
}
extern "C" {
__global__ void seven(int* p) { p[threadIdx.x] = 7 + (int)threadIdx.x; }
}
)";
  const auto cubin = cu::compile_cubin(source, cu::nvrtc_options{.sm = 90}, "namespaced kernels");
  cu::CUmodule m = nullptr;
  QD_CUDA_CHECK(f.api->cuModuleLoadData(&m, cubin.data()));
  cu::CUfunction seven = nullptr, scale = nullptr, unmangled = nullptr;
  QD_CUDA_CHECK(f.api->cuModuleGetFunction(&seven, m, "seven"));
  QD_CUDA_CHECK(f.api->cuModuleGetFunction(&scale, m, "_ZN7physics5scaleEPii"));  // C++ linkage: the mangled name
  CHECK(f.api->cuModuleGetFunction(&unmangled, m, "scale") == 500);
  int* p = f.allocate<int>(128);
  int by = 3;
  void* seven_args[] = {&p};
  void* scale_args[] = {&p, &by};
  QD_CUDA_CHECK(f.api->cuLaunchKernel(seven, 1, 1, 1, 128, 1, 1, 0, nullptr, seven_args, nullptr));
  QD_CUDA_CHECK(f.api->cuLaunchKernel(scale, 1, 1, 1, 128, 1, 1, 0, nullptr, scale_args, nullptr));
  CHECK(f.api->cuLaunchKernel(scale, 1, 1, 1, 129, 1, 1, 0, nullptr, scale_args, nullptr) == 701);
  std::vector<int> got(128);
  f.device->copy_to_host(got.data(), p, 128 * sizeof(int));
  int wrong = 0;
  for (int i = 0; i < 128; ++i) wrong += got[static_cast<std::size_t>(i)] != 3 * (7 + i);
  CHECK(wrong == 0);
  QD_CUDA_CHECK(f.api->cuModuleUnload(m));
  f.device->release(p);
}

TEST_CASE("emulated cuda: a failed device assert prints where and is CUDA_ERROR_ASSERT") {
  cuda_fixture f;
  if (!f) return;
  const char* source = "extern \"C\" __global__ void positive(const int* p) { assert(*p > 0); }\n";
  const auto cubin = cu::compile_cubin(source, cu::nvrtc_options{.sm = 90}, "assert");
  cu::CUmodule m = nullptr;
  QD_CUDA_CHECK(f.api->cuModuleLoadData(&m, cubin.data()));
  cu::CUfunction positive = nullptr;
  QD_CUDA_CHECK(f.api->cuModuleGetFunction(&positive, m, "positive"));
  int* p = f.allocate<int>(1);
  int value = 5;
  f.device->copy_from_host(p, &value, sizeof(int));
  void* args[] = {&p};
  QD_CUDA_CHECK(f.api->cuLaunchKernel(positive, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
  value = -1;
  f.device->copy_from_host(p, &value, sizeof(int));
  CHECK(f.api->cuLaunchKernel(positive, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr) == 710);
  CHECK(f.api->cuModuleUnload(m) == 710);  // sticky until the context goes
  f.device.reset();
  f.module = nullptr;
}

TEST_CASE("emulated cuda: __trap fails the launch and poisons the context until it is released") {
  cuda_fixture f;
  if (!f) return;
  int* p = f.allocate<int>(1);
  int one = 1;
  f.device->copy_from_host(p, &one, sizeof(int));
  void* args[] = {&p};
  CHECK(f.api->cuLaunchKernel(f.function("trap_if"), 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr) == 715);
  cu::CUdeviceptr q = 0;
  CHECK(f.api->cuMemAlloc(&q, 8) == 715);  // CUDA_ERROR_ILLEGAL_INSTRUCTION, sticky
  CHECK_THROWS_WITH_AS(f.device->copy_to_host(&one, p, sizeof(int)), doctest::Contains("CUDA_ERROR_ILLEGAL_INSTRUCTION"),
                       qd::driver_error);
  CHECK(f.api->cuModuleUnload(f.module) == 715);
  f.module = nullptr;
  f.device.reset();  // the last reference: the context goes, and its error with it
  auto fresh = cu::make_device({});
  int* r = static_cast<int*>(fresh->allocate(sizeof(int)));
  fresh->copy_from_host(r, &one, sizeof(int));
  fresh->release(r);
}

// --- AMD ---------------------------------------------------------------------------------------

namespace {

struct hip_fixture {
  std::unique_ptr<qd::backend::shared_library> lib = emulated(hip::hip_library(), "amdgpu");
  std::unique_ptr<qd::backend::device> device;
  const hip::hip_api* api = nullptr;
  hip::hipModule_t module = nullptr;

  explicit operator bool() const { return lib != nullptr; }
  hip_fixture() {
    if (!lib) return;
    device = hip::make_device({});
    api = &hip::hip();
    const auto code = hip::compile_code_object(plain_kernels, hip::hiprtc_options{.arch = "gfx90a:sramecc+:xnack-"},
                                               "hand-written kernels");
    QD_HIP_CHECK(api->hipModuleLoadData(&module, code.data()));
  }
  ~hip_fixture() {
    if (module) api->hipModuleUnload(module);
  }
  hip::hipFunction_t function(const char* name) const {
    hip::hipFunction_t f = nullptr;
    QD_HIP_CHECK(api->hipModuleGetFunction(&f, module, name));
    return f;
  }
};

}  // namespace

TEST_CASE("emulated amdgpu: the device is an MI210 (gfx90a) whose name says it is emulated") {
  hip_fixture f;
  if (!f) return;
  std::vector<unsigned char> props(4096, 0);
  QD_HIP_CHECK(f.api->hipGetDeviceProperties(props.data(), 0));
  CHECK(std::string(reinterpret_cast<const char*>(props.data())) == "Quadrants emulated AMD Instinct MI210 (gfx90a)");
  CHECK(std::string(reinterpret_cast<const char*>(props.data()) + 396) == "gfx90a:sramecc+:xnack-");  // gcnArchName
  CHECK(f.device->target() == "gfx90a:sramecc+:xnack-");
  // The program was compiled for gfx90a, with hipRTC's predefined macros.
  auto* p = static_cast<int*>(f.device->allocate(sizeof(int)));
  void* args[] = {&p};
  QD_HIP_CHECK(f.api->hipModuleLaunchKernel(f.function("compiled_for"), 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  int value = 0;
  f.device->copy_to_host(&value, p, sizeof(int));
  CHECK(value == 90);
  f.device->release(p);
}

TEST_CASE("emulated amdgpu: a copy beyond an allocation or through a freed pointer is a qd::driver_error") {
  hip_fixture f;
  if (!f) return;
  std::vector<char> host(256, 7);
  auto* p = static_cast<char*>(f.device->allocate(64));
  f.device->copy_from_host(p, host.data(), 64);
  auto expect_invalid = [](auto&& call) { expect_driver_error(call, 1, "hipErrorInvalidValue"); };
  expect_invalid([&] { f.device->copy_from_host(p, host.data(), 65); });
  expect_invalid([&] { f.device->copy_to_host(host.data(), p + 32, 40); });
  f.device->release(p);
  expect_invalid([&] { f.device->copy_to_host(host.data(), p, 8); });
  CHECK(f.api->hipFree(p) == 1);
  CHECK(f.api->hipMemcpy(host.data(), host.data() + 1, 4, 7) == 21);  // hipErrorInvalidMemcpyDirection
}

TEST_CASE("emulated amdgpu: too many threads, a block beyond __launch_bounds__ and an unloaded module fail as HIP fails") {
  hip_fixture f;
  if (!f) return;
  int* out = static_cast<int*>(f.device->allocate(2048 * sizeof(int)));
  void* args[] = {&out};
  const hip::hipFunction_t bounded = f.function("bounded");
  CHECK(f.api->hipModuleLaunchKernel(bounded, 1, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr) == 0);
  CHECK(f.api->hipModuleLaunchKernel(bounded, 1, 1, 1, 2048, 1, 1, 0, nullptr, args, nullptr) == 1);
  CHECK(f.api->hipModuleLaunchKernel(bounded, 1, 1, 1, 512, 1, 1, 0, nullptr, args, nullptr) == 719);
  CHECK_THROWS_WITH_AS(QD_HIP_CHECK(f.api->hipModuleLaunchKernel(bounded, 1, 1, 1, 512, 1, 1, 0, nullptr, args, nullptr)),
                       doctest::Contains("hipErrorLaunchFailure"), qd::driver_error);
  QD_HIP_CHECK(f.api->hipModuleUnload(f.module));
  hip::hipFunction_t again = nullptr;
  CHECK(f.api->hipModuleGetFunction(&again, f.module, "bounded") == 400);
  CHECK(f.api->hipModuleLaunchKernel(bounded, 1, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr) == 400);
  f.module = nullptr;
  f.device->release(out);
}

TEST_CASE("emulated amdgpu: a packed parameter buffer of several types, and code objects for another target") {
  hip_fixture f;
  if (!f) return;
  const long long n = 300;
  std::vector<float> hx(n), hy(n, 1.0f);
  for (long long i = 0; i < n; ++i) hx[static_cast<std::size_t>(i)] = static_cast<float>(i);
  auto* x = static_cast<float*>(f.device->allocate(n * sizeof(float)));
  auto* y = static_cast<float*>(f.device->allocate(n * sizeof(float)));
  f.device->copy_from_host(x, hx.data(), n * sizeof(float));
  f.device->copy_from_host(y, hy.data(), n * sizeof(float));
  struct {
    float* x;
    float* y;
    float a;
    long long n;
    unsigned char bump;
  } packed{x, y, 3.0f, n, 2};
  std::size_t size = sizeof(packed);
  void* config[] = {reinterpret_cast<void*>(1), &packed, reinterpret_cast<void*>(2), &size, reinterpret_cast<void*>(3)};
  QD_HIP_CHECK(f.api->hipModuleLaunchKernel(f.function("mixed"), 5, 1, 1, 64, 1, 1, 0, nullptr, nullptr, config));
  f.device->copy_to_host(hy.data(), y, n * sizeof(float));
  int wrong = 0;
  for (long long i = 0; i < n; ++i) wrong += hy[static_cast<std::size_t>(i)] != 3.0f * static_cast<float>(i) + 1.0f + 2.0f;
  CHECK(wrong == 0);
  void* bad_config[] = {reinterpret_cast<void*>(2), &size, reinterpret_cast<void*>(1), &packed, reinterpret_cast<void*>(3)};
  CHECK(f.api->hipModuleLaunchKernel(f.function("mixed"), 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, bad_config) == 1);
  const auto other = hip::compile_code_object(plain_kernels, hip::hiprtc_options{.arch = "gfx908"}, "kernels for gfx908");
  hip::hipModule_t m = nullptr;
  CHECK(f.api->hipModuleLoadData(&m, other.data()) == 209);  // hipErrorNoBinaryForGpu
  const auto cubin = cu::compile_cubin(plain_kernels, cu::nvrtc_options{.sm = 90}, "a CUBIN");
  CHECK(f.api->hipModuleLoadData(&m, cubin.data()) == 200);  // the emulated CUDA's: hipErrorInvalidImage
  f.device->release(x);
  f.device->release(y);
}

TEST_CASE("emulated amdgpu: the threads of a block meet at __syncthreads") {
  hip_fixture f;
  if (!f) return;
  const auto code = hip::compile_code_object(barrier_kernel, hip::hiprtc_options{.arch = "gfx90a"}, "block_sum");
  hip::hipModule_t m = nullptr;
  QD_HIP_CHECK(f.api->hipModuleLoadData(&m, code.data()));
  hip::hipFunction_t sum = nullptr;
  QD_HIP_CHECK(f.api->hipModuleGetFunction(&sum, m, "block_sum"));
  std::vector<int> in(2 * 256);
  std::iota(in.begin(), in.end(), 5);
  auto* din = static_cast<int*>(f.device->allocate(in.size() * sizeof(int)));
  auto* dout = static_cast<int*>(f.device->allocate(2 * sizeof(int)));
  f.device->copy_from_host(din, in.data(), in.size() * sizeof(int));
  void* args[] = {&din, &dout};
  QD_HIP_CHECK(f.api->hipModuleLaunchKernel(sum, 2, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  int got[2] = {0, 0};
  f.device->copy_to_host(got, dout, sizeof(got));
  CHECK(got[0] == std::accumulate(in.begin(), in.begin() + 256, 0));
  CHECK(got[1] == std::accumulate(in.begin() + 256, in.end(), 0));
  QD_HIP_CHECK(f.api->hipModuleUnload(m));
  f.device->release(din);
  f.device->release(dout);
}
