// Helpers of the Vulkan tests: opening the device (or reporting the test skipped, with
// the reason), spirv-val on a module, and running a traced kernel through any device the
// way the runtime does -- plan, lower, emit GLSL and compile (or hand the IR to the
// reference interpreter), load, and launch each task with the same random streams.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <quadrants/quadrants.hpp>

#include "quadrants/analysis/atomic_demotion.hpp"
#include "quadrants/analysis/split.hpp"
#include "quadrants/analysis/task_plan.hpp"
#include "quadrants/backend/reference/device.hpp"
#include "quadrants/backend/vulkan/device.hpp"
#include "quadrants/backend/vulkan/spirv_bundle.hpp"
#include "quadrants/codegen/glsl_emitter.hpp"
#include "quadrants/codegen/glsl_prelude.hpp"
#include "quadrants/codegen/lower.hpp"
#include "quadrants/ir/dce.hpp"
#include "quadrants/lang/kernel_signature.hpp"

namespace qd_test {

// The Vulkan device, or null after reporting the test skipped and why (no loader, no
// driver, no shaderc). CI installs lavapipe, so there it always opens.
inline std::unique_ptr<qd::backend::vulkan::vulkan_device> open_vulkan(qd::backend::vulkan::device_options o = {}) {
  try {
    return qd::backend::vulkan::make_device(o);
  } catch (const qd::driver_error& e) {
    const std::string why = std::string("skipped: no Vulkan device: ") + e.what();
    MESSAGE(why);
    return nullptr;
  }
}

// spirv-val's verdict on a module: empty when it accepts it, else its output. Without
// spirv-val (the spirv-tools package) the check is reported skipped and passes.
inline std::string spirv_val_rejects(const std::vector<std::uint32_t>& words) {
  static const bool installed = std::system("spirv-val --version > /dev/null 2>&1") == 0;
  if (!installed) {
    MESSAGE("spirv-val not installed (spirv-tools): module not validated");
    return {};
  }
  char path[] = "/tmp/qd-spirv-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, words.data(), words.size() * 4) == static_cast<ssize_t>(words.size() * 4));
  ::close(fd);
  std::string out;
  const std::string command = std::string("spirv-val --target-env vulkan1.2 ") + path + " 2>&1";
  FILE* p = ::popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  char buffer[512];
  while (std::fgets(buffer, sizeof(buffer), p)) out += buffer;
  const int status = ::pclose(p);
  ::unlink(path);
  return status == 0 ? std::string() : (out.empty() ? std::string("spirv-val failed") : out);
}

// The IR of a kernel body, as the runtime traces it (kernel_state's ensure_traced).
template <class F>
qd::ir::function trace_kernel_ir(const F& body) {
  qd::detail::tracer t("vulkan_test", {});
  qd::detail::trace_kernel(body, t);
  qd::ir::eliminate_dead_code(t.fn);
  qd::analysis::demote_owned_updates(t.fn);
  return std::move(t.fn);
}

// One kernel argument on the host: an array's bytes (and gradient), or a scalar's bits.
struct kernel_arg {
  bool is_array = false;
  std::vector<std::byte> bytes, grad;
  std::int64_t shape[4] = {0, 0, 0, 0};
  std::uint64_t scalar_bits = 0;

