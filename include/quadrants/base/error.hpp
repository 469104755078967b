// qd::error and its subclasses: every failure the library reports.
// Each message names the kernel, the parameter or construct, and what to do next.
#pragma once

#include <stdexcept>
#include <string>

#include "quadrants/base/api.hpp"

namespace qd::inline v0 {

// Base of everything the library throws.
class error : public std::runtime_error {
 public:
  explicit error(const std::string& message) : std::runtime_error(message) {}
};

// The caller misused the API (wrong arguments, launch before qd::init, ...).
class user_error : public error {
 public:
  using error::error;
};

// An invariant of the library itself failed: a bug in Quadrants, please report it.
class internal_error : public error {
 public:
  using error::error;
};

// A run-time compiler (c++, NVRTC, hipRTC) rejected generated code.
class compile_error : public error {
 public:
  compile_error(const std::string& message, std::string kernel, std::string options, std::string source,
                std::string log)
      : error(message),
        kernel_(std::move(kernel)),
        options_(std::move(options)),
        source_(std::move(source)),
        log_(std::move(log)) {}
  const std::string& kernel() const noexcept { return kernel_; }
  const std::string& options() const noexcept { return options_; }
  const std::string& source() const noexcept { return source_; }
  const std::string& log() const noexcept { return log_; }

 private:
  std::string kernel_, options_, source_, log_;
};

// A driver or operating-system call failed (CUDA driver, dlopen, file I/O).
class driver_error : public error {
 public:
  driver_error(const std::string& message, std::string api, int code)
      : error(message), api_(std::move(api)), code_(code) {}
  const std::string& api() const noexcept { return api_; }
  int code() const noexcept { return code_; }

 private:
  std::string api_;
  int code_;
};

}  // namespace qd::inline v0
