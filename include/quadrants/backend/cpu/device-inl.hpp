// Implementation of backend/cpu/device.hpp.
#pragma once

#include <cstdlib>
#include <cstring>
#include <new>

#include "quadrants/backend/cpu/device.hpp"
#include "quadrants/backend/host_memory.hpp"
#include "quadrants/backend/cpu/module.hpp"
#include "quadrants/backend/cpu/prelude.hpp"
#include "quadrants/backend/cpu/scatter_gate.hpp"
#include "quadrants/backend/cpu/thread_pool.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::backend::cpu {
namespace detail {

class cpu_module final : public loaded_module {
 public:
  cpu_module(std::span<const std::byte> binary, std::string_view what) : m_(binary, what) {}
  void* entry(const std::string& name) const override { return m_.symbol(name); }

 private:
  module m_;
};

class cpu_device final : public device {
 public:
  explicit cpu_device(const device_options& options)
      : options_(options),
        pool_(options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency())) {
    (void)compiler_command();  // a blank QD_CXX is an error at qd::init, not at the first launch
    runtime_.parallel_for = &parallel_for;
    runtime_.parallel_chunks = &parallel_chunks;
    runtime_.parallel_for_nested = &parallel_for_nested;
    runtime_.scatter_begin = &scatter_begin;
    runtime_.scatter_end = &scatter_end;
    runtime_.pool = &pool_;
  }

  std::string_view name() const override { return "cpu"; }
  device_traits traits() const override { return {.concurrent_launches = true}; }
  std::string target() const override {
#if defined(__x86_64__)
    return "x86_64-linux";
#elif defined(__aarch64__)
    return "aarch64-linux";
#else
    return "unknown-cpu";
#endif
  }
  std::string compiler_identity() const override { return compiler_fingerprint(); }
  std::string code_options() const override {
    // Both sets: which one a compile uses follows from the compiler, named by the
    // fingerprint (compiler_identity() above), without running it on a warm start.
    std::string s = "gcc: ";
    for (const auto& f : compile_flags(options_.compile, true)) s += f + " ";
    s += "| other: ";
    for (const auto& f : compile_flags(options_.compile, false)) s += f + " ";
    return s;
  }

  void* allocate(std::size_t bytes) override { return allocate_host_memory(bytes); }
  void release(void* p) noexcept override { release_host_memory(p); }
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }

  std::string prelude() const override { return translation_unit_prelude(); }
  std::vector<std::byte> compile(std::string_view source, std::string_view what) override {
    return compile_shared_object(source, options_.compile, what);
  }
  std::unique_ptr<loaded_module> load(std::span<const std::byte> binary, std::string_view what) override {
    return std::make_unique<cpu_module>(binary, what);
  }
  void launch(void* entry, bool, const launch_context& c) override {
    ctx_abi ctx{c.arrays, c.scalars, c.temps, c.rng_stream, c.error, &runtime_};
    reinterpret_cast<void (*)(const ctx_abi*)>(entry)(&ctx);
  }

 private:
  static void parallel_for(const ctx_abi* ctx, std::int64_t begin, std::int64_t end, chunk_abi chunk,
                           const void* frame) {
    auto* rt = static_cast<const runtime_abi*>(ctx->runtime);
    rt->pool->parallel_for(begin, end, reinterpret_cast<thread_pool::chunk_fn>(chunk), frame, ctx);
  }

  static void parallel_chunks(const ctx_abi* ctx, std::int64_t count, chunk_abi chunk, const void* job) {
    auto* rt = static_cast<const runtime_abi*>(ctx->runtime);
    rt->pool->parallel_chunks(count, reinterpret_cast<thread_pool::chunk_fn>(chunk), job, ctx);
  }

  static void parallel_for_nested(const ctx_abi* ctx, std::int64_t begin, std::int64_t end, chunk_abi chunk,
                                  const void* frame) {
    auto* rt = static_cast<const runtime_abi*>(ctx->runtime);
    rt->pool->parallel_for_nested(begin, end, reinterpret_cast<thread_pool::chunk_fn>(chunk), frame, ctx);
  }

  // Plain updates when the loop runs on this thread alone (kind 2: serial code; 3: chunked
  // reductions, never) and the gate can be held alone; else the gate held shared.
  static int scatter_begin(const ctx_abi* ctx, std::int64_t count, int kind) {
    const thread_pool& pool = *static_cast<const runtime_abi*>(ctx->runtime)->pool;
    const bool alone = kind == 2 || (kind != 3 && pool.runs_on_caller(count, kind == 1));
    if (alone && scatter_gate::try_alone()) return 1;
    scatter_gate::enter_shared();
    return 0;
  }

  static void scatter_end(const ctx_abi*, int plain) { scatter_gate::leave(plain != 0); }

  device_options options_;
  thread_pool pool_;
  runtime_abi runtime_{};
};

}  // namespace detail

QD_FUNC std::unique_ptr<device> make_device(const device_options& options) {
  return std::make_unique<detail::cpu_device>(options);
}

}  // namespace qd::inline v0::backend::cpu
