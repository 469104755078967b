/* The device built-ins of CUDA and HIP for the host compiler: qualifiers, thread
   indices, atomics, bit casts, math, printf, __syncthreads. Force-included (after
   abi.h) into every translation unit the emulated NVRTC or hipRTC compiles; QD_EMU_CUDA
   or QD_EMU_HIP and QD_EMU_WARP_SIZE come from the command line. No #include: the
   host's headers cost ~100 ms a compile, and device code may not see them anyway. */

/* --- qualifiers ----------------------------------------------------------------- */
#define __global__ __attribute__((visibility("default")))
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __grid_constant__
#define __launch_bounds__(...)
#define __constant__
#define __managed__
#define __restrict__ __restrict
/* Shared memory is per block; a block runs on one host thread from start to end. */
#define __shared__ static thread_local

typedef __SIZE_TYPE__ size_t;

/* --- thread indices --------------------------------------------------------------- */
typedef struct qd_emu_dim uint3;
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return {x, y, z}; }
};
static inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return {x, y, z}; }

/* The thread running on this host thread (or fiber; __syncthreads restores it). Read
   through qd_emu_slot(): a call the compiler may hoist out of loops (const: its value,
   the slot's address, is fixed for a host thread), where an inlined thread-local access
   of a dlopen'ed module costs a __tls_get_addr call in every emulated thread. */
static thread_local qd_emu_thread* qd_emu_self_slot;
__attribute__((const, noinline)) static qd_emu_thread** qd_emu_slot() { return &qd_emu_self_slot; }
#define qd_emu_self (*qd_emu_slot())
#define threadIdx (qd_emu_self->thread_idx)
#define blockIdx (qd_emu_self->block_idx)
#define blockDim (qd_emu_self->block_dim)
#define gridDim (qd_emu_self->grid_dim)
#define warpSize QD_EMU_WARP_SIZE
#ifdef QD_EMU_HIP
#define hipThreadIdx_x (threadIdx.x)
#define hipThreadIdx_y (threadIdx.y)
#define hipThreadIdx_z (threadIdx.z)
#define hipBlockIdx_x (blockIdx.x)
#define hipBlockIdx_y (blockIdx.y)
#define hipBlockIdx_z (blockIdx.z)
#define hipBlockDim_x (blockDim.x)
#define hipBlockDim_y (blockDim.y)
#define hipBlockDim_z (blockDim.z)
#define hipGridDim_x (gridDim.x)
#define hipGridDim_y (gridDim.y)
#define hipGridDim_z (gridDim.z)
#endif

static inline void __syncthreads() {
  qd_emu_thread* self = qd_emu_self;
  self->sync(self);
  qd_emu_self = self; /* other fibers ran on this host thread meanwhile */
}
[[noreturn]] static inline void __trap() {
  qd_emu_thread* self = qd_emu_self;
  self->trap(self, 1);
  __builtin_unreachable();
}
#ifdef QD_EMU_HIP
#define abort() __trap() /* HIP's device abort */
#endif
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
template <class T>
static inline T __ldg(const T* p) {
  return *p;
}

/* --- CUDA graphs: a conditional node's condition ------------------------------------ */
#ifdef QD_EMU_CUDA
typedef unsigned long long cudaGraphConditionalHandle;
/* The emulated driver's handle is the address of the condition's value (core/graphs.hpp). */
extern "C" inline void cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned value) {
  __atomic_store_n(reinterpret_cast<unsigned*>(handle), value, __ATOMIC_RELEASE);
}
#endif

/* --- host functions device code may call ------------------------------------------ */
extern "C" int printf(const char*, ...);
extern "C" void* malloc(size_t) noexcept;
extern "C" void free(void*) noexcept;
extern "C" void* memcpy(void*, const void*, size_t) noexcept;
extern "C" void* memset(void*, int, size_t) noexcept;

[[noreturn]] static inline void qd_emu_assert_fail(const char* what, const char* file, int line) {
  qd_emu_thread* self = qd_emu_self;
  printf("%s:%d: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.\n", file, line, self->block_idx.x,
         self->block_idx.y, self->block_idx.z, self->thread_idx.x, self->thread_idx.y, self->thread_idx.z, what);
  self->trap(self, 2);
  __builtin_unreachable();
}
#ifndef assert
#define assert(e) ((e) ? (void)0 : qd_emu_assert_fail(#e, __FILE__, __LINE__))
#endif

