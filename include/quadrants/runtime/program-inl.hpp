// Implementation of runtime/program.hpp, qd::init and qd::reset.
#pragma once

#include "quadrants/backend/amdgpu/device.hpp"
#include "quadrants/backend/cpu/device.hpp"
#include "quadrants/backend/cuda/device.hpp"
#include "quadrants/backend/reference/device.hpp"
#include "quadrants/cache/store.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/detail/format.hpp"
#include "quadrants/runtime/program.hpp"

namespace qd {
namespace detail {

QD_FUNC std::unique_ptr<program>& program_slot() {
  static std::unique_ptr<program> slot;
  return slot;
}

QD_FUNC std::mutex& init_mutex() {
  static std::mutex m;
  return m;
}

// A CUDA or AMD GPU device (or a compile-only one), per the settings.
QD_FUNC std::shared_ptr<backend::device> make_gpu_device(const settings& s) {
  if (s.arch == arch::cuda) {
    backend::cuda::device_options o;
    o.arch = s.cuda_arch;
    o.compile_only = s.compile_only;
    o.opt_level = s.opt_level;
    o.fast_math = s.fast_math;
    return backend::cuda::make_device(o);
  }
  backend::amdgpu::device_options o;
  o.arch = s.amdgpu_arch;
  o.compile_only = s.compile_only;
  o.opt_level = s.opt_level;
  o.fast_math = s.fast_math;
  return backend::amdgpu::make_device(o);
}

// The device for the requested arch, or the CPU with one warning when that arch
// is unavailable and fallback is enabled.
QD_FUNC std::shared_ptr<backend::device> make_device(settings& s) {
  backend::cpu::device_options cpu_options;
  cpu_options.compile.opt_level = s.opt_level;
  cpu_options.compile.fast_math = s.fast_math;
  cpu_options.compile.timeout_seconds = s.compile_timeout;
  cpu_options.threads = static_cast<unsigned>(s.cpu_max_num_threads);
  if (s.arch == arch::cpu) return backend::cpu::make_device(cpu_options);
  if (s.arch == arch::reference) {
    s.check_out_of_bound = true;  // the interpreter checks every index; errors name the parameter
    return backend::reference::make_device();
  }
  std::string why;
  if (s.arch == arch::cuda || s.arch == arch::amdgpu) {
    try {
      return make_gpu_device(s);
    } catch (const driver_error& e) {  // a library, a symbol or the GPU is missing
      why = e.what();
    }
  } else {
    why = fmt::format("the {} backend is not available in this build of Quadrants (not supported on this platform)",
                      name(s.arch));
  }
  if (!s.enable_fallback)
    throw user_error(fmt::format("qd::init(arch = {}): {}. Use arch = cpu, or set enable_fallback = true to fall back "
                                 "to the CPU",
                                 name(s.arch), why));
  log_fmt(log_level::warn, "qd::init(arch = {}): {}; falling back to arch = cpu", name(s.arch), why);
  s.arch = arch::cpu;
  return backend::cpu::make_device(cpu_options);
}

QD_FUNC program::program(settings s, std::uint64_t id) : settings_(std::move(s)), id_(id) {
  device_ = make_device(settings_);
  if (settings_.offline_cache) {
    cache::store_options options;
    options.root = settings_.offline_cache_file_path;
    options.max_size = settings_.offline_cache_max_size;
    store_ = std::make_unique<cache::store>(std::move(options));
  }
}

QD_FUNC program::~program() = default;

QD_FUNC const cache::key_builder& program::environment() {
  std::call_once(environment_once_, [&] {
    auto b = std::make_unique<cache::key_builder>();
    b->add(std::uint64_t{cache::format_version})
        .add(QD_VERSION_STRING)
        .add(device_->name())
        .add(device_->target())
        .add(device_->code_options())
        .add(settings_.check_out_of_bound ? "check_out_of_bound" : "unchecked")
        .add(device_->compiler_identity())
        .add(device_->prelude());  // the generated code's own definitions
    environment_ = std::move(b);
  });
  return *environment_;
}

QD_FUNC std::shared_ptr<backend::loaded_module> program::find_module(const cache::key& k) {
  std::lock_guard lock(modules_mutex_);
  auto it = modules_.find(k);
  return it == modules_.end() ? nullptr : it->second;
}

QD_FUNC void program::remember_module(const cache::key& k, std::shared_ptr<backend::loaded_module> m) {
  std::lock_guard lock(modules_mutex_);
  modules_.emplace(k, std::move(m));
}

QD_FUNC program& current_program(std::string_view what) {
  program* p = active_program.load(std::memory_order_acquire);
  if (p == nullptr)
    throw user_error(fmt::format("{}: Quadrants is not initialized; call qd::init() first (qd::reset() ends a "
                                 "program, and a new qd::init() starts another)",
                                 what));
  return *p;
}

}  // namespace detail

QD_FUNC void init(const config& c) {
  std::lock_guard lock(detail::init_mutex());
  static std::uint64_t next_id = 1;
  if (detail::program_slot()) {
    detail::active_program.store(nullptr, std::memory_order_release);
    detail::program_slot().reset();
  }
  settings s = detail::resolve_settings(c);
  auto p = std::make_unique<detail::program>(std::move(s), next_id++);
  detail::active_program.store(p.get(), std::memory_order_release);
  detail::program_slot() = std::move(p);
  detail::log_fmt(log_level::debug, "qd::init: arch = {}", name(detail::program_slot()->config().arch));
}

QD_FUNC void reset() {
  std::lock_guard lock(detail::init_mutex());
  detail::active_program.store(nullptr, std::memory_order_release);
  detail::program_slot().reset();
}

QD_FUNC bool is_initialized() noexcept { return detail::active_program.load(std::memory_order_acquire) != nullptr; }

QD_FUNC const settings& current_settings() { return detail::current_program("qd::current_settings").config(); }

}  // namespace qd
