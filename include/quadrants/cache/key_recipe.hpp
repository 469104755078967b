// The recipe of every cache key: what compiled code depends on, hashed in one place so
// that a launch, kernel.explain() and qd-cache name an entry alike.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "quadrants/base/api.hpp"
#include "quadrants/cache/key.hpp"

namespace qd::inline v0::ir {
struct function;
}
namespace qd::inline v0::codegen {
struct lowered_task;
struct emit_options;
}  // namespace qd::inline v0::codegen
namespace qd::inline v0::backend {
class device;
}

namespace qd::inline v0::cache {

// What compiled code depends on besides its own text: the format and library versions,
// the backend, its target, options and compiler, bounds checks, and the prelude (the
// generated code's own definitions). Every other key starts from it.
QD_FUNC key_builder environment_key(const backend::device& d, bool bounds_checks);

// What the code of a lowered task is a function of, to be hashed in place of the code
// itself (so a warm start generates none): its lowered IR, serial or parallel, the emit
// options that shape it, and the code generator's fingerprint
// (codegen/generator_id.hpp: a change in the generator is another key, never stale code).
// The backend, its target, options and prelude are in the environment.
QD_FUNC void add_code_identity(key_builder& b, const codegen::lowered_task& t, const codegen::emit_options& options);

// A whole kernel (its kernel record and its module): the traced IR and its tasks' code
// identities, in order.
QD_FUNC key kernel_key(const key_builder& environment, const ir::function& traced,
                       std::span<const codegen::lowered_task* const> tasks,
                       std::span<const codegen::emit_options> options);

// One offload (its offload record): its code identity, written with
// offload_entry_placeholder as the entry point's name.
QD_FUNC key offload_key(const key_builder& environment, const codegen::lowered_task& task,
                        const codegen::emit_options& options);
inline constexpr std::string_view offload_entry_placeholder = "QD_OFFLOAD_ENTRY";

// The entry point of an offload, derived from its key ("qd_o" and 32 hex digits), so that
// identical offloads share one; and back, for a name seen in a profiler or a compiler log.
QD_FUNC std::string offload_entry(const key& offload);
QD_FUNC std::optional<key> offload_of_entry(std::string_view entry);

// A split variant (its variant record): the traced IR exactly (ir::exact_bytes), the plan's shape (what
// analysis::plan_split made of it, summarised by the caller) and whether GPU reductions are
// deterministic; with the generator's fingerprint, which covers the analysis that plans and
// the lowering, this decides every task's lowered IR, so equal keys mean equal offload keys.
QD_FUNC key variant_key(const key_builder& environment, const ir::function& traced,
                        std::span<const std::uint64_t> plan_shape, bool deterministic_reductions);

// A compiled program of offloads (a module): its text.
QD_FUNC key module_key(const key_builder& environment, std::string_view program);

// One kernel as `qd-cache explain` groups its entries: its name and traced IR.
QD_FUNC key explained_kernel(const key_builder& environment, std::string_view kernel_name, const ir::function& traced);
// The explanation entry of one of its variants ("whole", "split", ...): each variant a
// process compiles keeps its own, so a diagnostic run does not hide the others.
QD_FUNC key explain_key(const key& explained, std::string_view variant);

}  // namespace qd::inline v0::cache

#ifdef QD_HEADER_ONLY
#include "quadrants/cache/key_recipe-inl.hpp"
#endif
