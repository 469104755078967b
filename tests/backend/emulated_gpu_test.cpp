// The emulated GPUs (emulation/, run as emulated_gpus/emulation): bad input fails as a
// driver fails it, with its result code, surfaced by the backend as a qd::driver_error --
// through the backend's own code where it can reach the case, else by calling the
// emulated API as a program would; and what the backends do not use yet works:
// hand-written kernels with parameters of several types, packed parameter buffers, 3-D
// grids, __syncthreads, streams and events, __trap and assert. What both APIs do alike
// is one case run for each (TEST_CASE_TEMPLATE). Without an emulated GPU each case
// reports itself skipped.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "backend/gpu_vendors.hpp"

namespace {

namespace qb = qd::backend;
namespace cu = qd::backend::cuda;
namespace hip = qd::backend::amdgpu;
using qb::gpu_vendor;

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

// --- both GPUs ---------------------------------------------------------------------------------

constexpr gpu_vendor other(gpu_vendor v) { return v == gpu_vendor::cuda ? gpu_vendor::amd : gpu_vendor::cuda; }
// A result's name as each vendor's driver spells it.
constexpr const char* result_name(gpu_vendor v, int code) {
  const bool cuda = v == gpu_vendor::cuda;
  switch (code) {
    case 1: return cuda ? "CUDA_ERROR_INVALID_VALUE" : "hipErrorInvalidValue";
    case 400: return cuda ? "CUDA_ERROR_INVALID_HANDLE" : "hipErrorInvalidHandle";
    case 701: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    case 719: return "hipErrorLaunchFailure";
    default: return "?";
  }
}
// What a block beyond __launch_bounds__ fails with: too many resources on CUDA, a launch failure on HIP.
constexpr int beyond_launch_bounds(gpu_vendor v) { return v == gpu_vendor::cuda ? 701 : 719; }

// A device through the backend (on CUDA it retains the primary context and makes it
// current), the emulated driver's entry points, and one module of hand-written kernels.
template <class V>
struct fixture {
  std::unique_ptr<qb::shared_library> lib = emulated(V::driver_library(), V::arch_name);
  std::unique_ptr<qb::device> device;
  const qb::gpu_driver_api<V::vendor>* driver = nullptr;
  qb::gpu_module module = nullptr;

  explicit operator bool() const { return lib != nullptr; }
  fixture() {
    if (!lib) return;
    device = V::make_device();
    driver = &V::driver();
    module = load(plain_kernels, "hand-written kernels");
  }
  ~fixture() {
    if (module) api().module_unload(module);
  }
  const qb::gpu_driver_api<V::vendor>& api() const { return *driver; }
  qb::gpu_module load(const char* source, const char* what) const {
    const auto code = V::compile(source, what);
    qb::gpu_module m = nullptr;
    QD_GPU_CALL(api(), module_load, &m, code.data());
    return m;
  }
  qb::gpu_function function(const char* name, qb::gpu_module from = nullptr) const {
    qb::gpu_function f = nullptr;
    QD_GPU_CALL(api(), module_function, &f, from ? from : module, name);
    return f;
  }
  template <class T>
  T* allocate(std::size_t count) const {
    return static_cast<T*>(device->allocate(count * sizeof(T)));
  }
};
using qd_test::on_amdgpu;
using qd_test::on_cuda;
using cuda_fixture = fixture<on_cuda>;
using hip_fixture = fixture<on_amdgpu>;

}  // namespace

TEST_CASE_TEMPLATE("emulated GPU: a kernel is compiled for the device's target, with its compiler's predefined macros",
                   V, on_cuda, on_amdgpu) {
  fixture<V> f;
  if (!f) return;
  int* p = f.template allocate<int>(1);
  void* args[] = {&p};
  QD_GPU_CALL(f.api(), launch, f.function("compiled_for"), 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr);
  int value = 0;
  f.device->copy_to_host(&value, p, sizeof(int));
  CHECK(value == (V::cuda ? 900 : 90));  // __CUDA_ARCH__ for sm_90; __gfx90a__ under hipRTC
  f.device->release(p);
}