  template <class T>
  static kernel_arg array(const std::vector<T>& values, std::vector<std::int64_t> shape = {}) {
    kernel_arg a;
    a.is_array = true;
    a.bytes.resize(values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
    if (shape.empty()) shape = {static_cast<std::int64_t>(values.size())};
    for (std::size_t d = 0; d < shape.size(); ++d) a.shape[d] = shape[d];
    return a;
  }
  template <class T>
  static kernel_arg scalar(T v) {
    kernel_arg a;
    std::memcpy(&a.scalar_bits, &v, sizeof(T));
    return a;
  }
  template <class T>
  std::vector<T> values() const {
    std::vector<T> v(bytes.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
    return v;
  }
};

struct run_options {
  bool split = false;  // the per-offload plan (REQUIREs that the kernel splits), else the whole kernel
  bool bounds_checks = false;
  std::uint64_t launch_no = 0;                     // the random streams are those of this launch of a program seeded 0
  std::optional<qd::codegen::glsl_target> target;  // Vulkan: emit for this target (default: the device's)
};

struct run_result {
  std::int64_t error[5] = {0, 0, 0, 0, 0};  // the first failed launch's record
  std::string source;                       // Vulkan: the GLSL compiled
  std::size_t tasks = 0;
  std::vector<std::vector<std::uint32_t>> modules;  // Vulkan: the SPIR-V of each task
};

// The random stream of a task, as runtime/launch-inl.hpp derives it (seed 0).
inline std::uint64_t task_stream(std::uint64_t launch_no, const qd::analysis::task& t) {
  const std::uint64_t salt = t.construct >= 0 ? static_cast<std::uint64_t>(t.construct)
                                              : 0x100000000ull + static_cast<std::uint64_t>(t.run >= 0 ? t.run : 0);
  auto mix = [](std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  return mix(0 ^ mix(launch_no * 0x9e3779b97f4a7c15ull ^ mix(salt + 1)));
}

// Runs `fn` on `d` with `args` (arrays copied in and back), as the runtime would. On
// Vulkan every task's module must pass spirv-val.
inline run_result run_kernel(qd::backend::device& d, const qd::ir::function& fn, std::vector<kernel_arg>& args,
                             const run_options& o = {}) {
  namespace qa = qd::analysis;
  run_result result;
  REQUIRE(args.size() == fn.params.size());
  const qa::kernel_structure s = qa::analyze_structure(fn);
  qa::task_plan plan;
  if (o.split) {
    qa::split_decision split = qa::plan_split(fn, s);
    REQUIRE_MESSAGE(split.reason == qd::fallback_reason::none, "the kernel does not split");
    plan = std::move(split.plan);
  } else {
    plan = qa::plan_whole_kernel(fn, s);
  }
  std::vector<qd::codegen::lowered_task> lowered;
  std::vector<std::string> entries;
  for (std::size_t k = 0; k < plan.tasks.size(); ++k) {
    lowered.push_back(qd::codegen::lower_task(fn, s, plan.tasks[k], plan));
    qd::codegen::verify(lowered.back());
    entries.push_back("qd_task" + std::to_string(k));
  }
  result.tasks = lowered.size();
  std::unique_ptr<qd::backend::loaded_module> module;
  if (d.name() == "reference") {  // its build interprets the lowered tasks
    std::vector<const qd::codegen::lowered_task*> tasks;
    for (const auto& t : lowered) tasks.push_back(&t);
    module = d.build({tasks, entries, {}}, "kernel 'test'").module;
  } else {
    auto& vk = dynamic_cast<qd::backend::vulkan::vulkan_device&>(d);
    const qd::codegen::glsl_target target = o.target.value_or(vk.glsl_target());
    std::string source = qd::codegen::glsl_prelude(target);
    for (std::size_t k = 0; k < lowered.size(); ++k)
      source += qd::codegen::emit_glsl_task(lowered[k], entries[k], {o.bounds_checks, target}, "kernel 'test'");
    result.source = source;
    const std::vector<std::byte> binary = d.compile(source, "kernel 'test'");
    auto shaders = qd::backend::vulkan::decode_bundle(binary);
    REQUIRE(shaders.has_value());
    for (const auto& shader : *shaders) {
      const std::string rejected = spirv_val_rejects(shader.spirv);
      CAPTURE(shader.task.entry);
      CHECK_MESSAGE(rejected.empty(), "spirv-val rejects the module: " << rejected << "\n" << source);
      result.modules.push_back(shader.spirv);
    }
    module = d.load(binary, "kernel 'test'");
  }

  std::vector<void*> data(args.size(), nullptr), grad(args.size(), nullptr);
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!args[i].is_array) continue;
    data[i] = d.allocate(args[i].bytes.size());
    d.copy_from_host(data[i], args[i].bytes.data(), args[i].bytes.size());
    if (!args[i].grad.empty()) {
      grad[i] = d.allocate(args[i].grad.size());
      d.copy_from_host(grad[i], args[i].grad.data(), args[i].grad.size());
    }
  }
  void* temps = plan.temps.empty()
                    ? nullptr
                    : d.allocate(static_cast<std::size_t>(qd::limits::temp_slot_count) * qd::limits::temp_slot_bytes);
  for (std::size_t k = 0; k < lowered.size(); ++k) {
    const auto& t = lowered[k];
    std::vector<qd::backend::array_abi> arrays(t.param_map.size());
    std::vector<std::uint64_t> scalars(t.param_map.size(), 0);
    for (std::size_t j = 0; j < t.param_map.size(); ++j) {
      const auto p = static_cast<std::size_t>(t.param_map[j]);
      if (args[p].is_array) {
        arrays[j].data = data[p];
        arrays[j].grad = grad[p];
        for (int dim = 0; dim < 4; ++dim) arrays[j].shape[dim] = args[p].shape[dim];
      } else {
        scalars[j] = args[p].scalar_bits;
      }
    }
    const unsigned block_dim = t.parallel ? static_cast<unsigned>(std::max(0, t.fn.at(t.fn.block(0).back()).param)) : 0;
    qd::backend::launch_context ctx{arrays.data(),
                                    scalars.data(),
                                    t.param_map.size(),
                                    static_cast<unsigned char*>(temps),
                                    task_stream(o.launch_no, plan.tasks[k]),
                                    result.error,
                                    o.bounds_checks,
                                    true,
                                    block_dim,
                                    nullptr};
    d.launch(module->entry(entries[k]), t.parallel, ctx);
    if (result.error[0] != 0) break;  // the runtime throws here
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!args[i].is_array) continue;
    d.copy_to_host(args[i].bytes.data(), data[i], args[i].bytes.size());
    d.release(data[i]);
    if (grad[i]) {
      d.copy_to_host(args[i].grad.data(), grad[i], args[i].grad.size());
      d.release(grad[i]);
    }
  }
  if (temps) d.release(temps);
  return result;
}

}  // namespace qd_test
