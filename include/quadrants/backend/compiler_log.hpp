// Reading a run-time compiler's log: the generated source line its first error
// points at, quoted in the qd::compile_error so the message stands on its own.
#pragma once

#include <string>
#include <string_view>

#include "quadrants/base/api.hpp"

namespace qd::inline v0::backend {

// "generated line N: <text>" for the first error in `log` located in `file`
// ("file(N)" as NVRTC writes it, or "file:N:" as clang and gcc do); "" if none.
QD_FUNC std::string quote_generated_line(std::string_view log, std::string_view source, std::string_view file);

}  // namespace qd::inline v0::backend

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/compiler_log-inl.hpp"
#endif