TEST_CASE_TEMPLATE("emulated GPU: a copy beyond an allocation or through a freed pointer is a qd::driver_error", V,
                   on_cuda, on_amdgpu) {
  fixture<V> f;
  if (!f) return;
  std::vector<char> host(256, 7);
  auto* p = f.template allocate<char>(64);
  f.device->copy_from_host(p, host.data(), 64);  // exactly the allocation: fine
  f.device->copy_to_host(host.data(), p + 60, 4);
  auto expect_invalid = [](auto&& call) { expect_driver_error(call, 1, result_name(V::vendor, 1)); };
  expect_invalid([&] { f.device->copy_from_host(p, host.data(), 65); });
  expect_invalid([&] { f.device->copy_to_host(host.data(), p + 60, 5); });
  expect_invalid([&] { f.device->copy_to_host(host.data(), p - 8, 8); });
  f.device->release(p);
  expect_invalid([&] { f.device->copy_to_host(host.data(), p, 8); });  // use after free
  expect_invalid([&] { f.device->copy_from_host(p, host.data(), 8); });
  // Freeing what is not (or no longer) an allocation: the backend's release() ignores
  // the result, so the driver is asked directly.
  using api = qb::gpu_api<V::vendor>;
  CHECK(f.api().mem_free(api::to_device(p)) == 1);
  CHECK(f.api().mem_free(api::to_device(host.data())) == 1);
}

TEST_CASE_TEMPLATE("emulated GPU: too many threads per block, and a block beyond __launch_bounds__, fail the launch", V,
                   on_cuda, on_amdgpu) {
  fixture<V> f;
  if (!f) return;
  int* out = f.template allocate<int>(2048);
  void* args[] = {&out};
  const qb::gpu_function bounded = f.function("bounded");
  const int beyond = beyond_launch_bounds(V::vendor);
  CHECK(f.api().launch(bounded, 1, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr) == 0);
  CHECK(f.api().launch(bounded, 1, 1, 1, 2048, 1, 1, 0, nullptr, args, nullptr) == 1);  // > 1024: INVALID_VALUE
  CHECK(f.api().launch(bounded, 0, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr) == 1);   // an empty grid
  CHECK(f.api().launch(bounded, 1, 1, 1, 512, 1, 1, 0, nullptr, args, nullptr) == beyond);
  CHECK_THROWS_WITH_AS(QD_GPU_CALL(f.api(), launch, bounded, 2, 1, 1, 512, 1, 1, 0, nullptr, args, nullptr),
                       doctest::Contains(result_name(V::vendor, beyond)), qd::driver_error);
  f.device->release(out);
}

TEST_CASE_TEMPLATE("emulated GPU: an unloaded module and its functions are invalid handles", V, on_cuda, on_amdgpu) {
  fixture<V> f;
  if (!f) return;
  const qb::gpu_function add_one = f.function("add_one");
  int* x = f.template allocate<int>(4);
  void* args[] = {&x};
  QD_GPU_CALL(f.api(), launch, add_one, 1, 1, 1, 4, 1, 1, 0, nullptr, args, nullptr);
  QD_GPU_CALL(f.api(), module_unload, f.module);
  qb::gpu_function again = nullptr;
  CHECK(f.api().module_function(&again, f.module, "add_one") == 400);  // INVALID_HANDLE
  CHECK(f.api().launch(add_one, 1, 1, 1, 4, 1, 1, 0, nullptr, args, nullptr) == 400);
  CHECK(f.api().module_unload(f.module) == 400);
  CHECK_THROWS_WITH_AS(QD_GPU_CALL(f.api(), module_unload, f.module), doctest::Contains(result_name(V::vendor, 400)),
                       qd::driver_error);
  f.module = nullptr;
  f.device->release(x);
}

