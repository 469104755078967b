#include "core/executor.hpp"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <csetjmp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

namespace qd::emulation {
namespace {

// --- one block, threads one after another --------------------------------------------

struct plain_block {
  std::jmp_buf jump;
  int code = 0;
};

[[noreturn]] void plain_trap(qd_emu_thread* self, int code) {
  auto* b = static_cast<plain_block*>(self->driver);
  b->code = code;
  std::longjmp(b->jump, 1);
}

void plain_sync(qd_emu_thread* self) {
  // A block of one thread meets itself; larger blocks need fibers, which the compiler
  // chooses whenever the program names __syncthreads.
  if (self->block_dim.x * self->block_dim.y * self->block_dim.z > 1) plain_trap(self, 3);
}

int run_plain_block(const kernel_launch& l, qd_emu_thread& t) {
  plain_block b;
  t.sync = &plain_sync;
  t.trap = &plain_trap;
  t.driver = &b;
  if (setjmp(b.jump) == 0) l.entry->run_block(l.args.data(), &t);
  return b.code;
}

// --- one block, each thread on a fiber ---------------------------------------------------

constexpr std::size_t fiber_stack_bytes = std::size_t{256} << 10;

// Fiber stacks of this host thread, kept for its next blocks; a guard page below each.
struct stack_cache {
  std::vector<void*> stacks;
  void* get(std::size_t i) {
    while (stacks.size() <= i) {
      const std::size_t guard = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
      void* p = ::mmap(nullptr, fiber_stack_bytes + guard, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
      if (p == MAP_FAILED) return nullptr;
      ::mprotect(p, guard, PROT_NONE);
      stacks.push_back(static_cast<char*>(p) + guard);
    }
    return stacks[i];
  }
  ~stack_cache() {
    const std::size_t guard = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    for (void* s : stacks) ::munmap(static_cast<char*>(s) - guard, fiber_stack_bytes + guard);
  }
};
thread_local stack_cache fiber_stacks;

struct fiber_block;
struct fiber {
  ucontext_t context;
  qd_emu_thread thread;
  fiber_block* block = nullptr;
  bool done = false;
};
struct fiber_block {
  ucontext_t scheduler;
  const kernel_launch* launch = nullptr;
  int code = 0;
};

void fiber_sync(qd_emu_thread* self) {
  auto* f = static_cast<fiber*>(self->driver);
  swapcontext(&f->context, &f->block->scheduler);
}

[[noreturn]] void fiber_trap(qd_emu_thread* self, int code) {
  auto* f = static_cast<fiber*>(self->driver);
  f->block->code = code;
  f->done = true;
  setcontext(&f->block->scheduler);
  std::abort();  // setcontext does not return
}

void fiber_main(unsigned low, unsigned high) {
  auto* f = reinterpret_cast<fiber*>((static_cast<std::uintptr_t>(high) << 32) | low);
  f->block->launch->entry->run_thread(f->block->launch->args.data(), &f->thread);
  f->done = true;  // returning resumes the scheduler (uc_link)
}

// Prepares fiber `f` to start the kernel on `stack` (kept apart: getcontext returns
// twice, like setjmp, which no caller's locals should see).
__attribute__((noinline)) void make_fiber(fiber& f, void* stack, ucontext_t* scheduler) {
  getcontext(&f.context);
  f.context.uc_stack.ss_sp = stack;
  f.context.uc_stack.ss_size = fiber_stack_bytes;
  f.context.uc_link = scheduler;
  const auto address = reinterpret_cast<std::uintptr_t>(&f);
  makecontext(&f.context, reinterpret_cast<void (*)()>(&fiber_main), 2, static_cast<unsigned>(address),
              static_cast<unsigned>(address >> 32));
}

int run_fiber_block(const kernel_launch& l, const qd_emu_thread& base) {
  const unsigned n = l.block.x * l.block.y * l.block.z;
  std::vector<fiber> fibers(n);
  fiber_block b;
  b.launch = &l;
  for (unsigned i = 0; i < n; ++i) {
    fiber& f = fibers[i];
    void* stack = fiber_stacks.get(i);
    if (stack == nullptr) return 1;
    f.block = &b;
    f.thread = base;
    f.thread.thread_idx = {i % l.block.x, (i / l.block.x) % l.block.y, i / (l.block.x * l.block.y)};
    f.thread.sync = &fiber_sync;
    f.thread.trap = &fiber_trap;
    f.thread.driver = &f;
    make_fiber(f, stack, &b.scheduler);
  }
  // Rounds: every live thread runs until its next barrier or its end, so no thread
  // passes a barrier before all others reached it (threads that ended count as arrived).
  for (unsigned live = n; live > 0 && b.code == 0;) {
    for (fiber& f : fibers) {
      if (f.done) continue;
      swapcontext(&b.scheduler, &f.context);
      if (f.done) --live;
      if (b.code != 0) break;
    }
  }
  return b.code;
}

int run_block(const kernel_launch& l, std::uint64_t index) {
  qd_emu_thread t{};
  t.block_dim = l.block;
  t.grid_dim = l.grid;
  t.block_idx.x = static_cast<unsigned>(index % l.grid.x);
  t.block_idx.y = static_cast<unsigned>(index / l.grid.x % l.grid.y);
  t.block_idx.z = static_cast<unsigned>(index / (static_cast<std::uint64_t>(l.grid.x) * l.grid.y));
  return l.entry->synchronizes ? run_fiber_block(l, t) : run_plain_block(l, t);
}

// --- the pool --------------------------------------------------------------------------

struct job {
  const kernel_launch* launch = nullptr;
  std::uint64_t total = 0;
  std::atomic<std::uint64_t> next{0};
  std::atomic<std::uint64_t> finished{0};
  std::atomic<int> code{0};
  unsigned users = 0;  // pool threads inside run_blocks (guarded by the pool's mutex)
  std::condition_variable done;
};

class block_pool {
 public:
  explicit block_pool(unsigned threads) : threads_(threads) {}

