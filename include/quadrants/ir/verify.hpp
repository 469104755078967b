// The IR verifier: checks what every pass and backend relies on (operand kinds and
// types, parameters, block layout). Checked builds run it after tracing and lowering.
#pragma once

#include <cstdint>

#include "quadrants/base/api.hpp"
#include "quadrants/ir/node.hpp"

namespace qd::inline v0::ir {

// What the IR may hold: traced IR has no global temporaries; lowering adds them.
enum class stage : std::uint8_t { traced, lowered };

// Throws qd::internal_error naming the first malformed node.
QD_FUNC void verify(const function& fn, stage s);

}  // namespace qd::inline v0::ir

#ifdef QD_HEADER_ONLY
#include "quadrants/ir/verify-inl.hpp"
#endif
