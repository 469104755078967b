// Implementation of lang/kernel_return.hpp.
#pragma once

#include "quadrants/base/format.hpp"
#include "quadrants/lang/kernel_return.hpp"
#include "quadrants/lang/trace.hpp"

namespace qd::inline v0::detail {

QD_FUNC void append_return_names(std::vector<std::string>& names, std::size_t count) {
  if (names.empty()) return;
  for (std::size_t k = 0; k < count; ++k)
    names.push_back(count == 1 ? std::string("return") : fmt::format("return.{}", k));
}

QD_FUNC void emit_return_stores(const ir::id* values, std::size_t count, std::int32_t first) {
  tracer& t = current_tracer();
  if (!t.at_top_level())
    throw_trace_error("the kernel lambda returned while a qd::if_, qd::range_for or qd::while_ body was open");
  for (std::size_t k = 0; k < count; ++k) {
    place p;
    p.param = first + static_cast<std::int32_t>(k);
    emit_global_store(p, values[k]);
  }
  t.last_if = ir::none;
}

}  // namespace qd::inline v0::detail
