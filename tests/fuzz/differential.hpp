// Runs a fuzz case through the variants (whole, split, the unchecked split; on the
// reference backend and the CPU) and compares results bitwise; the campaign's figures.
// The bodies under QD_FUZZ_IMPLEMENTATION are compiled once, in fuzz_support.cpp (the
// library qd_fuzz_support); other translation units see their declarations only.
#pragma once

#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <quadrants/analysis/split.hpp>
#include <quadrants/backend/amdgpu/hiprtc.hpp>
#include <quadrants/backend/cuda/nvrtc.hpp>
#include <quadrants/backend/shared_library.hpp>
#include <quadrants/backend/reference/interpreter.hpp>
#include <quadrants/ir/dce.hpp>
#include <quadrants/quadrants.hpp>
#include <quadrants/runtime/pipeline/dispatch.hpp>
#include <quadrants/runtime/ndarray.hpp>

#include "fuzz/fuzz_case.hpp"
#include "fuzz/kernel_generator.hpp"
#include "fuzz/struct_cases.hpp"

namespace qd_fuzz {

enum class variant { whole, split, unchecked_split };

inline const char* name(variant v) {
  switch (v) {
    case variant::whole: return "whole";
    case variant::split: return "split";
    case variant::unchecked_split: return "unchecked split";
  }
  return "?";
}

// What one call of a case left behind.
struct outcome {
  std::string error;                               // the exception's text; empty when the call ran
  std::vector<std::vector<unsigned char>> memory;  // each buffer's data, then its gradient
  std::string printed;
  qd::per_offload_observations obs;

