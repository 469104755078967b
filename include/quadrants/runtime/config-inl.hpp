// Implementation of runtime/config.hpp: names and the QD_* variable parsing.
#pragma once

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <vector>
#include <cstdlib>
#include <thread>

#include "quadrants/backend/registry.hpp"
#include "quadrants/base/env_integer.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/cache/remote.hpp"
#include "quadrants/cache/store.hpp"
#include "quadrants/base/format.hpp"
#include "quadrants/runtime/config.hpp"
#include "quadrants/runtime/pipeline/program.hpp"

namespace qd::inline v0 {

QD_FUNC std::string_view name(per_offload_mode m) noexcept {
  switch (m) {
    case per_offload_mode::automatic: return "auto";
    case per_offload_mode::on: return "on";
    case per_offload_mode::off: return "off";
  }
  return "?";
}

namespace detail {

QD_FUNC std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

[[noreturn]] QD_FUNC void bad_variable(std::string_view var, std::string_view value, std::string_view accepted) {
  throw user_error(fmt::format("environment variable {}='{}' is not valid; accepted: {}", var, value, accepted));
}

QD_FUNC bool parse_bool(std::string_view var, std::string_view v) {
  std::string s = lower(v);
  if (s == "1" || s == "true" || s == "on" || s == "yes") return true;
  if (s == "0" || s == "false" || s == "off" || s == "no") return false;
  bad_variable(var, v, "1/0, true/false, on/off");
}

// Bytes: digits, an optional fraction of up to 6 digits, an optional unit (K, M, G,
// T: powers of 1024); the result must be a whole number of bytes that fits 64 bits.
QD_FUNC std::uint64_t parse_size(std::string_view var, std::string_view v) {
  auto fail = [&] { bad_variable(var, v, "a whole number of bytes such as 1073741824, 512M, 1.5G"); };
  std::size_t digits = 0;
  while (digits < v.size() && v[digits] >= '0' && v[digits] <= '9') ++digits;
  std::size_t frac_begin = digits, frac_end = digits;
  if (digits < v.size() && v[digits] == '.') {
    frac_begin = frac_end = digits + 1;
    while (frac_end < v.size() && v[frac_end] >= '0' && v[frac_end] <= '9') ++frac_end;
    if (frac_end == frac_begin || frac_end - frac_begin > 6) fail();
  }
  if (digits == 0) fail();
  std::string unit = lower(v.substr(frac_end));
  int shift = 0;
  if (unit == "" || unit == "b")
    shift = 0;
  else if (unit == "k" || unit == "kb" || unit == "kib")
    shift = 10;
  else if (unit == "m" || unit == "mb" || unit == "mib")
    shift = 20;
  else if (unit == "g" || unit == "gb" || unit == "gib")
    shift = 30;
  else if (unit == "t" || unit == "tb" || unit == "tib")
    shift = 40;
  else
    fail();
  std::uint64_t whole = 0;
  for (std::size_t i = 0; i < digits; ++i)
    if (__builtin_mul_overflow(whole, 10u, &whole) || __builtin_add_overflow(whole, v[i] - '0', &whole)) fail();
  std::uint64_t fraction = 0, denominator = 1;
  for (std::size_t i = frac_begin; i < frac_end; ++i) {
    fraction = fraction * 10 + static_cast<std::uint64_t>(v[i] - '0');
    denominator *= 10;
  }
  std::uint64_t scaled = fraction << shift;  // < 10^6 * 2^40: no overflow
  if (whole > (~std::uint64_t{0} >> shift) || scaled % denominator != 0) fail();
  std::uint64_t bytes = whole << shift;
  if (__builtin_add_overflow(bytes, scaled / denominator, &bytes)) fail();
  return bytes;
}

QD_FUNC arch parse_arch(std::string_view var, std::string_view v) {
  std::string s = lower(v);
  for (arch a : {arch::cpu, arch::cuda, arch::amdgpu, arch::metal, arch::vulkan, arch::reference})
    if (s == name(a)) return a;
  if (s == "x64" || s == "host") return arch::cpu;
  bad_variable(var, v, "cpu, cuda, amdgpu, metal, vulkan, reference");
}

QD_FUNC per_offload_mode parse_per_offload(std::string_view var, std::string_view v) {
  std::string s = lower(v);
  if (s == "auto" || s == "automatic") return per_offload_mode::automatic;
  if (s == "on" || s == "1" || s == "true") return per_offload_mode::on;
  if (s == "off" || s == "0" || s == "false") return per_offload_mode::off;
  bad_variable(var, v, "auto, on, off");
}

QD_FUNC log_level parse_log_level(std::string_view var, std::string_view v) {
  std::string s = lower(v);
  for (log_level l : {log_level::trace, log_level::debug, log_level::info, log_level::warn, log_level::error,
                      log_level::critical, log_level::off})
    if (s == name(l)) return l;
  if (s == "warning") return log_level::warn;
  bad_variable(var, v, "trace, debug, info, warn, error, critical, off");
}

QD_FUNC const char* env(const char* var) {
  const char* v = std::getenv(var);
  return v && *v ? v : nullptr;
}

// field (explicit) > variable > default; an explicit field over a set variable logs once.
template <class T, class Parse>
T pick(const std::optional<T>& field, const char* field_name, const char* var, Parse parse, T fallback,
       std::vector<std::string>& overrides) {
  const char* e = env(var);
  if (field) {
    if (e) overrides.push_back(fmt::format("config.{} overrides {}={}", field_name, var, e));
    return *field;
  }
  if (e) return parse(var, e);
  return fallback;
}

// The remote tier's options from the settings. QD_REMOTE_CACHE_LOCK_TTL_MS and
// QD_REMOTE_CACHE_RETRY_MS tune the compile lock's life and the first back-off.
QD_FUNC cache::remote_options remote_options_for(const settings& s) {
  cache::remote_options o;
  o.url = s.remote_cache;
  o.secret = s.remote_cache_secret;
  o.unauthenticated = s.remote_cache_unauthenticated;
  o.read_only = s.remote_cache_read_only;
  o.timeout = std::chrono::milliseconds(s.remote_cache_timeout_ms);
  if (const char* v = env("QD_REMOTE_CACHE_LOCK_TTL_MS"))
    o.lock_ttl = std::chrono::milliseconds(parse_env_integer("QD_REMOTE_CACHE_LOCK_TTL_MS", v, 1, 24ull * 3600 * 1000));
  if (const char* v = env("QD_REMOTE_CACHE_RETRY_MS"))
    o.retry_after = std::chrono::milliseconds(parse_env_integer("QD_REMOTE_CACHE_RETRY_MS", v, 1, 24ull * 3600 * 1000));
  return o;
}

// Upper bounds of int fields: no machine has more threads; sm numbers have 2-3 digits;
// a year is longer than any compile should take.
inline constexpr int max_threads = 4096;
inline constexpr int max_cuda_arch = 999;
inline constexpr int max_compile_timeout = 365 * 24 * 3600;
inline constexpr int max_remote_timeout_ms = 3600 * 1000;  // an hour: a remote tier is of no use beyond

QD_FUNC settings resolve_settings(const config& c) {
  settings s;
  std::vector<std::string> overrides;
  auto as_string = [](std::string_view, std::string_view v) { return std::string(v); };
  // An int field's variable, parsed strictly within the field's range.
  auto int_in = [](int min, int max) {
    return [=](std::string_view var, std::string_view v) {
      return static_cast<int>(
          parse_env_integer(var, v, static_cast<std::uint64_t>(min), static_cast<std::uint64_t>(max)));
    };
  };
  auto as_u64 = [](std::string_view var, std::string_view v) {
    return parse_env_integer(var, v, 0, ~std::uint64_t{0});
  };
  s.requested_arch = pick(c.arch, "arch", "QD_ARCH", parse_arch, arch::cpu, overrides);
  s.arch = s.requested_arch;
  s.offline_cache = pick(c.offline_cache, "offline_cache", "QD_OFFLINE_CACHE", parse_bool, true, overrides);
  s.offline_cache_file_path = pick(c.offline_cache_file_path, "offline_cache_file_path", "QD_OFFLINE_CACHE_FILE_PATH",
                                   as_string, cache::default_root(), overrides);
  s.offline_cache_max_size = pick(c.offline_cache_max_size, "offline_cache_max_size", "QD_OFFLINE_CACHE_MAX_SIZE",
                                  parse_size, std::uint64_t{1} << 30, overrides);
  s.per_offload =
      pick(c.per_offload, "per_offload", "QD_PER_OFFLOAD", parse_per_offload, per_offload_mode::automatic, overrides);
  int hw = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, unsigned{max_threads}));
  s.num_compile_threads = pick(c.num_compile_threads, "num_compile_threads", "QD_NUM_COMPILE_THREADS",
                               int_in(1, max_threads), hw, overrides);
  s.log_level = pick(c.log_level, "log_level", "QD_LOG_LEVEL", parse_log_level, log_level::info, overrides);
  s.fast_math = pick(c.fast_math, "fast_math", "QD_FAST_MATH", parse_bool, false, overrides);
  s.opt_level = pick(c.opt_level, "opt_level", "QD_OPT_LEVEL", int_in(0, 3), 2, overrides);
  s.check_out_of_bound =
      pick(c.check_out_of_bound, "check_out_of_bound", "QD_CHECK_OUT_OF_BOUND", parse_bool, false, overrides);
  s.debug_dump_path =
      pick(c.debug_dump_path, "debug_dump_path", "QD_DEBUG_DUMP_PATH", as_string, std::string("qd_dump"), overrides);
  bool dump_ir = env("QD_DUMP_IR") ? parse_bool("QD_DUMP_IR", env("QD_DUMP_IR")) : false;
  s.print_ir = pick(c.print_ir, "print_ir", "QD_PRINT_IR", parse_bool, dump_ir, overrides);
  s.kernel_coverage = pick(c.kernel_coverage, "kernel_coverage", "QD_KERNEL_COVERAGE", parse_bool, false, overrides);
  s.compile_only = pick(c.compile_only, "compile_only", "QD_COMPILE_ONLY", parse_bool, false, overrides);
  s.cuda_arch = pick(c.cuda_arch, "cuda_arch", "QD_CUDA_ARCH", int_in(0, max_cuda_arch), 0, overrides);
  s.amdgpu_arch = pick(c.amdgpu_arch, "amdgpu_arch", "QD_AMDGPU_ARCH", as_string, std::string(), overrides);
  s.enable_fallback = pick(c.enable_fallback, "enable_fallback", "QD_ENABLE_FALLBACK", parse_bool, true, overrides);
  s.random_seed = pick(c.random_seed, "random_seed", "QD_RANDOM_SEED", as_u64, std::uint64_t{0}, overrides);
  s.cpu_max_num_threads = pick(c.cpu_max_num_threads, "cpu_max_num_threads", "QD_CPU_MAX_NUM_THREADS",
                               int_in(1, max_threads), hw, overrides);
  s.remote_cache = pick(c.remote_cache, "remote_cache", "QD_REMOTE_CACHE", as_string, std::string(), overrides);
  s.remote_cache_read_only = pick(c.remote_cache_read_only, "remote_cache_read_only", "QD_REMOTE_CACHE_READ_ONLY",
                                  parse_bool, false, overrides);
  // The secret never reaches a log line.
  if (c.remote_cache_secret && env("QD_REMOTE_CACHE_SECRET"))
    overrides.push_back("config.remote_cache_secret overrides QD_REMOTE_CACHE_SECRET");
  s.remote_cache_secret = c.remote_cache_secret           ? *c.remote_cache_secret
                          : env("QD_REMOTE_CACHE_SECRET") ? std::string(env("QD_REMOTE_CACHE_SECRET"))
                                                          : std::string();
  s.remote_cache_timeout_ms = pick(c.remote_cache_timeout_ms, "remote_cache_timeout_ms", "QD_REMOTE_CACHE_TIMEOUT_MS",
                                   int_in(1, max_remote_timeout_ms), 100, overrides);
  s.remote_cache_unauthenticated = pick(c.remote_cache_unauthenticated, "remote_cache_unauthenticated",
                                        "QD_REMOTE_CACHE_UNAUTHENTICATED", parse_bool, false, overrides);
  // A bad value is blamed on where it came from: the field if set, else its variable.
  auto source = [](bool field_set, const char* field, const char* var, int value) {
    return field_set ? fmt::format("config.{} = {}", field, value)
                     : fmt::format("environment variable {}={}", var, value);
  };
  if (s.cpu_max_num_threads < 1)
    throw user_error(fmt::format("{}: use 1 or more", source(c.cpu_max_num_threads.has_value(), "cpu_max_num_threads",
                                                             "QD_CPU_MAX_NUM_THREADS", s.cpu_max_num_threads)));
  if (s.opt_level < 0 || s.opt_level > 3)
    throw user_error(fmt::format("{} is out of range; use 0, 1, 2 or 3",
                                 source(c.opt_level.has_value(), "opt_level", "QD_OPT_LEVEL", s.opt_level)));
  if (s.num_compile_threads < 1)
    throw user_error(fmt::format("{}: use 1 or more", source(c.num_compile_threads.has_value(), "num_compile_threads",
                                                             "QD_NUM_COMPILE_THREADS", s.num_compile_threads)));
  if (!s.remote_cache.empty() && s.remote_cache_timeout_ms < 1)
    throw user_error(fmt::format("{}: use 1 or more (milliseconds; the default is 100)",
                                 source(c.remote_cache_timeout_ms.has_value(), "remote_cache_timeout_ms",
                                        "QD_REMOTE_CACHE_TIMEOUT_MS", s.remote_cache_timeout_ms)));
  // Configuration mistakes are errors now; the server itself is reached lazily.
  if (!s.remote_cache.empty()) cache::check_remote_options(remote_options_for(s));
  s.compile_timeout =
      pick(c.compile_timeout, "compile_timeout", "QD_COMPILE_TIMEOUT", int_in(0, max_compile_timeout), 600, overrides);
  s.graph_max_iterations = pick(c.graph_max_iterations, "graph_max_iterations", "QD_GRAPH_MAX_ITERATIONS", as_u64,
                                std::uint64_t{0}, overrides);
  s.debug = pick(c.debug, "debug", "QD_DEBUG", parse_bool, false, overrides);
  if (s.debug) s.check_out_of_bound = true;  // debug mode checks every index too
  s.deterministic_reductions = pick(c.deterministic_reductions, "deterministic_reductions",
                                    "QD_DETERMINISTIC_REDUCTIONS", parse_bool, false, overrides);
  // Fields set in code: the same ranges as their variables.
  auto check = [](const char* field, int value, int min, int max) {
    if (value < min || value > max)
      throw user_error(fmt::format("config.{} = {} is out of range; use {}..{}", field, value, min, max));
  };
  check("opt_level", s.opt_level, 0, 3);
  check("num_compile_threads", s.num_compile_threads, 1, max_threads);
  check("cpu_max_num_threads", s.cpu_max_num_threads, 1, max_threads);
  check("cuda_arch", s.cuda_arch, 0, max_cuda_arch);
  check("compile_timeout", s.compile_timeout, 0, max_compile_timeout);
  check("remote_cache_timeout_ms", s.remote_cache_timeout_ms, 1, max_remote_timeout_ms);
  set_log_level(s.log_level);
  for (const auto& o : overrides) log_write(log_level::info, o);
  return s;
}

}  // namespace detail

QD_FUNC qd::arch init_best_available(const config& c) {
  // An arch asked for, or compile-only mode (which needs no device), is the user's choice.
  if (!c.arch && !detail::env("QD_ARCH") && !c.compile_only && !detail::env("QD_COMPILE_ONLY")) {
    for (const backend::description& b : backend::backends()) {
      if (!b.preferred) continue;
      config probe = c;
      probe.arch = b.arch;
      probe.enable_fallback = false;  // a missing device throws instead of warning and falling back
      try {
        init(probe);
        return b.arch;
      } catch (const user_error&) {
        // this device, its driver or its compiler is missing: try the next
      }
    }
  }
  init(c);
  return current_settings().arch;
}

}  // namespace qd::inline v0