/* --- bit casts and bit operations --------------------------------------------------- */
template <class To, class From>
static inline To qd_emu_bits(From v) {
  static_assert(sizeof(To) == sizeof(From), "a bit cast keeps the size");
  To t;
  __builtin_memcpy(&t, &v, sizeof(To));
  return t;
}
static inline float __int_as_float(int v) { return qd_emu_bits<float>(v); }
static inline float __uint_as_float(unsigned v) { return qd_emu_bits<float>(v); }
static inline int __float_as_int(float v) { return qd_emu_bits<int>(v); }
static inline unsigned __float_as_uint(float v) { return qd_emu_bits<unsigned>(v); }
static inline double __longlong_as_double(long long v) { return qd_emu_bits<double>(v); }
static inline long long __double_as_longlong(double v) { return qd_emu_bits<long long>(v); }
static inline int __double2hiint(double v) { return (int)(qd_emu_bits<unsigned long long>(v) >> 32); }
static inline int __double2loint(double v) { return (int)qd_emu_bits<unsigned long long>(v); }
static inline double __hiloint2double(int hi, int lo) {
  return qd_emu_bits<double>(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo);
}
static inline int __popc(unsigned v) { return __builtin_popcount(v); }
static inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
static inline int __clz(int v) { return v == 0 ? 32 : __builtin_clz((unsigned)v); }
static inline int __clzll(long long v) { return v == 0 ? 64 : __builtin_clzll((unsigned long long)v); }
static inline int __ffs(int v) { return __builtin_ffs(v); }
static inline int __ffsll(long long v) { return __builtin_ffsll(v); }
static inline unsigned __brev(unsigned v) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i, v >>= 1) r = (r << 1) | (v & 1u);
  return r;
}
static inline long long clock64() {
#if defined(__x86_64__) || defined(__i386__)
  return (long long)__builtin_ia32_rdtsc();
#else
  return 0;
#endif
}

/* --- atomics (relaxed, device scope: what CUDA's and HIP's are) ---------------------- */
#define QD_EMU_ATOMIC_RMW(T)                                                                                \
  static inline T atomicAdd(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }               \
  static inline T atomicSub(T* p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }               \
  static inline T atomicExch(T* p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }             \
  static inline T atomicAnd(T* p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }               \
  static inline T atomicOr(T* p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }                 \
  static inline T atomicXor(T* p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); }               \
  static inline T atomicCAS(T* p, T expected, T desired) {                                                  \
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);          \
    return expected;                                                                                        \
  }                                                                                                         \
  static inline T atomicMin(T* p, T v) {                                                                    \
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                                           \
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) { \
    }                                                                                                       \
    return old;                                                                                             \
  }                                                                                                         \
  static inline T atomicMax(T* p, T v) {                                                                    \
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                                           \
    while (v > old && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) { \
    }                                                                                                       \
    return old;                                                                                             \
  }
