// Generated code mirrors the runtime's structs (qd_array, qd_ctx): these lines,
// placed in every prelude, make each compiler check that both sides agree.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "quadrants/backend/device.hpp"

namespace qd::inline v0::backend {

// Defines QD_AT(type, member, offset) for the lines below. NVRTC has no offsetof
// of any spelling, so there only the sizes are checked; the host compiler (and so
// the emulated GPUs, which compile the same CUDA source with it) and hipRTC check
// every member.
inline constexpr std::string_view abi_check_macro = R"QD(
#if defined(__CUDACC_RTC__) && !defined(__clang__)
#define QD_AT(T, M, OFFSET)
#else
#define QD_AT(T, M, OFFSET) static_assert(__builtin_offsetof(T, M) == OFFSET, #T "." #M " must lie where the runtime puts it");
#endif
)QD";

// One line of generated C++ that compiles only if `type`'s `member` lies at `offset`.
inline std::string member_at(std::string_view type, std::string_view member, std::size_t offset) {
  std::string t(type), m(member);
  return "QD_AT(" + t + ", " + m + ", " + std::to_string(offset) + ")\n";
}

inline std::string size_is(std::string_view type, std::size_t size) {
  std::string t(type);
  return "static_assert(sizeof(" + t + ") == " + std::to_string(size) + ", \"" + t +
         " must have the runtime's size\");\n";
}

// qd_array against array_abi (and the macro the checks use).
inline std::string array_abi_checks() {
  return std::string(abi_check_macro) + member_at("qd_array", "data", offsetof(array_abi, data)) +
         member_at("qd_array", "grad", offsetof(array_abi, grad)) +
         member_at("qd_array", "shape", offsetof(array_abi, shape)) + size_is("qd_array", sizeof(array_abi));
}

}  // namespace qd::inline v0::backend
