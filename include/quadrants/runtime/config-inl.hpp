// Implementation of runtime/config.hpp: names and the QD_* variable parsing.
#pragma once

#include <cctype>
#include <cerrno>
#include <chrono>
#include <vector>
#include <cstdlib>
#include <thread>

#include "quadrants/base/error.hpp"
#include "quadrants/cache/remote.hpp"
#include "quadrants/cache/store.hpp"
#include "quadrants/detail/format.hpp"
#include "quadrants/runtime/config.hpp"
#include "quadrants/runtime/program.hpp"

namespace qd {

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

QD_FUNC std::int64_t parse_int(std::string_view var, std::string_view v) {
  std::string s(v);
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE) bad_variable(var, v, "an integer");
  return x;
}

QD_FUNC std::uint64_t parse_size(std::string_view var, std::string_view v) {
  std::string s(v);
  char* end = nullptr;
  double x = std::strtod(s.c_str(), &end);
  if (s.empty() || end == s.c_str() || x < 0) bad_variable(var, v, "a size such as 1073741824, 512M or 2G");
  std::string unit = lower(end);
  double scale = 1;
  if (unit == "" || unit == "b") scale = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib") scale = 1024.0;
  else if (unit == "m" || unit == "mb" || unit == "mib") scale = 1024.0 * 1024;
  else if (unit == "g" || unit == "gb" || unit == "gib") scale = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "tb" || unit == "tib") scale = 1024.0 * 1024 * 1024 * 1024;
  else bad_variable(var, v, "a size such as 1073741824, 512M or 2G");
  return static_cast<std::uint64_t>(x * scale);
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
    o.lock_ttl = std::chrono::milliseconds(parse_int("QD_REMOTE_CACHE_LOCK_TTL_MS", v));
  if (const char* v = env("QD_REMOTE_CACHE_RETRY_MS"))
    o.retry_after = std::chrono::milliseconds(parse_int("QD_REMOTE_CACHE_RETRY_MS", v));
  return o;
}

