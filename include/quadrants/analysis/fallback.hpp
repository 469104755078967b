// qd::fallback_reason: why a kernel runs as one whole-kernel unit instead of
// per-construct offloads -- the conditions of docs/caching.md plus the policy reasons.
#pragma once

#include <cstdint>
#include <string_view>

namespace qd::inline v0 {

#define QD_FALLBACK_REASONS(X)                                                                        \
  X(none, "the split is used")                                                                        \
  X(autodiff, "a gradient (adjoint) kernel links its constructs")                                     \
  X(carried_value, "more values cross constructs than the persisted buffer holds")                    \
  X(stale_reread, "a recomputed read would observe data an earlier statement overwrote")              \
  X(aliasing_gradient, "safety would depend on a gradient buffer not aliasing another buffer")        \
  X(side_effect, "recomputing a value would repeat an atomic, print, random draw or volatile read")   \
  X(mesh, "the kernel iterates over an unstructured mesh")                                            \
  X(concurrent, "the kernel has a region scheduled to run concurrently")                              \
  X(diagnostic, "a diagnostic mode (coverage or a debug dump) needs the whole kernel")                \
  X(policy_backend, "whole-kernel caching is this backend's default (set per_offload = on to split)") \
  X(policy_offline_cache_off, "the offline cache is off")                                             \
  X(policy_per_offload_off, "per_offload is set to off")

enum class fallback_reason : std::uint8_t {
#define QD_FALLBACK_ENUM(id, text) id,
  QD_FALLBACK_REASONS(QD_FALLBACK_ENUM)
#undef QD_FALLBACK_ENUM
};

// The enumerator's name, e.g. "stale_reread".
constexpr std::string_view name(fallback_reason r) {
  switch (r) {
#define QD_FALLBACK_NAME(id, text) \
  case fallback_reason::id: return #id;
    QD_FALLBACK_REASONS(QD_FALLBACK_NAME)
#undef QD_FALLBACK_NAME
  }
  return "?";
}

// One sentence on what the reason means.
constexpr std::string_view describe(fallback_reason r) {
  switch (r) {
#define QD_FALLBACK_TEXT(id, text) \
  case fallback_reason::id: return text;
    QD_FALLBACK_REASONS(QD_FALLBACK_TEXT)
#undef QD_FALLBACK_TEXT
  }
  return "?";
}

// The compile-time conditions (docs/caching.md) (not the policy reasons): they log at debug.
constexpr bool is_condition(fallback_reason r) {
  return r != fallback_reason::none && r != fallback_reason::policy_backend &&
         r != fallback_reason::policy_offline_cache_off && r != fallback_reason::policy_per_offload_off;
}

}  // namespace qd::inline v0