  bool split_ran() const { return obs.frontend_constructs_total >= 0 && obs.runtime_fallbacks == 0; }
};

namespace detail {

inline bool has_print(const qd::ir::function& fn) {
  for (const auto& block : fn.blocks)
    for (qd::ir::id i : block)
      if (fn.at(i).code == qd::ir::op::print) return true;
  return false;
}

// Runs `f` with stdout going to a file; returns what was printed.
template <class F>
std::string capture_stdout(F&& f) {
  std::fflush(stdout);
  char path[] = "/tmp/qd-fuzz-stdout-XXXXXX";
  int file = ::mkstemp(path);
  if (file < 0) std::abort();
  int saved = ::dup(1);
  ::dup2(file, 1);
  try {
    f();
  } catch (...) {
    std::fflush(stdout);
    ::dup2(saved, 1);
    ::close(saved);
    ::close(file);
    ::unlink(path);
    throw;
  }
  std::fflush(stdout);
  ::dup2(saved, 1);
  ::close(saved);
  ::close(file);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  ::unlink(path);
  return text.str();
}

// Interpreted kernels never touch the disk, but the split needs the offline cache on.
inline const std::string& cache_root() {
  static const std::string root = [] {
    auto dir = std::filesystem::temp_directory_path() / ("qd-fuzz-cache-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    return dir.string();
  }();
  return root;
}

}  // namespace detail

// One call of the case in a fresh program (so launch numbers, and thus random
// streams, start alike for every variant).
// A case with a struct kind is called through a typed qd::kernel taking the struct,
// unless `typed` is false (then with its flattened parameters one by one, as any case).
outcome run(const fuzz_case& c, qd::arch arch, variant v, int opt_level = 2, bool typed = true);
#if defined(QD_FUZZ_IMPLEMENTATION)
outcome run(const fuzz_case& c, qd::arch arch, variant v, int opt_level, bool typed) {
  // The CPU on one thread: generated kernels may race (plain stores, and reads of elements
  // that other iterations update), so their results depend on the order of iterations; one
  // thread runs them in the reference's order. (Loops under 2,048 iterations run on one
  // thread anyway, but a body with a loop of its own spreads even a few iterations: a
  // campaign saw 2 of 239 CPU kernels differ irreproducibly that way.)
  qd::init({.arch = arch,
            .offline_cache = v != variant::whole,
            .offline_cache_file_path = detail::cache_root(),
            .per_offload = v == variant::whole ? qd::per_offload_mode::off : qd::per_offload_mode::on,
            .log_level = qd::log_level::error,
            .opt_level = opt_level,
            .enable_fallback = false,
            .random_seed = c.random_seed,
            .cpu_max_num_threads = 1});
  outcome out;
  if (c.struct_kind != 0 && typed && v != variant::unchecked_split) {
    // A typed qd::kernel taking the struct, called with the host struct (struct_cases.hpp).
    if (c.fn.params != structs::reflected_descs(c.struct_kind))
      throw std::logic_error("qdfuzz: the case's parameters are not its struct kind's");
    structs::with_kind(c, [&](auto body, auto host, auto read_back) {
      qd::kernel k(c.name, body);
      auto call = [&] {
        for (int l = 0; l < c.launches; ++l) k(host);
      };
      try {
        if (detail::has_print(c.fn))
          out.printed = detail::capture_stdout(call);
        else
          call();
      } catch (const qd::error& e) {
        out.error = e.what();
      }
      out.memory = read_back(host);
      out.obs = k.per_offload_cache_observations();
    });
    qd::reset();
    return out;
  }
  auto state =
      qd::detail::make_kernel_state(c.name, {}, c.fn.params, [fn = c.fn](qd::detail::tracer& t) { t.fn = fn; });
  if (v == variant::unchecked_split) qd::detail::force_unchecked_split(*state);
  std::vector<qd::detail::buffer> data, grads;
  for (const auto& b : c.buffers) {
    data.emplace_back(b.bytes());
    if (b.bytes()) data.back().upload(b.data.data(), b.bytes());
    grads.emplace_back(b.grad ? b.bytes() : 0);
    if (b.grad && b.bytes()) grads.back().upload(b.grad_data.data(), b.bytes());
  }
  std::vector<qd::detail::launch_arg> args(c.fn.params.size());
  for (std::size_t p = 0; p < args.size(); ++p) {
    if (c.buffer_of[p] < 0) {
      args[p].scalar_bits = c.scalar_bits[p];
      continue;
    }
    const auto b = static_cast<std::size_t>(c.buffer_of[p]);
    args[p].data = data[b].data();
    args[p].grad = c.buffers[b].grad ? grads[b].data() : nullptr;
    args[p].program_id = data[b].program_id();
    args[p].bytes = data[b].bytes();
    for (int d = 0; d < 4; ++d) args[p].shape[d] = c.buffers[b].shape[static_cast<std::size_t>(d)];
  }
  auto call = [&] {
    for (int l = 0; l < c.launches; ++l) qd::detail::launch(*state, args.data(), args.size());
  };
  try {
    if (detail::has_print(c.fn))
      out.printed = detail::capture_stdout(call);
    else
      call();
  } catch (const qd::error& e) {
    out.error = e.what();
  }
  for (std::size_t b = 0; b < c.buffers.size(); ++b) {
    std::vector<unsigned char> bytes(c.buffers[b].bytes());
    if (!bytes.empty()) data[b].download(bytes.data(), bytes.size());
    out.memory.push_back(std::move(bytes));
    if (c.buffers[b].grad) {
      std::vector<unsigned char> g(c.buffers[b].bytes());
      if (!g.empty()) grads[b].download(g.data(), g.size());
      out.memory.push_back(std::move(g));
    }
  }
  out.obs = qd::detail::observations(*state);
  state.reset();
  data.clear();
  grads.clear();
  qd::reset();
  return out;
}
#endif

// The kernel itself, before any plan: its top-level statements in order, each
// loop's iterations in order, top-level variables as plain variables. Only
// comparable with the variants for kernels without random draws (streams are per
// construct) and without float updates of a top-level variable inside a loop
// (whose rounding depends on how the reduction is accumulated).
inline bool source_comparable(const fuzz_case& c) {
  const auto& fn = c.fn;
  for (std::size_t i = 0; i < fn.nodes.size(); ++i) {
    const auto& n = fn.nodes[i];
    if (n.code == qd::ir::op::random) return false;
    if (n.code == qd::ir::op::local_atomic && fn.is_top_level(n.a) && !fn.is_top_level(static_cast<qd::ir::id>(i)) &&
        qd::is_float(n.type))
      return false;
  }
  return true;
}

outcome run_source(const fuzz_case& c);
#if defined(QD_FUZZ_IMPLEMENTATION)
outcome run_source(const fuzz_case& c) {
  outcome out;
  qd::ir::function fn = c.fn;
  qd::ir::eliminate_dead_code(fn);
  std::vector<std::int32_t> identity(fn.params.size());
  for (std::size_t p = 0; p < identity.size(); ++p) identity[p] = static_cast<std::int32_t>(p);
  std::vector<std::vector<unsigned char>> data, grads;
  for (const auto& b : c.buffers) {
    data.push_back(b.data);
    grads.push_back(b.grad_data);
  }
  std::vector<qd::backend::array_abi> arrays(fn.params.size());
  for (std::size_t p = 0; p < fn.params.size(); ++p) {
    if (c.buffer_of[p] < 0) continue;
    const auto b = static_cast<std::size_t>(c.buffer_of[p]);
    arrays[p].data = data[b].data();
    arrays[p].grad = grads[b].empty() ? nullptr : grads[b].data();
    for (int d = 0; d < 4; ++d) arrays[p].shape[d] = c.buffers[b].shape[static_cast<std::size_t>(d)];
  }
  std::int64_t error[5] = {0, 0, 0, 0, 0};
  auto call = [&] {
    qd::backend::reference::task_interpreter kernel(qd::codegen::lowered_task{fn, false, -1, identity});
    for (int l = 0; l < c.launches; ++l) {
      kernel.run({arrays.data(), c.scalar_bits.data(), fn.params.size(), nullptr, 0, error, true});
      if (error[0]) throw qd::user_error("index " + std::to_string(error[3]) + " out of range");
    }
  };
  try {
    if (detail::has_print(fn))
      out.printed = detail::capture_stdout(call);
    else
      call();
  } catch (const qd::error& e) {
    out.error = e.what();
  }
  for (std::size_t b = 0; b < c.buffers.size(); ++b) {
    out.memory.push_back(data[b]);
    if (c.buffers[b].grad) out.memory.push_back(grads[b]);
  }
  return out;
}
#endif

// Bitwise equal, except that any two NaNs are equal (which NaN an operation on two
// NaNs returns depends on operand order, which compilers may swap).
bool same(const fuzz_case& c, const outcome& a, const outcome& b, std::string* why);
#if defined(QD_FUZZ_IMPLEMENTATION)
bool same(const fuzz_case& c, const outcome& a, const outcome& b, std::string* why) {
  auto fail = [&](std::string s) {
    if (why) *why = std::move(s);
    return false;
  };
  if (a.error != b.error) return fail("errors differ: '" + a.error + "' vs '" + b.error + "'");
  if (a.printed != b.printed) return fail("printed text differs:\n" + a.printed + "---\n" + b.printed);
  std::size_t m = 0;
  for (std::size_t buf = 0; buf < c.buffers.size(); ++buf) {
    const buffer_spec& s = c.buffers[buf];
    for (int copy = 0; copy < (s.grad ? 2 : 1); ++copy, ++m) {
      const auto& x = a.memory[m];
      const auto& y = b.memory[m];
      const auto size = static_cast<std::size_t>(qd::size_of(s.type));
      for (std::size_t e = 0; e * size < x.size(); ++e) {
        if (std::memcmp(x.data() + e * size, y.data() + e * size, size) == 0) continue;
        if (s.type == qd::dtype::f32) {
          float f, g;
          std::memcpy(&f, x.data() + e * size, 4);
          std::memcpy(&g, y.data() + e * size, 4);
          if (std::isnan(f) && std::isnan(g)) continue;
        } else if (s.type == qd::dtype::f64) {
          double f, g;
          std::memcpy(&f, x.data() + e * size, 8);
          std::memcpy(&g, y.data() + e * size, 8);
          if (std::isnan(f) && std::isnan(g)) continue;
        }
        auto hex = [&](const std::vector<unsigned char>& bytes) {
          std::string h;
          for (std::size_t k = size; k-- > 0;) h += fmt::format("{:02x}", bytes[e * size + k]);
          return h;
        };
        return fail("buffer " + std::to_string(buf) + (copy ? " (gradient)" : "") + ", element " + std::to_string(e) +
                    " differs: 0x" + hex(x) + " against 0x" + hex(y));
      }
    }
  }
  return true;
}
#endif

// --- one case, all the checks -----------------------------------------------------------

enum class finding {
  none,
  invalid_kernel,       // the oracle rejected the kernel (a generator bug)
  split_differs,        // reference: the split was used and differs from the whole kernel
  source_differs,       // reference: the whole kernel differs from the kernel run as written
  cpu_whole_differs,    // the CPU's whole kernel differs from the reference's
  cpu_split_differs,    // the CPU's split was used and differs from the reference's whole kernel
  gpu_whole_differs,    // a GPU's whole kernel differs from the reference's
  gpu_split_differs,    // a GPU's split differs from the reference's whole kernel
  struct_call_differs,  // reference: the call with a host struct differs from the call member by member
};

inline const char* name(finding f) {
  switch (f) {
    case finding::none: return "none";
    case finding::invalid_kernel: return "invalid kernel";
    case finding::split_differs: return "split differs from whole (reference)";
    case finding::source_differs: return "whole kernel differs from the kernel as written (reference)";
    case finding::cpu_whole_differs: return "CPU whole kernel differs from the reference";
    case finding::cpu_split_differs: return "CPU split differs from the reference's whole kernel";
    case finding::gpu_whole_differs: return "GPU whole kernel differs from the reference";
    case finding::gpu_split_differs: return "GPU split differs from the reference's whole kernel";
    case finding::struct_call_differs: return "the call with a host struct differs from the call member by member";
  }
  return "?";
}

// What the split hands on through the persisted buffer, by the kind of node kept.
struct persisted_kinds {
  bool variable = false;  // a top-level variable (a reduction, a variable assigned in a construct)
  bool snapshot = false;  // an array element read before a later write
  bool draw = false;      // a random draw or a volatile read, taken once
  bool other = false;     // another value (an atomic's old value, a value computed from those)
  // The analysis persisted a value that the unchecked split recomputes: one whose
  // recomputation it could not prove would see what the whole kernel sees.
  bool beyond_unchecked = false;
  bool any() const { return variable || snapshot || draw || other; }
};

persisted_kinds persisted_by_split(const fuzz_case& c);
#if defined(QD_FUZZ_IMPLEMENTATION)
persisted_kinds persisted_by_split(const fuzz_case& c) {
  qd::ir::function fn = c.fn;
  qd::ir::eliminate_dead_code(fn);
  const auto s = qd::analysis::analyze_structure(fn);
  const auto d = qd::analysis::plan_split(fn, s);
  persisted_kinds k;
  for (const auto& t : d.plan.temps) {
    const auto& n = fn.at(t.node);
    if (n.code == qd::ir::op::local_decl)
      k.variable = true;
    else if (n.code == qd::ir::op::global_load && (n.flags & qd::ir::access::is_volatile) == 0)
      k.snapshot = true;
    else if (n.code == qd::ir::op::random || n.code == qd::ir::op::global_load)
      k.draw = true;
    else
      k.other = true;
  }
  const auto u = qd::analysis::plan_split_unchecked(fn, s);
  k.beyond_unchecked = d.plan.temps.size() > u.temps.size();
  return k;
}
#endif

struct case_report {
  finding what = finding::none;
  std::string detail;
  qd::fallback_reason decision = qd::fallback_reason::none;  // the analysis' decision
  bool split_ran = false;                                    // the split variant ran (no run-time fallback)
  bool runtime_fallback = false;                             // the call aliased a checked pair: the whole variant ran
  persisted_kinds persisted;                                 // what the split keeps in the persisted buffer
  // For a compile-time fallback: the unchecked split gave equal results. For a split
  // with a persisted buffer: recomputing everything instead would have too.
  std::optional<bool> unchecked_equal;
  bool source_checked = false;
  bool cpu = false;
  bool gpu = false;
};

struct check_options {
  bool cpu = false;             // also run the CPU backend (compiles: slow)
  bool unchecked = true;        // run the unchecked split of kernels that fell back
  bool source = true;           // compare with the kernel as written where comparable
  int opt_level = 2;            // of the CPU runs: callers cycle it so that every level is fuzzed
  std::optional<qd::arch> gpu;  // also run on this GPU, whole and split (see gpu_comparable)
};

// Whether a GPU must give the reference's results bit for bit: when its blocks run in
// order, one thread after another (the emulated GPUs with QD_EMULATED_GPU_THREADS=1),
// iterations run in the reference's order, except that a float reduction into a
// top-level variable adds per-thread partial sums to the variable one by one, where the
// reference adds one partial sum: (v + a) + b against v + (a + b).
inline bool gpu_comparable(const fuzz_case& c) {
  const auto& fn = c.fn;
  for (std::size_t i = 0; i < fn.nodes.size(); ++i) {
    const auto& n = fn.nodes[i];
    const auto op = static_cast<qd::ir::atomic_op>(n.sub);
    if (n.code == qd::ir::op::local_atomic && qd::is_float(n.type) && fn.is_top_level(n.a) &&
        !fn.is_top_level(static_cast<qd::ir::id>(i)) && (op == qd::ir::atomic_op::add || op == qd::ir::atomic_op::sub))
      return false;
  }
  return true;
}

case_report check(const fuzz_case& c, const check_options& o);
#if defined(QD_FUZZ_IMPLEMENTATION)
case_report check(const fuzz_case& c, const check_options& o) {
  case_report r;
  r.cpu = o.cpu;
  r.gpu = o.gpu.has_value();
  auto found = [&](finding f, std::string detail) {
    if (r.what == finding::none) {
      r.what = f;
      r.detail = std::move(detail);
    }
  };
  std::string why;
  const outcome whole = run(c, qd::arch::reference, variant::whole);
  if (!whole.error.empty()) {
    found(finding::invalid_kernel, whole.error);
    return r;
  }
  if (c.struct_kind != 0) {
    const outcome flat = run(c, qd::arch::reference, variant::whole, 2, false);
    if (!same(c, flat, whole, &why)) found(finding::struct_call_differs, why);
  }
  const outcome split = run(c, qd::arch::reference, variant::split);
  r.decision = split.obs.fallback;
  r.split_ran = split.split_ran();
  r.runtime_fallback = split.obs.runtime_fallbacks > 0;
  if (r.decision == qd::fallback_reason::none) r.persisted = persisted_by_split(c);
  if (!same(c, split, whole, &why)) found(finding::split_differs, why);
  if ((r.decision != qd::fallback_reason::none || r.persisted.beyond_unchecked) && o.unchecked) {
    // A fallback was unnecessary if the unchecked split gives the whole kernel's results,
    // on this call's inputs and on two other sets (one input proves little).
    const outcome unchecked = run(c, qd::arch::reference, variant::unchecked_split);
    r.unchecked_equal = unchecked.error.empty() && same(c, unchecked, whole, nullptr);
    for (std::uint64_t alt = 1; alt <= 2 && *r.unchecked_equal; ++alt) {
      const fuzz_case other = with_other_inputs(c, c.random_seed * 31 + alt);
      const outcome w = run(other, qd::arch::reference, variant::whole);
      const outcome u = run(other, qd::arch::reference, variant::unchecked_split);
      r.unchecked_equal = w.error.empty() && u.error.empty() && same(other, u, w, nullptr);
    }
  }
  if (o.source && source_comparable(c)) {
    r.source_checked = true;
    const outcome source = run_source(c);
    if (!same(c, source, whole, &why)) found(finding::source_differs, why);
  }
  if (o.cpu) {
    const std::string at = " (CPU at opt_level " + std::to_string(o.opt_level) + ")";
    const outcome cpu_whole = run(c, qd::arch::cpu, variant::whole, o.opt_level);
    if (!same(c, cpu_whole, whole, &why)) found(finding::cpu_whole_differs, why + at);
    const outcome cpu_split = run(c, qd::arch::cpu, variant::split, o.opt_level);
    if (!same(c, cpu_split, whole, &why)) found(finding::cpu_split_differs, why + at);
  }
  if (o.gpu) {
    const outcome gpu_whole = run(c, *o.gpu, variant::whole);
    if (!same(c, gpu_whole, whole, &why)) found(finding::gpu_whole_differs, why);
    const outcome gpu_split = run(c, *o.gpu, variant::split);
    if (!same(c, gpu_split, whole, &why)) found(finding::gpu_split_differs, why);
  }
  return r;
}
#endif

// The GPU that GPU findings are re-checked on while shrinking (set by the GPU batch).
inline std::optional<qd::arch>& gpu_under_test() {
  static std::optional<qd::arch> arch;
  return arch;
}

// Whether `candidate` still shows `f` (used while shrinking).
bool still_shows(const fuzz_case& candidate, finding f, int opt_level = 2);
#if defined(QD_FUZZ_IMPLEMENTATION)
bool still_shows(const fuzz_case& candidate, finding f, int opt_level) {
  check_options o;
  o.opt_level = opt_level;
  o.cpu = f == finding::cpu_whole_differs || f == finding::cpu_split_differs;
  if (f == finding::gpu_whole_differs || f == finding::gpu_split_differs) o.gpu = gpu_under_test();
  o.unchecked = false;
  o.source = f == finding::source_differs;
  try {
    return check(candidate, o).what == f;
  } catch (const qd::error&) {
    return false;  // the candidate is malformed (an edit broke an invariant): not the same failure
  }
}
#endif

// --- GPU compilers -----------------------------------------------------------------------

// What compiling a set of cases for one GPU target gave.
struct gpu_compile_result {
  bool skipped = false;  // the compiler library is not installed
  int compiled = 0;
  std::vector<std::string> failures;  // "<case>: <error>"
};

// Compiles each case for sm_90 with NVRTC and gfx90a with hipRTC in compile-only mode
// (no GPU needed): the whole kernel, and with `split` every variant per-offload mode uses.
std::map<std::string, gpu_compile_result> compile_for_gpus(const std::vector<fuzz_case>& cases, bool split);
#if defined(QD_FUZZ_IMPLEMENTATION)
std::map<std::string, gpu_compile_result> compile_for_gpus(const std::vector<fuzz_case>& cases, bool split) {
  std::map<std::string, gpu_compile_result> out;
  const std::string cache = detail::cache_root() + "/gpu-compile-only";
  struct target {
    std::string name;
    qd::backend::library_search library;
    qd::config config;
  };
  for (const target& t :
       {target{"sm_90 (NVRTC)", qd::backend::cuda::nvrtc_library(), {.arch = qd::arch::cuda, .cuda_arch = 90}},
        target{"gfx90a (hipRTC)",
               qd::backend::amdgpu::hiprtc_library(),
               {.arch = qd::arch::amdgpu, .amdgpu_arch = "gfx90a"}}}) {
    gpu_compile_result& r = out[t.name];
    try {
      qd::backend::locate_library(t.library);
    } catch (const qd::error&) {
      r.skipped = true;
      continue;
    }
    for (const bool per_offload : {false, true}) {
      if (per_offload && !split) continue;
      qd::config c = t.config;
      c.compile_only = true;
      c.offline_cache = per_offload;
      c.offline_cache_file_path = cache;
      c.per_offload = per_offload ? qd::per_offload_mode::on : qd::per_offload_mode::off;
      c.log_level = qd::log_level::error;
      qd::init(c);
      for (const auto& a : cases) {
        try {
          auto state = qd::detail::make_kernel_state(a.name, {}, a.fn.params,
                                                     [fn = a.fn](qd::detail::tracer& tr) { tr.fn = fn; });
          qd::detail::compile(*state);
          ++r.compiled;
        } catch (const qd::error& e) {
          r.failures.push_back(a.name + (per_offload ? " (split)" : " (whole)") + ": " + e.what());
        }
      }
      qd::reset();
    }
  }
  return out;
}
#endif

// --- figures ------------------------------------------------------------------------------

struct figures {
  long kernels = 0, cpu_kernels = 0, gpu_kernels = 0, source_checked = 0;
  long split_ran = 0, runtime_fallbacks = 0, compile_time_fallbacks = 0;
  long unnecessary = 0, unchecked_failed = 0;
  long persisted = 0, persisted_variable = 0, persisted_snapshot = 0, persisted_draw = 0, persisted_other = 0;
  long persisted_checked = 0, unnecessary_persisted = 0;
  std::map<std::string, long> fallbacks_by_reason, unnecessary_by_reason;
  std::map<std::string, long> findings;
  long aliased_calls = 0;
  std::array<long, feature::count> with_feature{};  // kernels using each generator feature (fuzz_case.hpp)