QD_FUNC settings resolve_settings(const config& c) {
  settings s;
  std::vector<std::string> overrides;
  auto as_string = [](std::string_view, std::string_view v) { return std::string(v); };
  auto as_int = [](std::string_view var, std::string_view v) { return static_cast<int>(parse_int(var, v)); };
  auto as_u64 = [](std::string_view var, std::string_view v) { return static_cast<std::uint64_t>(parse_int(var, v)); };
  s.requested_arch = pick(c.arch, "arch", "QD_ARCH", parse_arch, arch::cpu, overrides);
  s.arch = s.requested_arch;
  s.offline_cache = pick(c.offline_cache, "offline_cache", "QD_OFFLINE_CACHE", parse_bool, true, overrides);
  s.offline_cache_file_path = pick(c.offline_cache_file_path, "offline_cache_file_path",
                                   "QD_OFFLINE_CACHE_FILE_PATH", as_string, cache::default_root(), overrides);
  s.offline_cache_max_size = pick(c.offline_cache_max_size, "offline_cache_max_size", "QD_OFFLINE_CACHE_MAX_SIZE",
                                  parse_size, std::uint64_t{1} << 30, overrides);
  s.per_offload = pick(c.per_offload, "per_offload", "QD_PER_OFFLOAD", parse_per_offload,
                       per_offload_mode::automatic, overrides);
  int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  s.num_compile_threads = pick(c.num_compile_threads, "num_compile_threads", "QD_NUM_COMPILE_THREADS", as_int, hw, overrides);
  s.log_level = pick(c.log_level, "log_level", "QD_LOG_LEVEL", parse_log_level, log_level::info, overrides);
  s.fast_math = pick(c.fast_math, "fast_math", "QD_FAST_MATH", parse_bool, false, overrides);
  s.opt_level = pick(c.opt_level, "opt_level", "QD_OPT_LEVEL", as_int, 2, overrides);
  s.check_out_of_bound = pick(c.check_out_of_bound, "check_out_of_bound", "QD_CHECK_OUT_OF_BOUND", parse_bool, false, overrides);
  s.debug_dump_path = pick(c.debug_dump_path, "debug_dump_path", "QD_DEBUG_DUMP_PATH", as_string,
                           std::string("qd_dump"), overrides);
  bool dump_ir = env("QD_DUMP_IR") ? parse_bool("QD_DUMP_IR", env("QD_DUMP_IR")) : false;
  s.print_ir = pick(c.print_ir, "print_ir", "QD_PRINT_IR", parse_bool, dump_ir, overrides);
  s.kernel_coverage = pick(c.kernel_coverage, "kernel_coverage", "QD_KERNEL_COVERAGE", parse_bool, false, overrides);
  s.compile_only = pick(c.compile_only, "compile_only", "QD_COMPILE_ONLY", parse_bool, false, overrides);
  s.cuda_arch = pick(c.cuda_arch, "cuda_arch", "QD_CUDA_ARCH", as_int, 0, overrides);
  s.amdgpu_arch = pick(c.amdgpu_arch, "amdgpu_arch", "QD_AMDGPU_ARCH", as_string, std::string(), overrides);
  s.enable_fallback = pick(c.enable_fallback, "enable_fallback", "QD_ENABLE_FALLBACK", parse_bool, true, overrides);
  s.random_seed = pick(c.random_seed, "random_seed", "QD_RANDOM_SEED", as_u64, std::uint64_t{0}, overrides);
  s.cpu_max_num_threads = pick(c.cpu_max_num_threads, "cpu_max_num_threads", "QD_CPU_MAX_NUM_THREADS", as_int, hw, overrides);
  s.remote_cache = pick(c.remote_cache, "remote_cache", "QD_REMOTE_CACHE", as_string, std::string(), overrides);
  s.remote_cache_read_only = pick(c.remote_cache_read_only, "remote_cache_read_only", "QD_REMOTE_CACHE_READ_ONLY",
                                  parse_bool, false, overrides);
  // The secret never reaches a log line.
  if (c.remote_cache_secret && env("QD_REMOTE_CACHE_SECRET"))
    overrides.push_back("config.remote_cache_secret overrides QD_REMOTE_CACHE_SECRET");
  s.remote_cache_secret = c.remote_cache_secret ? *c.remote_cache_secret
                          : env("QD_REMOTE_CACHE_SECRET") ? std::string(env("QD_REMOTE_CACHE_SECRET"))
                                                          : std::string();
  s.remote_cache_timeout_ms = pick(c.remote_cache_timeout_ms, "remote_cache_timeout_ms", "QD_REMOTE_CACHE_TIMEOUT_MS",
                                   as_int, 100, overrides);
  s.remote_cache_unauthenticated = pick(c.remote_cache_unauthenticated, "remote_cache_unauthenticated",
                                        "QD_REMOTE_CACHE_UNAUTHENTICATED", parse_bool, false, overrides);
  // A bad value is blamed on where it came from: the field if set, else its variable.
  auto source = [](bool field_set, const char* field, const char* var, int value) {
    return field_set ? fmt::format("config.{} = {}", field, value) : fmt::format("environment variable {}={}", var, value);
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
  set_log_level(s.log_level);
  for (const auto& o : overrides) log_write(log_level::info, o);
  return s;
}

}  // namespace detail

QD_FUNC qd::arch init_best_available(const config& c) {
  // An arch asked for, or compile-only mode (which needs no device), is the user's choice.
  if (!c.arch && !detail::env("QD_ARCH") && !c.compile_only && !detail::env("QD_COMPILE_ONLY")) {
    for (qd::arch gpu : {arch::cuda, arch::amdgpu}) {
      config probe = c;
      probe.arch = gpu;
      probe.enable_fallback = false;  // a missing GPU throws instead of warning and falling back
      try {
        init(probe);
        return gpu;
      } catch (const user_error&) {
        // this GPU, its driver or its compiler is missing: try the next
      }
    }
  }
  init(c);
  return current_settings().arch;
}

}  // namespace qd