TEST_CASE_TEMPLATE("emulated GPU: a foreign, corrupt or wrong-target image is refused, an unknown name not found", V,
                   on_cuda, on_amdgpu) {
  fixture<V> f;
  if (!f) return;
  qb::gpu_module m = nullptr;
  const char elf[64] =
      "\x7f"
      "ELF not an emulated binary";
  CHECK(f.api().module_load(&m, elf) == 200);  // INVALID_IMAGE
  auto code = V::compile(plain_kernels, "kernels");
  code[code.size() / 2] ^= std::byte{0x5a};
  CHECK(f.api().module_load(&m, code.data()) == 200);
  const auto other_target = V::compile(plain_kernels, "kernels for another target", true);
  CHECK(f.api().module_load(&m, other_target.data()) == 209);  // NO_BINARY_FOR_GPU
  using other_gpu = qd_test::gpu_vendor_traits<other(V::vendor)>;
  const auto other_vendor = other_gpu::compile(plain_kernels, "the other GPU's kernels");
  CHECK(f.api().module_load(&m, other_vendor.data()) == 200);
  qb::gpu_function fn = nullptr;
  CHECK(f.api().module_function(&fn, f.module, "no_such_kernel") == 500);  // NOT_FOUND
}

TEST_CASE_TEMPLATE("emulated GPU: the threads of a block meet at __syncthreads", V, on_cuda, on_amdgpu) {
  fixture<V> f;
  if (!f) return;
  const qb::gpu_module m = f.load(barrier_kernel, "block_sum");
  const qb::gpu_function sum = f.function("block_sum", m);
  const unsigned blocks = 6;
  std::vector<int> in(blocks * 256);
  std::iota(in.begin(), in.end(), -300);
  int* din = f.template allocate<int>(in.size());
  int* dout = f.template allocate<int>(blocks);
  f.device->copy_from_host(din, in.data(), in.size() * sizeof(int));
  void* args[] = {&din, &dout};
  QD_GPU_CALL(f.api(), launch, sum, blocks, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr);
  std::vector<int> got(blocks);
  f.device->copy_to_host(got.data(), dout, blocks * sizeof(int));
  for (unsigned b = 0; b < blocks; ++b)
    CHECK(got[b] == std::accumulate(in.begin() + b * 256, in.begin() + (b + 1) * 256, 0));
  QD_GPU_CALL(f.api(), module_unload, m);
  f.device->release(din);
  f.device->release(dout);
}