QD_EMU_ATOMIC_RMW(int)
QD_EMU_ATOMIC_RMW(unsigned int)
QD_EMU_ATOMIC_RMW(long long)
QD_EMU_ATOMIC_RMW(unsigned long long)
#undef QD_EMU_ATOMIC_RMW
static inline unsigned short atomicCAS(unsigned short* p, unsigned short expected, unsigned short desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expected;
}
static inline unsigned atomicInc(unsigned* p, unsigned limit) {
  unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (
      !__atomic_compare_exchange_n(p, &old, old >= limit ? 0u : old + 1u, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
static inline unsigned atomicDec(unsigned* p, unsigned limit) {
  unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(p, &old, (old == 0u || old > limit) ? limit : old - 1u, true, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
  }
  return old;
}
/* Floating-point read-modify-writes: compare-and-swap on the bits. */
template <class F, class U, class Op>
static inline F qd_emu_atomic_float(F* p, Op op) {
  U* q = (U*)p;
  U old = __atomic_load_n(q, __ATOMIC_RELAXED), desired;
  F value;
  do {
    value = qd_emu_bits<F>(old);
    desired = qd_emu_bits<U>(op(value));
  } while (!__atomic_compare_exchange_n(q, &old, desired, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return value;
}
static inline float atomicAdd(float* p, float v) {
  return qd_emu_atomic_float<float, unsigned>(p, [v](float o) { return o + v; });
}
static inline double atomicAdd(double* p, double v) {
  return qd_emu_atomic_float<double, unsigned long long>(p, [v](double o) { return o + v; });
}
static inline float atomicExch(float* p, float v) {
  return qd_emu_bits<float>(__atomic_exchange_n((unsigned*)p, qd_emu_bits<unsigned>(v), __ATOMIC_RELAXED));
}

/* --- math: the C library's functions, and CUDA's float overloads and intrinsics ------ */
#define QD_EMU_MATH1(name)                  \
  extern "C" double name(double) noexcept;  \
  extern "C" float name##f(float) noexcept; \
  static inline float name(float x) { return name##f(x); }
#define QD_EMU_MATH2(name)                         \
  extern "C" double name(double, double) noexcept; \
  extern "C" float name##f(float, float) noexcept; \
  static inline float name(float x, float y) { return name##f(x, y); }
QD_EMU_MATH1(sqrt)
QD_EMU_MATH1(cbrt)
QD_EMU_MATH1(exp)
QD_EMU_MATH1(exp2)
QD_EMU_MATH1(expm1)
QD_EMU_MATH1(log)
QD_EMU_MATH1(log2)
QD_EMU_MATH1(log10)
QD_EMU_MATH1(log1p)
QD_EMU_MATH1(sin)
QD_EMU_MATH1(cos)
QD_EMU_MATH1(tan)
QD_EMU_MATH1(asin)
QD_EMU_MATH1(acos)
QD_EMU_MATH1(atan)
QD_EMU_MATH1(sinh)
QD_EMU_MATH1(cosh)
QD_EMU_MATH1(tanh)
QD_EMU_MATH1(erf)
QD_EMU_MATH1(fabs)
QD_EMU_MATH1(floor)
QD_EMU_MATH1(ceil)
QD_EMU_MATH1(trunc)
QD_EMU_MATH1(round)
QD_EMU_MATH1(rint)
QD_EMU_MATH2(pow)
QD_EMU_MATH2(atan2)
QD_EMU_MATH2(fmod)
QD_EMU_MATH2(fmin)
QD_EMU_MATH2(fmax)
QD_EMU_MATH2(hypot)
QD_EMU_MATH2(copysign)
#undef QD_EMU_MATH1
#undef QD_EMU_MATH2
extern "C" double fma(double, double, double) noexcept;
extern "C" float fmaf(float, float, float) noexcept;
static inline float fma(float a, float b, float c) { return fmaf(a, b, c); }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float __fdividef(float a, float b) { return a / b; }
static inline float __expf(float x) { return expf(x); }
static inline float __logf(float x) { return logf(x); }
static inline float __sinf(float x) { return sinf(x); }
static inline float __cosf(float x) { return cosf(x); }
static inline float __powf(float a, float b) { return powf(a, b); }
static inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : (x == x ? x : 0.0f)); }
extern "C" int abs(int) noexcept;
extern "C" long long llabs(long long) noexcept;
#define QD_EMU_MIN_MAX(T)                                 \
  static inline T min(T a, T b) { return a < b ? a : b; } \
  static inline T max(T a, T b) { return a > b ? a : b; }
QD_EMU_MIN_MAX(int)
QD_EMU_MIN_MAX(unsigned int)
QD_EMU_MIN_MAX(long long)
QD_EMU_MIN_MAX(unsigned long long)
#undef QD_EMU_MIN_MAX
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }

/* --- the glue the emulated compiler appends after each kernel ------------------------ */
template <class T>
struct qd_emu_plain {
  typedef T type;
};
template <class T>
struct qd_emu_plain<const T> {
  typedef T type;
};
template <class T>
struct qd_emu_plain<volatile T> {
  typedef T type;
};
template <class T>
struct qd_emu_plain<const volatile T> {
  typedef T type;
};
template <unsigned I, class... A>
struct qd_emu_nth;
template <class H, class... A>
struct qd_emu_nth<0, H, A...> {
  typedef H type;
};
template <unsigned I, class H, class... A>
struct qd_emu_nth<I, H, A...> {
  typedef typename qd_emu_nth<I - 1, A...>::type type;
};
template <class F>
struct qd_emu_signature;
template <class... A>
struct qd_emu_signature<void(A...)> {
  static constexpr unsigned arity = sizeof...(A);
  template <unsigned I>
  using param = typename qd_emu_plain<typename qd_emu_nth<I, A...>::type>::type;
};
template <class... A>
struct qd_emu_signature<void(A...) noexcept> : qd_emu_signature<void(A...)> {};
#define QD_EMU_PARAM(kernel, i) qd_emu_signature<decltype(kernel)>::template param<i>
#define QD_EMU_ARG(kernel, i) (*static_cast<QD_EMU_PARAM(kernel, i)*>(qd_emu_args[i]))

/* Every thread of the block in turn, x fastest (threads of a block that never
   synchronize may run in any order; this one is the warp order). */
template <class Body>
static inline void qd_emu_each_thread(qd_emu_thread* self, Body body) {
  qd_emu_self = self;
  const unsigned nx = self->block_dim.x, ny = self->block_dim.y, nz = self->block_dim.z;
  for (unsigned z = 0; z < nz; ++z)
    for (unsigned y = 0; y < ny; ++y)
      for (unsigned x = 0; x < nx; ++x) {
        self->thread_idx.x = x;
        self->thread_idx.y = y;
        self->thread_idx.z = z;
        body();
      }
}

static qd_emu_entry qd_emu_table[QD_EMU_ENTRY_CAPACITY > 0 ? QD_EMU_ENTRY_CAPACITY : 1];
static unsigned qd_emu_table_size;
struct qd_emu_registrar {
  explicit qd_emu_registrar(const qd_emu_entry& e) {
    if (qd_emu_table_size < (QD_EMU_ENTRY_CAPACITY > 0 ? QD_EMU_ENTRY_CAPACITY : 1))
      qd_emu_table[qd_emu_table_size++] = e;
  }
};
extern "C" __attribute__((visibility("default"))) const qd_emu_module* qd_emu_module_info() {
  static qd_emu_module info;
  info.abi_version = QD_EMU_ABI_VERSION;
  info.entry_count = qd_emu_table_size;
  info.entries = qd_emu_table;
  return &info;
}
