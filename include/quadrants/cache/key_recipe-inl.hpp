// Implementation of cache/key_recipe.hpp.
#pragma once

#include "quadrants/backend/device.hpp"
#include "quadrants/cache/key_recipe.hpp"
#include "quadrants/codegen/cpp_emitter.hpp"
#include "quadrants/codegen/generator_id.hpp"
#include "quadrants/codegen/lower.hpp"
#include "quadrants/ir/serialize.hpp"

namespace qd::inline v0::cache {

QD_FUNC key_builder environment_key(const backend::device& d, bool bounds_checks) {
  key_builder b;
  b.add(std::uint64_t{format_version})
      .add(QD_VERSION_STRING)
      .add(d.name())
      .add(d.target())
      .add(d.code_options())
      .add(bounds_checks ? "check_out_of_bound" : "unchecked")
      .add(d.compiler_identity())
      .add(d.prelude());
  return b;
}

QD_FUNC void add_code_identity(key_builder& b, const codegen::lowered_task& t, const codegen::emit_options& options) {
  b.add(codegen::generator_id).add(ir::canonical_bytes(t.fn)).add(t.parallel ? "parallel" : "serial");
  // Not t.param_map (the code numbers the task's own parameters; the launch maps them, so
  // an offload keeps its key when other constructs' parameters shift), nor
  // options.kernel (it only names the kernel in the generator's errors).
  b.add(options.bounds_checks ? "bounds" : "unchecked")
      .add(options.deterministic_reductions ? "deterministic" : "any order")
      .add(static_cast<std::uint64_t>(options.reduction_scratch_offset))
      .add(options.wide_offsets ? "64-bit offsets" : "32-bit offsets");
}

QD_FUNC key kernel_key(const key_builder& environment, const ir::function& traced,
                       std::span<const codegen::lowered_task* const> tasks,
                       std::span<const codegen::emit_options> options) {
  key_builder b = environment;
  b.add("kernel").add(ir::canonical_bytes(traced)).add(static_cast<std::uint64_t>(tasks.size()));
  for (std::size_t t = 0; t < tasks.size(); ++t) add_code_identity(b, *tasks[t], options[t]);
  return b.finish();
}

QD_FUNC key offload_key(const key_builder& environment, const codegen::lowered_task& task,
                        const codegen::emit_options& options) {
  key_builder b = environment;
  b.add("offload");
  add_code_identity(b, task, options);
  return b.finish();
}

QD_FUNC key variant_key(const key_builder& environment, const ir::function& traced,
                        std::span<const std::uint64_t> plan_shape, bool deterministic_reductions) {
  // One buffer per thread for the bytes (a kernel's are ~45 bytes a node): a warm start
  // keys every kernel, and fresh memory for each is a page fault every 4 KiB.
  thread_local std::string bytes;
  ir::exact_bytes(traced, bytes);
  key_builder b = environment;
  b.add("variant").add(codegen::generator_id).add(bytes);
  if (bytes.capacity() > (std::size_t{8} << 20)) std::string().swap(bytes);  // a giant kernel's stays its own
  b.add(deterministic_reductions ? "deterministic" : "any order").add(static_cast<std::uint64_t>(plan_shape.size()));
  for (std::uint64_t v : plan_shape) b.add(v);
  return b.finish();
}

QD_FUNC std::string offload_entry(const key& offload) { return "qd_o" + offload.hex(); }

QD_FUNC std::optional<key> offload_of_entry(std::string_view entry) {
  if (!entry.starts_with("qd_o")) return std::nullopt;
  return key::from_hex(entry.substr(4));
}

QD_FUNC key module_key(const key_builder& environment, std::string_view program) {
  key_builder b = environment;
  return b.add("module").add(program).finish();
}

QD_FUNC key explained_kernel(const key_builder& environment, std::string_view kernel_name, const ir::function& traced) {
  key_builder b = environment;
  return b.add("explain").add(kernel_name).add(ir::canonical_bytes(traced)).finish();
}

QD_FUNC key explain_key(const key& explained, std::string_view variant) {
  return key_builder().add("explain variant").add(explained.lo).add(explained.hi).add(variant).finish();
}

}  // namespace qd::inline v0::cache
