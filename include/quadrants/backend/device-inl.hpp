// Implementation of backend/device.hpp: the default build, the C++ dialects' (CPU, CUDA, HIP).
#pragma once

#include "quadrants/backend/device.hpp"
#include "quadrants/codegen/cpp_emitter.hpp"

namespace qd::inline v0::backend {

QD_FUNC std::string device::emit(const codegen::lowered_task& t, std::string_view entry,
                                 const codegen::emit_options& options) const {
  return codegen::emit_task(t, entry, options);
}

QD_FUNC std::string device::program(std::span<const std::string> codes) const {
  std::string text = prelude();
  for (const std::string& c : codes) text += c;
  return text;
}

QD_FUNC built_program device::build(const program_source& source, std::string_view what) {
  built_program b;
  b.binary = compile(source.text, what);
  b.module = load(b.binary, what);
  return b;
}

}  // namespace qd::inline v0::backend
