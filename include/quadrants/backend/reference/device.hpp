// The reference backend as a device: host memory and no compiler. Its build hands the
// lowered tasks to the interpreter, which runs them deterministically, always bounds-checked.
#pragma once

#include <memory>

#include "quadrants/backend/device.hpp"

namespace qd::inline v0::backend::reference {

// Select it with qd::arch::reference (QD_ARCH=reference); see docs/testing.md.
QD_FUNC std::unique_ptr<device> make_device();

}  // namespace qd::inline v0::backend::reference

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/reference/device-inl.hpp"
#endif
