// Implementation of backend/cpu/module.hpp.
#pragma once

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "quadrants/backend/cpu/module.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::backend::cpu {

QD_FUNC module::module(std::span<const std::byte> binary, std::string_view what) : what_(what) {
  fd_ = memfd_create("quadrants-module", MFD_CLOEXEC);
  if (fd_ < 0)
    throw driver_error(fmt::format("{}: memfd_create failed: {}", what, std::strerror(errno)), "memfd_create", errno);
  std::size_t done = 0;
  while (done < binary.size()) {
    ssize_t n = ::write(fd_, binary.data() + done, binary.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = errno;
      ::close(fd_);
      throw driver_error(fmt::format("{}: writing the module to memory failed: {}", what, std::strerror(e)), "write",
                         e);
    }
    done += static_cast<std::size_t>(n);
  }
  std::string path = fmt::format("/proc/self/fd/{}", fd_);
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* err = dlerror();
    ::close(fd_);
    throw driver_error(fmt::format("{}: loading the compiled module failed: {}", what, err ? err : "unknown error"),
                       "dlopen", 0);
  }
}

QD_FUNC module::~module() {
  if (handle_) dlclose(handle_);
  if (fd_ >= 0) ::close(fd_);
}

QD_FUNC void* module::symbol(const std::string& name) const {
  dlerror();
  void* p = dlsym(handle_, name.c_str());
  if (p == nullptr)
    throw driver_error(fmt::format("{}: the compiled module has no entry point '{}'", what_, name), "dlsym", 0);
  return p;
}

}  // namespace qd::inline v0::backend::cpu
