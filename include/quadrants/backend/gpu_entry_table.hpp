// Two vendors' libraries as one table: a row per entry point names its member, CUDA's
// symbol and HIP's (hipify's mapping, for the calls Quadrants makes), and its type.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include "quadrants/base/api.hpp"

namespace qd::inline v0::backend {

enum class gpu_vendor { cuda, amd };

// Every entry point of both vendors' drivers and compilers returns an int, 0 on success.
using gpu_result = int;
inline constexpr gpu_result gpu_success = 0;

// A row's symbol, or `fallback` where the vendor has none (a function, not `s ? s : f`
// in the macro: clang warns of a string literal tested as a bool).
constexpr const char* symbol_or(const char* symbol, const char* fallback) {
  return symbol != nullptr ? symbol : fallback;
}

// The qd::driver_error of a failed call: "<calls> <symbol>(<arguments>) failed: <result
// text> [file:line]", e.g. "CUDA driver call cuMemAlloc_v2(&p, bytes) failed: ...".
[[noreturn]] QD_FUNC void throw_failed_gpu_call(std::string_view calls, const char* symbol, const char* arguments,
                                                gpu_result result, const std::string& result_text, const char* file,
                                                int line);

}  // namespace qd::inline v0::backend

// A row's symbol for vendor `v`.
#define QD_GPU_COLUMN(v, cuda_symbol, hip_symbol) \
  ((v) == ::qd::backend::gpu_vendor::cuda ? (cuda_symbol) : (hip_symbol))
#define QD_GPU_TABLE_MEMBER(member, cuda, hip, type) std::add_pointer_t<type> member = nullptr;
#define QD_GPU_TABLE_REQUIRED(member, cuda, hip, type) \
  visit(table.member, QD_GPU_COLUMN(table.vendor, cuda, hip), true);
#define QD_GPU_TABLE_OPTIONAL(member, cuda, hip, type) \
  visit(table.member, QD_GPU_COLUMN(table.vendor, cuda, hip), false);
#define QD_GPU_TABLE_SYMBOL(member, cuda, hip, type) \
  if (name == #member) return ::qd::backend::symbol_or(QD_GPU_COLUMN(vendor, cuda, hip), #member);
#define QD_GPU_NO_ROWS(X)

// The body of a table struct with a member `vendor` (a gpu_vendor) over the rows
// REQUIRED and OPTIONAL (X-macros of X(member, cuda_symbol, hip_symbol, type); a symbol
// is nullptr where that vendor has no such entry point, and the member stays null): a
// pointer per row, for_each_entry (for resolve_entry_points), symbol(), and check(),
// which QD_GPU_CALL uses with the struct's own `calls` ("CUDA driver call") and describe().
#define QD_GPU_ENTRY_TABLE(Table, REQUIRED, OPTIONAL)                                                                \
  REQUIRED(QD_GPU_TABLE_MEMBER)                                                                                      \
  OPTIONAL(QD_GPU_TABLE_MEMBER)                                                                                      \
  template <class Visit>                                                                                             \
  static void for_each_entry(Table& table, Visit&& visit) {                                                          \
    REQUIRED(QD_GPU_TABLE_REQUIRED)                                                                                  \
    OPTIONAL(QD_GPU_TABLE_OPTIONAL)                                                                                  \
  }                                                                                                                  \
  /* This vendor's name for a member: "cuStreamCreate" for "stream_create". */                                       \
  const char* symbol(std::string_view name) const {                                                                  \
    REQUIRED(QD_GPU_TABLE_SYMBOL)                                                                                    \
    OPTIONAL(QD_GPU_TABLE_SYMBOL)                                                                                    \
    return "an unknown entry point";                                                                                 \
  }                                                                                                                  \
  void check(::qd::backend::gpu_result r, std::string_view entry, const char* arguments, const char* file, int line) \
      const {                                                                                                        \
    if (r != ::qd::backend::gpu_success) [[unlikely]]                                                                \
      ::qd::backend::throw_failed_gpu_call(calls, symbol(entry), arguments, r, describe(r), file, line);             \
  }

// Calls one entry point and checks its result: QD_GPU_CALL(api, mem_alloc, &p, bytes).
// A failure is a qd::driver_error naming the vendor's function, the arguments as
// written, the result with its name and description, and the file and line.
#define QD_GPU_CALL(api, entry, ...) (api).check((api).entry(__VA_ARGS__), #entry, #__VA_ARGS__, __FILE__, __LINE__)

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/gpu_entry_table-inl.hpp"
#endif