  void add(const fuzz_case& c, const case_report& r) {
    ++kernels;
    cpu_kernels += r.cpu;
    gpu_kernels += r.gpu;
    source_checked += r.source_checked;
    aliased_calls += c.aliased();
    for (int b = 0; b < feature::count; ++b) with_feature[static_cast<std::size_t>(b)] += (c.features >> b) & 1;
    if (r.what != finding::none) ++findings[name(r.what)];
    if (r.decision == qd::fallback_reason::none) {
      if (r.split_ran) ++split_ran;
      if (r.runtime_fallback) ++runtime_fallbacks;
      if (r.persisted.any()) {
        ++persisted;
        persisted_variable += r.persisted.variable;
        persisted_snapshot += r.persisted.snapshot;
        persisted_draw += r.persisted.draw;
        persisted_other += r.persisted.other;
        persisted_checked += r.persisted.beyond_unchecked;
        unnecessary_persisted += r.unchecked_equal.value_or(false);
      }
    } else {
      ++compile_time_fallbacks;
      ++fallbacks_by_reason[std::string(qd::name(r.decision))];
      if (r.unchecked_equal.value_or(false)) {
        ++unnecessary;
        ++unnecessary_by_reason[std::string(qd::name(r.decision))];
      }
    }
  }

  long mismatches() const {
    long n = 0;
    for (const auto& [what, count] : findings) n += count;
    return n;
  }

