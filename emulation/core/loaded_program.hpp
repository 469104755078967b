// An emulated binary loaded into the process (memfd + dlopen, as the CPU backend
// loads its modules): its kernels by the symbol names a driver looks them up by.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "abi.h"
#include "core/blob.hpp"

namespace qd::emulation {

struct loaded_kernel {
  std::string symbol;  // extern "C" name, else the mangled one
  const qd_emu_entry* entry = nullptr;
};

class loaded_program {
 public:
  // Null with `error` set when the shared object cannot be loaded.
  static std::shared_ptr<loaded_program> load(const blob_view& blob, std::string& error);
  ~loaded_program();
  loaded_program(const loaded_program&) = delete;
  loaded_program& operator=(const loaded_program&) = delete;

  const loaded_kernel* find(const std::string& symbol) const;
  const std::vector<loaded_kernel>& kernels() const { return kernels_; }

 private:
  loaded_program() = default;
  void* handle_ = nullptr;
  int fd_ = -1;
  std::vector<loaded_kernel> kernels_;
};

}  // namespace qd::emulation
