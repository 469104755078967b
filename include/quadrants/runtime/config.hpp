// qd::config, qd::init and qd::reset. Each field can also come from a QD_<NAME>
// environment variable; a field set in code wins and logs that it overrides it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "quadrants/base/api.hpp"
#include "quadrants/base/arch.hpp"
#include "quadrants/base/log.hpp"

namespace qd::inline v0 {

enum class per_offload_mode : std::uint8_t { automatic, on, off };

QD_FUNC std::string_view name(per_offload_mode m) noexcept;

// Fields in the order docs/configuration.md documents (designated initializers must follow it).
// An empty field means: the QD_<NAME> variable if set, else the default.
struct config {
  std::optional<qd::arch> arch;                         // QD_ARCH; default cpu (also: reference)
  std::optional<bool> offline_cache;                    // QD_OFFLINE_CACHE; default true
  std::optional<std::string> offline_cache_file_path;   // default $XDG_CACHE_HOME/quadrants/qdcache
  std::optional<std::uint64_t> offline_cache_max_size;  // bytes; the variable accepts K/M/G suffixes
  std::optional<per_offload_mode> per_offload;          // QD_PER_OFFLOAD=auto|on|off
  std::optional<int> num_compile_threads;               // default: hardware threads
  std::optional<qd::log_level> log_level;               // default info
  std::optional<bool> fast_math;                        // default false
  std::optional<int> opt_level;                         // 0..3, default 2
  std::optional<bool> check_out_of_bound;               // default false
  std::optional<std::string> debug_dump_path;           // default ./qd_dump
  std::optional<bool> print_ir;                         // QD_PRINT_IR or QD_DUMP_IR; default false
  std::optional<bool> kernel_coverage;                  // default false
  std::optional<bool> compile_only;                     // default false
  std::optional<int> cuda_arch;                         // e.g. 90
  std::optional<std::string> amdgpu_arch;               // e.g. "gfx90a"
  std::optional<bool> enable_fallback;                  // default true
  std::optional<std::uint64_t> random_seed;             // qd::random's seed; default 0
  std::optional<int> cpu_max_num_threads;               // CPU backend threads; default: all cores
  // The shared remote tier (docs/cache.md): redis://host:port/db or unix:///path.sock.
  std::optional<std::string> remote_cache;            // QD_REMOTE_CACHE; empty: off
  std::optional<bool> remote_cache_read_only;         // never write to it; default false
  std::optional<std::string> remote_cache_secret;     // HMAC key shared by the team
  std::optional<int> remote_cache_timeout_ms;         // default 100
  std::optional<bool> remote_cache_unauthenticated;   // opt out of the secret; default false
  std::optional<int> compile_timeout;                 // seconds a host compiler may run; 0: no limit; default 600
  std::optional<std::uint64_t> graph_max_iterations;  // passes of one qd::graph::do_while; 0 (default): unlimited
  std::optional<bool> debug;  // QD_DEBUG: qd::assert_ checked, check_out_of_bound on; default false
  // GPUs combine reductions in a fixed order: the same bits run to run (default false;
  // the CPU and the reference backend always do, docs/dsl.md "Reductions").
  std::optional<bool> deterministic_reductions;  // QD_DETERMINISTIC_REDUCTIONS
};

// The configuration in effect: every field decided.
struct settings {
  qd::arch arch = arch::cpu;
  qd::arch requested_arch = arch::cpu;
  bool offline_cache = true;
  std::string offline_cache_file_path;
  std::uint64_t offline_cache_max_size = 0;
  per_offload_mode per_offload = per_offload_mode::automatic;
  int num_compile_threads = 1;
  qd::log_level log_level = log_level::info;
  bool fast_math = false;
  int opt_level = 2;
  bool check_out_of_bound = false;
  std::string debug_dump_path;
  bool print_ir = false;
  bool kernel_coverage = false;
  bool compile_only = false;
  int cuda_arch = 0;
  std::string amdgpu_arch;
  bool enable_fallback = true;
  std::uint64_t random_seed = 0;
  int cpu_max_num_threads = 1;
  std::string remote_cache;
  bool remote_cache_read_only = false;
  std::string remote_cache_secret;
  int remote_cache_timeout_ms = 100;
  bool remote_cache_unauthenticated = false;
  int compile_timeout = 600;
  std::uint64_t graph_max_iterations = 0;
  bool debug = false;
  bool deterministic_reductions = false;
};

// Starts the runtime (ending a previous one first). Throws qd::error for an
// invalid field or variable, or an unavailable arch with enable_fallback off.
QD_FUNC void init(const config& c = {});
// qd::init(c) on the best available arch when neither c.arch nor QD_ARCH names
// one: the backends the registry prefers, in its order (a CUDA GPU, else an AMD GPU),
// else the CPU (docs/configuration.md). A device that is missing is skipped silently.
// Returns the arch in effect.
QD_FUNC qd::arch init_best_available(const config& c = {});
// Ends the runtime: compiled kernels are dropped, arrays it created become unusable.
QD_FUNC void reset();
QD_FUNC bool is_initialized() noexcept;
// The settings in effect; a qd::user_error before qd::init.
QD_FUNC const settings& current_settings();

}  // namespace qd::inline v0

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/config-inl.hpp"
#endif
