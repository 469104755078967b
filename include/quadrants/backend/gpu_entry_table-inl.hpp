// Implementation of backend/gpu_entry_table.hpp.
#pragma once

#include "quadrants/backend/gpu_entry_table.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::backend {

QD_FUNC void throw_failed_gpu_call(std::string_view calls, const char* symbol, const char* arguments, gpu_result result,
                                   const std::string& result_text, const char* file, int line) {
  throw driver_error(fmt::format("{} {}({}) failed: {} [{}:{}]", calls, symbol, arguments, result_text, file, line),
                     symbol, result);
}

}  // namespace qd::inline v0::backend
