// One GPU device written once over either vendor's driver API (backend/gpu_driver.hpp):
// memory, modules, launches, streams and events, device graphs, the bounds-error record.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "quadrants/backend/device.hpp"
#include "quadrants/backend/gpu_driver.hpp"
#include "quadrants/base/api.hpp"

namespace qd::inline v0::backend {

// What a vendor's device compiles with, chosen once its GPU is known.
struct gpu_compiler_binding {
  std::string target;         // "sm_90", "gfx90a": part of every cache key
  std::string options;        // the compiler's flags, part of every cache key
  std::string prelude;        // what precedes the generated code: the vendor's dialect of the GPU prelude
  bool wide_offsets = false;  // the prelude's element offsets are 64-bit (device_traits::wide_offsets)
  // The kernel that ends a device loop's body (conditional nodes); empty: no device loops.
  std::string loop_kernel;
  std::function<std::string()> identity;  // the compiler's identity, without opening it
  std::function<std::vector<std::byte>(std::string_view source, std::string_view what)> compile;
};

// Chooses the binding for an opened GPU (null in compile-only mode); throws
// qd::user_error for options that do not fit.
using gpu_binder = std::function<gpu_compiler_binding(const gpu_facts* gpu)>;

// Opens GPU `ordinal` (-1: the vendor's QD_*_DEVICE variable, else 0) through the
// vendor's driver table unless `compile_only`, and makes the device. Throws
// qd::driver_error naming what is missing. For the vendors' make_device only.
template <gpu_vendor Vendor>
std::unique_ptr<device> make_gpu_device(const gpu_driver_api<Vendor>& (*driver)(), int ordinal, bool compile_only,
                                        const gpu_binder& bind);

}  // namespace qd::inline v0::backend

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/gpu_device-inl.hpp"
#endif
