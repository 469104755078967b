// A backend as the registry lists it: plain data the runtime reads (which arch it serves,
// what its generated code is called, whether its code is cached, how init_best_available
// ranks it) and the function that makes its device from a generic request.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quadrants/backend/device.hpp"
#include "quadrants/base/api.hpp"
#include "quadrants/base/arch.hpp"

namespace qd::inline v0::backend {

// What any backend may need to make its device; each reads what it uses.
struct device_request {
  bool compile_only = false;  // compile and cache, no device (GPU backends)
  int opt_level = 2;
  bool fast_math = false;
  unsigned threads = 0;               // host threads a CPU backend may use; 0: all
  int compile_timeout_seconds = 600;  // a host compiler's limit; 0: none
  // Settings of one backend, by their qd::config name ("cuda_arch" = "90"), as text;
  // each backend reads its own. Absent or empty: unset.
  std::vector<std::pair<std::string, std::string>> options;
  QD_FUNC std::string_view option(std::string_view name) const;
};

struct description {
  qd::arch arch = qd::arch::cpu;
  // The extension print_ir gives the backend's generated code ("cpp", "cu", "hip"); empty:
  // the backend has no source to show, and only the IR is written.
  std::string_view source_extension;
  // False when what its build makes is not worth keeping (an interpreter): no cache tier is
  // asked or written, and every request is built.
  bool caches_code = true;
  // qd::init_best_available tries it, in list order, before the CPU.
  bool preferred = false;
  // Makes the device. Throws qd::driver_error when a library, a symbol or the device is
  // missing, qd::user_error for bad options.
  std::unique_ptr<device> (*make)(const device_request&) = nullptr;
};

}  // namespace qd::inline v0::backend

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/description-inl.hpp"
#endif