TEST_CASE_TEMPLATE("emulated GPU: parameters of several types arrive through kernelParams and through a packed buffer",
                   V, on_cuda, on_amdgpu) {
  fixture<V> f;
  if (!f) return;
  const long long n = 1000;
  std::vector<float> hx(n), hy(n, 1.0f);
  for (long long i = 0; i < n; ++i) hx[static_cast<std::size_t>(i)] = static_cast<float>(i);
  float* x = f.template allocate<float>(n);
  float* y = f.template allocate<float>(n);
  f.device->copy_from_host(x, hx.data(), n * sizeof(float));
  f.device->copy_from_host(y, hy.data(), n * sizeof(float));
  float a = 2.0f;
  unsigned char bump = 3;
  void* args[] = {&x, &y, &a, const_cast<long long*>(&n), &bump};
  const qb::gpu_function mixed = f.function("mixed");
  QD_GPU_CALL(f.api(), launch, mixed, (n + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr);
  // The same call with the parameters packed at their alignments: 8, 8, 4, (pad) 8, 1.
  struct {
    float* x;
    float* y;
    float a;
    long long n;
    unsigned char bump;
  } packed{x, y, 0.5f, n, 0};
  std::size_t size = sizeof(packed);
  void* const end = reinterpret_cast<void*>(qb::gpu_api<V::vendor>::launch_param_end);
  void* extra[] = {qb::gpu_launch_buffer_pointer, &packed, qb::gpu_launch_buffer_size, &size, end};
  QD_GPU_CALL(f.api(), launch, mixed, (n + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, nullptr, extra);
  std::size_t too_small = 20;
  void* short_extra[] = {qb::gpu_launch_buffer_pointer, &packed, qb::gpu_launch_buffer_size, &too_small, end};
  CHECK(f.api().launch(mixed, 1, 1, 1, 128, 1, 1, 0, nullptr, nullptr, short_extra) == 1);
  CHECK(f.api().launch(mixed, 1, 1, 1, 128, 1, 1, 0, nullptr, args, extra) == 1);  // both at once
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

// --- CUDA ------------------------------------------------------------------------------------

// What the backends' device graph updates use (ping-pong buffers): a captured launch is
// the node its stream's capture last added, and an instantiated graph's kernel node takes
// a new launch in place (checked as a launch is); the graph it came from is unchanged.
TEST_CASE_TEMPLATE("emulated GPU: a captured launch's node is named, and takes new parameters in an instantiated graph",
                   V, on_cuda, on_amdgpu) {
  fixture<V> f;
  if (!f) return;
  const auto& api = f.api();
  qb::gpu_stream s = nullptr;
  QD_GPU_CALL(api, stream_create, &s, qb::gpu_stream_non_blocking);
  int* a = f.template allocate<int>(1);
  int* b = f.template allocate<int>(1);
  const int zero = 0;
  f.device->copy_from_host(a, &zero, sizeof(int));
  f.device->copy_from_host(b, &zero, sizeof(int));
  const qb::gpu_function add_one = f.function("add_one");
  void* on_a[] = {&a};
  void* on_b[] = {&b};
  int status = -1;
  unsigned long long id = 0;
  qb::gpu_graph captured = nullptr;
  const qb::gpu_graph_node* last = nullptr;
  std::size_t count = 7;
  QD_GPU_CALL(api, capture_info, s, &status, &id, &captured, &last, &count);
  CHECK(status == 0);
  CHECK(count == 0);
  QD_GPU_CALL(api, begin_capture, s, qb::gpu_capture_thread_local);
  qb::gpu_graph_node nodes[2] = {};
  for (qb::gpu_graph_node& node : nodes) {
    QD_GPU_CALL(api, launch, add_one, 1, 1, 1, 1, 1, 1, 0, s, on_a, nullptr);
    QD_GPU_CALL(api, capture_info, s, &status, &id, &captured, &last, &count);
    CHECK(status == 1);
    REQUIRE(count == 1);
    node = last[0];
  }
  CHECK(nodes[0] != nodes[1]);
  qb::gpu_graph graph = nullptr;
  QD_GPU_CALL(api, end_capture, s, &graph);
  qb::gpu_graph_exec exec = nullptr;
  QD_GPU_CALL(api, graph_instantiate, &exec, graph, 0);
  QD_GPU_CALL(api, graph_launch, exec, nullptr);  // a += 2
  using values = qb::gpu_api<V::vendor>;
  const auto to_b = values::kernel_node_of(add_one, 1, 1, on_b, nullptr);
  QD_GPU_CALL(api, exec_kernel_node_set_params, exec, nodes[1], &to_b);
  QD_GPU_CALL(api, graph_launch, exec, nullptr);                      // a += 1, b += 1
  CHECK(api.exec_kernel_node_set_params(exec, nullptr, &to_b) == 1);  // not a node of this graph
  const auto too_wide = values::kernel_node_of(add_one, 1, 4096, on_b, nullptr);
  CHECK(api.exec_kernel_node_set_params(exec, nodes[0], &too_wide) == 1);  // refused: the node is unchanged
  QD_GPU_CALL(api, graph_launch, exec, nullptr);                           // a += 1, b += 1
  qb::gpu_graph_exec fresh = nullptr;  // the captured graph still launches on a only
  QD_GPU_CALL(api, graph_instantiate, &fresh, graph, 0);
  QD_GPU_CALL(api, graph_launch, fresh, nullptr);  // a += 2
  int ha = 0, hb = 0;
  f.device->copy_to_host(&ha, a, sizeof(int));
  f.device->copy_to_host(&hb, b, sizeof(int));
  CHECK(ha == 6);
  CHECK(hb == 2);
  QD_GPU_CALL(api, graph_exec_destroy, fresh);
  QD_GPU_CALL(api, graph_exec_destroy, exec);
  QD_GPU_CALL(api, graph_destroy, graph);
  QD_GPU_CALL(api, stream_destroy, s);
  f.device->release(a);
  f.device->release(b);
}

TEST_CASE("emulated cuda: the device is an H200 (sm_90) with 8 SMs whose name says it is emulated") {
  cuda_fixture f;
  if (!f) return;
  char name[256] = {};
  QD_GPU_CALL(f.api(), device_name, name, sizeof(name), 0);
  CHECK(std::string(name) == "Quadrants emulated NVIDIA H200 (sm_90)");
  int major = 0, minor = 0, sms = 0;
  QD_GPU_CALL(f.api(), device_attribute, &major, cu::attribute_cc_major, 0);
  QD_GPU_CALL(f.api(), device_attribute, &minor, cu::attribute_cc_minor, 0);
  QD_GPU_CALL(f.api(), device_attribute, &sms, cu::attribute_multiprocessor_count, 0);
  CHECK(major * 10 + minor == 90);
  CHECK(sms == 8);  // an H200 has 132: every emulated thread runs on the host
  CHECK(f.device->target() == "sm_90");
  int value = 0;
  CHECK(f.api().device_attribute(&value, 100000, 0) == 1);  // an attribute no driver has: INVALID_VALUE
}

TEST_CASE("emulated cuda: a block's z beyond 64, a launch without parameters, and a full block's occupancy") {
  cuda_fixture f;
  if (!f) return;
  int* out = f.allocate<int>(2048);
  void* args[] = {&out};
  const qb::gpu_function bounded = f.function("bounded");
  CHECK(f.api().launch(bounded, 1, 1, 1, 1, 1, 65, 0, nullptr, args, nullptr) == 1);      // z > 64
  CHECK(f.api().launch(bounded, 1, 1, 1, 256, 1, 1, 0, nullptr, nullptr, nullptr) == 1);  // no parameters
  int occupancy = -1;
  QD_GPU_CALL(f.api(), occupancy_blocks_per_sm, &occupancy, bounded, 512, 0);
  CHECK(occupancy == 0);  // beyond __launch_bounds__
  QD_GPU_CALL(f.api(), occupancy_blocks_per_sm, &occupancy, bounded, 256, 0);
  CHECK(occupancy == 8);  // an H200 SM holds 2048 threads
  f.device->release(out);
}

TEST_CASE("emulated cuda: a thread without a current context is refused") {
  cuda_fixture f;
  if (!f) return;
  auto get_current = entry<qb::gpu_result (*)(qb::gpu_context*)>(*f.lib, "cuCtxGetCurrent");
  qb::gpu_context context = nullptr;
  REQUIRE(get_current(&context) == 0);
  REQUIRE(context != nullptr);
  QD_GPU_CALL(f.api(), context_set_current, nullptr);
  unsigned long long p = 0;
  CHECK(f.api().mem_alloc(&p, 64) == 201);  // CUDA_ERROR_INVALID_CONTEXT
  CHECK(f.api().synchronize() == 201);
  QD_GPU_CALL(f.api(), context_set_current, context);
  QD_GPU_CALL(f.api(), mem_alloc, &p, 64);
  QD_GPU_CALL(f.api(), mem_free, p);
}

TEST_CASE("emulated cuda: a 3-D grid of 3-D blocks gives every thread its own indices") {
  cuda_fixture f;
  if (!f) return;
  const unsigned gx = 3, gy = 2, gz = 2, bx = 4, by = 3, bz = 2;
  const unsigned total = gx * gy * gz * bx * by * bz;
  unsigned* out = f.allocate<unsigned>(total);
  void* args[] = {&out};
  QD_GPU_CALL(f.api(), launch, f.function("indices"), gx, gy, gz, bx, by, bz, 0, nullptr, args, nullptr);
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

TEST_CASE("emulated cuda: launches on two streams run at once; on one stream, in order; events mark them") {
  cuda_fixture f;
  if (!f) return;
  // What the backends do not call is asked of the library directly.
  using event_op = qb::gpu_result (*)(qb::gpu_event);
  using elapsed = qb::gpu_result (*)(float*, qb::gpu_event, qb::gpu_event);
  auto event_sync = entry<event_op>(*f.lib, "cuEventSynchronize");
  auto event_query = entry<event_op>(*f.lib, "cuEventQuery");
  auto time_between = entry<elapsed>(*f.lib, "cuEventElapsedTime");
  const cu::driver_api& api = f.api();
  qb::gpu_stream s1 = nullptr, s2 = nullptr;
  QD_GPU_CALL(api, stream_create, &s1, qb::gpu_stream_non_blocking);
  QD_GPU_CALL(api, stream_create, &s2, qb::gpu_stream_non_blocking);
  int* flag = f.allocate<int>(2);
  f.device->copy_from_host(flag, std::vector<int>{0, 0}.data(), 2 * sizeof(int));
  int* saw = flag + 1;
  qb::gpu_event start = nullptr, end = nullptr;
  QD_GPU_CALL(api, event_create, &start, 0);
  QD_GPU_CALL(api, event_create, &end, 0);
  QD_GPU_CALL(api, event_record, start, s1);
  void* wait_args[] = {&flag, &saw};
  void* set_args[] = {&flag};
  // The first waits for a flag only the second sets: one stream after the other would never end.
  QD_GPU_CALL(f.api(), launch, f.function("wait_for"), 1, 1, 1, 1, 1, 1, 0, s1, wait_args, nullptr);
  QD_GPU_CALL(f.api(), launch, f.function("set_flag"), 1, 1, 1, 1, 1, 1, 0, s2, set_args, nullptr);
  QD_GPU_CALL(api, event_record, end, s1);
  REQUIRE(event_sync(end) == 0);
  CHECK(event_query(end) == 0);
  float ms = -1.0f;
  REQUIRE(time_between(&ms, start, end) == 0);
  CHECK(ms >= 0.0f);
  int host[2] = {0, 0};
  f.device->copy_to_host(host, flag, sizeof(host));
  CHECK(host[1] == 1);
  // In order on one stream: eight increments of the same element.
  int* counter = f.allocate<int>(1);
  f.device->copy_from_host(counter, host, sizeof(int));  // host[0] == 1
  void* add_args[] = {&counter};
  for (int k = 0; k < 8; ++k)
    QD_GPU_CALL(f.api(), launch, f.function("add_one"), 1, 1, 1, 1, 1, 1, 0, s2, add_args, nullptr);
  QD_GPU_CALL(api, stream_synchronize, s2);
  f.device->copy_to_host(host, counter, sizeof(int));
  CHECK(host[0] == 9);
  QD_GPU_CALL(api, stream_destroy, s1);
  QD_GPU_CALL(api, stream_destroy, s2);
  CHECK(api.stream_destroy(s1) == 400);
  QD_GPU_CALL(api, event_destroy, start);
  QD_GPU_CALL(api, event_destroy, end);
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
  const cu::driver_api& api = f.api();
  qb::gpu_stream s = nullptr;
  QD_GPU_CALL(api, stream_create, &s, qb::gpu_stream_non_blocking);
  int* counter = f.allocate<int>(1);
  int host = 0;
  f.device->copy_from_host(counter, &host, sizeof(int));
  void* add_args[] = {&counter};
  // Capture records the launches without running them.
  CHECK(api.begin_capture(nullptr, qb::gpu_capture_thread_local) == 900);  // not the legacy stream
  qb::gpu_graph graph = nullptr;
  CHECK(api.end_capture(s, &graph) == 401);  // not capturing
  QD_GPU_CALL(api, begin_capture, s, qb::gpu_capture_thread_local);
  CHECK(api.begin_capture(s, qb::gpu_capture_thread_local) == 401);  // already capturing
  for (int k = 0; k < 3; ++k)
    QD_GPU_CALL(api, launch, f.function("add_one"), 1, 1, 1, 1, 1, 1, 0, s, add_args, nullptr);
  QD_GPU_CALL(api, end_capture, s, &graph);
  f.device->copy_to_host(&host, counter, sizeof(int));
  CHECK(host == 0);
  auto counts = entry<void (*)(unsigned long long*, unsigned long long*)>(*f.lib, "qd_emulated_graph_counts");
  unsigned long long instantiated = 0, launched = 0, instantiated_after = 0, launched_after = 0;
  counts(&instantiated, &launched);
  qb::gpu_graph_exec exec = nullptr;
  QD_GPU_CALL(api, graph_instantiate, &exec, graph, 0);
  QD_GPU_CALL(api, graph_destroy, graph);  // the executable graph keeps what it needs
  QD_GPU_CALL(api, graph_launch, exec, nullptr);
  QD_GPU_CALL(api, graph_launch, exec, s);
  QD_GPU_CALL(api, stream_synchronize, s);
  f.device->copy_to_host(&host, counter, sizeof(int));
  CHECK(host == 6);
  counts(&instantiated_after, &launched_after);
  CHECK(instantiated_after == instantiated + 1);
  CHECK(launched_after == launched + 2);
  QD_GPU_CALL(api, graph_exec_destroy, exec);
  CHECK(api.graph_exec_destroy(exec) == 400);

  // A WHILE node whose body counts down to zero; the default 1 runs it at least once.
  const auto cubin = cu::compile_cubin(count_down_kernel, cu::nvrtc_options{.sm = 90}, "count_down");
  qb::gpu_module m = nullptr;
  QD_GPU_CALL(api, module_load, &m, cubin.data());
  qb::gpu_function count_down = nullptr;
  QD_GPU_CALL(api, module_function, &count_down, m, "count_down");
  qb::gpu_context ctx = nullptr;
  REQUIRE(entry<qb::gpu_result (*)(qb::gpu_context*)>(*f.lib, "cuCtxGetCurrent")(&ctx) == 0);
  QD_GPU_CALL(api, graph_create, &graph, 0);
  qb::gpu_condition condition = 0;
  QD_GPU_CALL(api, condition_create, &condition, graph, ctx, 1, qb::gpu_conditional_assign_default);
  qb::gpu_graph_node_params p{};
  p.type = qb::gpu_graph_node_conditional;
  p.conditional.handle = condition;
  p.conditional.type = qb::gpu_conditional_while;
  p.conditional.size = 1;
  qb::gpu_graph body = nullptr;
  p.conditional.bodies_out = &body;
  p.conditional.context = ctx;
  qb::gpu_graph_node node = nullptr;
  QD_GPU_CALL(api, graph_add_node, &node, graph, nullptr, 0, &p);
  QD_GPU_CALL(api, begin_capture_to_graph, s, body, nullptr, nullptr, 0, qb::gpu_capture_thread_local);
  void* count_args[] = {&counter, &condition};
  QD_GPU_CALL(api, launch, count_down, 1, 1, 1, 1, 1, 1, 0, s, count_args, nullptr);
  qb::gpu_graph captured = nullptr;
  QD_GPU_CALL(api, end_capture, s, &captured);
  CHECK(captured == body);
  QD_GPU_CALL(api, graph_instantiate, &exec, graph, 0);
  for (const int start : {5, 1, 0}) {
    CAPTURE(start);
    host = start;
    f.device->copy_from_host(counter, &host, sizeof(int));
    QD_GPU_CALL(api, graph_launch, exec, nullptr);
    f.device->copy_to_host(&host, counter, sizeof(int));
    CHECK(host == (start > 0 ? 0 : -1));  // a do-while: the body ran once even from 0
  }
  QD_GPU_CALL(api, graph_exec_destroy, exec);
  QD_GPU_CALL(api, graph_destroy, graph);
  QD_GPU_CALL(api, module_unload, m);
  QD_GPU_CALL(api, stream_destroy, s);
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
  const char* host_call =
      "__host__ int host_only() { return 1; }\n"
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
  qb::gpu_module m = nullptr;
  QD_GPU_CALL(f.api(), module_load, &m, cubin.data());
  qb::gpu_function seven = nullptr, scale = nullptr, unmangled = nullptr;
  QD_GPU_CALL(f.api(), module_function, &seven, m, "seven");
  QD_GPU_CALL(f.api(), module_function, &scale, m, "_ZN7physics5scaleEPii");  // C++ linkage: the mangled name
  CHECK(f.api().module_function(&unmangled, m, "scale") == 500);
  int* p = f.allocate<int>(128);
  int by = 3;
  void* seven_args[] = {&p};
  void* scale_args[] = {&p, &by};
  QD_GPU_CALL(f.api(), launch, seven, 1, 1, 1, 128, 1, 1, 0, nullptr, seven_args, nullptr);
  QD_GPU_CALL(f.api(), launch, scale, 1, 1, 1, 128, 1, 1, 0, nullptr, scale_args, nullptr);
  CHECK(f.api().launch(scale, 1, 1, 1, 129, 1, 1, 0, nullptr, scale_args, nullptr) == 701);
  std::vector<int> got(128);
  f.device->copy_to_host(got.data(), p, 128 * sizeof(int));
  int wrong = 0;
  for (int i = 0; i < 128; ++i) wrong += got[static_cast<std::size_t>(i)] != 3 * (7 + i);
  CHECK(wrong == 0);
  QD_GPU_CALL(f.api(), module_unload, m);
  f.device->release(p);
}

TEST_CASE("emulated cuda: a failed device assert prints where and is CUDA_ERROR_ASSERT") {
  cuda_fixture f;
  if (!f) return;
  const char* source = "extern \"C\" __global__ void positive(const int* p) { assert(*p > 0); }\n";
  const auto cubin = cu::compile_cubin(source, cu::nvrtc_options{.sm = 90}, "assert");
  qb::gpu_module m = nullptr;
  QD_GPU_CALL(f.api(), module_load, &m, cubin.data());
  qb::gpu_function positive = nullptr;
  QD_GPU_CALL(f.api(), module_function, &positive, m, "positive");
  int* p = f.allocate<int>(1);
  int value = 5;
  f.device->copy_from_host(p, &value, sizeof(int));
  void* args[] = {&p};
  QD_GPU_CALL(f.api(), launch, positive, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr);
  value = -1;
  f.device->copy_from_host(p, &value, sizeof(int));
  CHECK(f.api().launch(positive, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr) == 710);
  CHECK(f.api().module_unload(m) == 710);  // sticky until the context goes
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
  CHECK(f.api().launch(f.function("trap_if"), 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr) == 715);
  unsigned long long q = 0;
  CHECK(f.api().mem_alloc(&q, 8) == 715);  // CUDA_ERROR_ILLEGAL_INSTRUCTION, sticky
  CHECK_THROWS_WITH_AS(f.device->copy_to_host(&one, p, sizeof(int)),
                       doctest::Contains("CUDA_ERROR_ILLEGAL_INSTRUCTION"), qd::driver_error);
  CHECK(f.api().module_unload(f.module) == 715);
  f.module = nullptr;
  f.device.reset();  // the last reference: the context goes, and its error with it
  auto fresh = cu::make_device({});
  int* r = static_cast<int*>(fresh->allocate(sizeof(int)));
  fresh->copy_from_host(r, &one, sizeof(int));
  fresh->release(r);
}

// --- AMD ---------------------------------------------------------------------------------------

TEST_CASE("emulated amdgpu: the device is an MI210 (gfx90a) whose name says it is emulated") {
  hip_fixture f;
  if (!f) return;
  std::vector<unsigned char> props(4096, 0);
  QD_GPU_CALL(f.api(), device_properties, props.data(), 0);
  CHECK(std::string(reinterpret_cast<const char*>(props.data())) == "Quadrants emulated AMD Instinct MI210 (gfx90a)");
  CHECK(std::string(reinterpret_cast<const char*>(props.data()) + 396) == "gfx90a:sramecc+:xnack-");  // gcnArchName
  CHECK(f.device->target() == "gfx90a:sramecc+:xnack-");
}

TEST_CASE("emulated amdgpu: a packed parameter buffer is read in HIP's order only") {
  hip_fixture f;
  if (!f) return;
  struct {
    float* x;
    float* y;
  } packed{nullptr, nullptr};
  std::size_t size = sizeof(packed);
  void* swapped[] = {qb::gpu_launch_buffer_size, &size, qb::gpu_launch_buffer_pointer, &packed,
                     reinterpret_cast<void*>(3)};
  CHECK(f.api().launch(f.function("mixed"), 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, swapped) == 1);
}

TEST_CASE("emulated amdgpu: hipMemcpy's direction is checked (the backend copies with hipMemcpyHtoD and DtoH)") {
  hip_fixture f;
  if (!f) return;
  auto copy = entry<qb::gpu_result (*)(void*, const void*, std::size_t, int)>(*f.lib, "hipMemcpy");
  std::vector<char> host(8, 1);
  CHECK(copy(host.data(), host.data() + 1, 4, 7) == 21);  // hipErrorInvalidMemcpyDirection
  CHECK(copy(host.data(), host.data() + 4, 4, 0) == 0);   // hipMemcpyHostToHost
}