  launch_outcome run(const kernel_launch& l) {
    job j;
    j.launch = &l;
    j.total = static_cast<std::uint64_t>(l.grid.x) * l.grid.y * l.grid.z;
    if (threads_ <= 1 || j.total <= 1) {
      for (std::uint64_t b = 0; b < j.total && j.code.load() == 0; ++b) j.code = run_block(l, b);
      return {j.code.load()};
    }
    {
      std::lock_guard lock(mutex_);
      start_workers();
      jobs_.push_back(&j);
    }
    work_.notify_all();
    run_blocks(j);
    std::unique_lock lock(mutex_);
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it)
      if (*it == &j) {
        jobs_.erase(it);
        break;
      }
    j.done.wait(lock, [&] { return j.users == 0 && j.finished.load() == j.total; });
    return {j.code.load()};
  }

 private:
  void run_blocks(job& j) {
    for (;;) {
      const std::uint64_t b = j.next.fetch_add(1);
      if (b >= j.total) return;
      if (j.code.load(std::memory_order_relaxed) == 0) {
        const int code = run_block(*j.launch, b);
        if (code != 0) j.code.store(code);
      }
      if (j.finished.fetch_add(1) + 1 == j.total) {
        std::lock_guard lock(mutex_);
        j.done.notify_all();
      }
    }
  }

  void start_workers() {
    if (started_) return;
    started_ = true;
    for (unsigned i = 1; i < threads_; ++i) std::thread([this] { worker(); }).detach();
  }

  void worker() {
    std::unique_lock lock(mutex_);
    for (;;) {
      job* j = nullptr;
      work_.wait(lock, [&] {
        for (job* candidate : jobs_)
          if (candidate->next.load() < candidate->total) {
            j = candidate;
            return true;
          }
        return false;
      });
      ++j->users;
      lock.unlock();
      run_blocks(*j);
      lock.lock();
      if (--j->users == 0) j->done.notify_all();
    }
  }

  const unsigned threads_;
  std::mutex mutex_;
  std::condition_variable work_;
  std::deque<job*> jobs_;
  bool started_ = false;
};

block_pool& pool() {
  static block_pool* p = new block_pool(emulation_threads());  // never destroyed: its threads outlive main
  return *p;
}

}  // namespace

unsigned emulation_threads() {
  static const unsigned n = [] {
    const char* env = std::getenv("QD_EMULATED_GPU_THREADS");
    if (env && *env) {
      const long v = std::strtol(env, nullptr, 10);
      if (v >= 1 && v <= 1024) return static_cast<unsigned>(v);
    }
    const unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1u : hw;
  }();
  return n;
}

launch_outcome run_kernel(const kernel_launch& launch) { return pool().run(launch); }

bool capture_parameters(const qd_emu_entry& entry, void** kernel_params, const void* buffer, std::size_t buffer_size,
                        kernel_launch& out) {
  std::vector<std::size_t> offsets(entry.param_count);
  std::size_t size = 0;
  for (unsigned i = 0; i < entry.param_count; ++i) {
    const std::size_t align = entry.param_aligns[i] ? entry.param_aligns[i] : 1;
    size = (size + align - 1) / align * align;
    offsets[i] = size;
    size += entry.param_sizes[i];
  }
  if (kernel_params == nullptr && buffer_size < size) return false;
  out.storage.assign(size + 16, 0);
  // Storage is 16-aligned at the start (operator new), and each offset keeps its alignment.
  out.args.resize(entry.param_count);
  for (unsigned i = 0; i < entry.param_count; ++i) {
    const void* from = kernel_params ? kernel_params[i] : static_cast<const unsigned char*>(buffer) + offsets[i];
    std::memcpy(out.storage.data() + offsets[i], from, entry.param_sizes[i]);
    out.args[i] = out.storage.data() + offsets[i];
  }
  return true;
}

}  // namespace qd::emulation
