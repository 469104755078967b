/* The emulated GPUs' module ABI: what an emulated "CUBIN" or code object exports,
   and how the emulated driver runs one block of one kernel. Plain C, included by the
   driver side and prepended to every emulated translation unit. */
#ifndef QD_EMULATION_ABI_H
#define QD_EMULATION_ABI_H

#define QD_EMU_ABI_VERSION 1

struct qd_emu_dim {
  unsigned x, y, z;
};

/* One GPU thread as the kernel sees it: its indices, and the driver's hooks. */
struct qd_emu_thread {
  struct qd_emu_dim thread_idx, block_idx, block_dim, grid_dim;
  /* __syncthreads: returns once every thread of the block has arrived (or exited). */
  void (*sync)(struct qd_emu_thread* self);
  /* __trap (code 1) and a failed device assert (code 2): fails the launch; never returns. */
  void (*trap)(struct qd_emu_thread* self, int code);
  void* driver; /* the driver's own state for this thread */
};

/* Runs the kernel with its parameters unpacked from `args` (one pointer per parameter,
   as cuLaunchKernel's kernelParams): run_block for every thread of the block in turn
   (kernels that never synchronize), run_thread for the thread `self` only (on a fiber). */
typedef void (*qd_emu_run_fn)(void* const* args, struct qd_emu_thread* self);

struct qd_emu_entry {
  const char* name;     /* as written in the source */
  const void* function; /* the kernel itself: its dynamic symbol is the name drivers look up */
  qd_emu_run_fn run_block;
  qd_emu_run_fn run_thread;
  unsigned param_count;
  const unsigned* param_sizes; /* param_count entries each */
  const unsigned* param_aligns;
  unsigned max_threads_per_block; /* __launch_bounds__'s first argument; 0 when absent */
  unsigned synchronizes;          /* the program names __syncthreads: threads run on fibers */
};

struct qd_emu_module {
  unsigned abi_version;
  unsigned entry_count;
  const struct qd_emu_entry* entries;
};

/* Every emulated program exports this function (C linkage). */
#define QD_EMU_MODULE_SYMBOL "qd_emu_module_info"
typedef const struct qd_emu_module* (*qd_emu_module_fn)(void);

#endif
