// The CPU backend as a device: host memory, the host C++ compiler, in-process
// modules, and parallel constructs on a thread pool across all cores.
#pragma once

#include <memory>

#include "quadrants/backend/cpu/compiler.hpp"
#include "quadrants/backend/cpu/thread_pool.hpp"
#include "quadrants/backend/device.hpp"

namespace qd::inline v0::backend::cpu {

struct device_options {
  compile_options compile;
  unsigned threads = 0;  // 0: all hardware threads
};

QD_FUNC std::unique_ptr<device> make_device(const device_options& options);

}  // namespace qd::inline v0::backend::cpu

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/cpu/device-inl.hpp"
#endif
