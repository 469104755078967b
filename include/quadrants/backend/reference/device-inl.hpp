// Implementation of backend/reference/device.hpp.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <unordered_map>

#include "quadrants/backend/reference/device.hpp"
#include "quadrants/backend/host_memory.hpp"
#include "quadrants/backend/reference/interpreter.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::backend::reference {
namespace detail {

// The "module" of an interpreting device: the prepared tasks, by entry name.
// Identical offloads share an entry name; the first one answers for all.
class interpreted_module final : public loaded_module {
 public:
  interpreted_module(std::span<const codegen::lowered_task* const> tasks, std::span<const std::string> entries) {
    if (tasks.size() != entries.size())
      throw internal_error("reference backend: a build needs one entry name per task");
    tasks_.reserve(tasks.size());
    for (std::size_t t = 0; t < tasks.size(); ++t) {
      tasks_.push_back(std::make_unique<task_interpreter>(*tasks[t]));
      by_name_.emplace(entries[t], tasks_.back().get());
    }
  }
  void* entry(const std::string& name) const override {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) throw internal_error(fmt::format("reference backend: no task named '{}'", name));
    return const_cast<task_interpreter*>(it->second);
  }

 private:
  std::vector<std::unique_ptr<task_interpreter>> tasks_;
  std::unordered_map<std::string, const task_interpreter*> by_name_;
};

class reference_device final : public device {
 public:
  std::string_view name() const override { return "reference"; }
  device_traits traits() const override { return {.always_checks_bounds = true, .concurrent_launches = true}; }
  std::string target() const override { return "reference-interpreter"; }
  std::string compiler_identity() const override { return "none"; }
  std::string code_options() const override { return ""; }

  void* allocate(std::size_t bytes) override { return allocate_host_memory(bytes); }
  void release(void* p) noexcept override { release_host_memory(p); }
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }

  // Its build interprets the lowered tasks: no source, no binary, nothing to cache.
  std::string emit(const codegen::lowered_task&, std::string_view, const codegen::emit_options&) const override {
    return {};
  }
  std::string program(std::span<const std::string>) const override { return {}; }
  built_program build(const program_source& source, std::string_view) override {
    return {{}, std::make_unique<interpreted_module>(source.tasks, source.entries)};
  }
  std::string prelude() const override { return ""; }
  std::vector<std::byte> compile(std::string_view, std::string_view what) override {
    throw internal_error(fmt::format("{}: the reference backend interprets IR and compiles nothing", what));
  }
  std::unique_ptr<loaded_module> load(std::span<const std::byte>, std::string_view what) override {
    throw internal_error(fmt::format("{}: the reference backend interprets IR and loads no binaries", what));
  }

  void launch(void* entry, bool parallel, const launch_context& ctx) override {
    const auto* task = static_cast<const task_interpreter*>(entry);
    if (task->task().parallel != parallel) throw internal_error("reference backend: a task launched as the wrong kind");
    task->run(ctx);
  }
};

}  // namespace detail

QD_FUNC std::unique_ptr<device> make_device() { return std::make_unique<detail::reference_device>(); }

}  // namespace qd::inline v0::backend::reference