  std::string text() const {
    auto pct = [](long a, long b) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f%%", b ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 0.0);
      return std::string(buf);
    };
    std::ostringstream s;
    s << "kernels: " << kernels
      << " (reference: whole, split, unchecked split where it fell back; CPU too: " << cpu_kernels
      << "; a GPU too: " << gpu_kernels << "; compared with the kernel as written: " << source_checked << ")\n";
    s << "split used: " << split_ran << " (" << pct(split_ran, kernels)
      << "); run-time fallbacks (aliased calls): " << runtime_fallbacks << " of " << aliased_calls
      << " aliased calls\n";
    s << "compile-time fallbacks: " << compile_time_fallbacks << " (" << pct(compile_time_fallbacks, kernels) << ")";
    for (const auto& [reason, count] : fallbacks_by_reason) s << "; " << reason << " " << count;
    s << "\n";
    s << "unnecessary fallbacks (the unchecked split gave the whole kernel's results on 3 inputs): " << unnecessary
      << " (" << pct(unnecessary, compile_time_fallbacks) << " of fallbacks)";
    for (const auto& [reason, count] : unnecessary_by_reason) s << "; " << reason << " " << count;
    s << "\n";
    s << "split with a persisted buffer: " << persisted << " (" << pct(persisted, kernels) << "; holding variables "
      << persisted_variable << ", snapshots " << persisted_snapshot << ", draws and volatile reads " << persisted_draw
      << ", other values " << persisted_other << ")\n";
    s << "values persisted because a recomputed read was not proven to see the whole kernel's data: "
      << persisted_checked
      << " kernels; recomputing them (the unchecked split) also matched on 3 inputs: " << unnecessary_persisted << " ("
      << pct(unnecessary_persisted, persisted_checked) << ")\n";
    s << "kernels using";
    for (int b = 0; b < feature::count; ++b)
      s << (b ? ", " : " ") << feature::name(b) << " " << with_feature[static_cast<std::size_t>(b)];
    s << "\n";
    s << "mismatches: " << mismatches();
    for (const auto& [what, count] : findings) s << "; " << what << ": " << count;
    s << "\n";
    return s.str();
  }
};

}  // namespace qd_fuzz
