#include "core/loaded_program.hpp"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace qd::emulation {

std::shared_ptr<loaded_program> loaded_program::load(const blob_view& blob, std::string& error) {
  const int fd = memfd_create("quadrants-emulated-gpu-module", MFD_CLOEXEC);
  if (fd < 0) {
    error = std::string("memfd_create failed: ") + std::strerror(errno);
    return nullptr;
  }
  std::size_t done = 0;
  while (done < blob.payload_size) {
    const ssize_t n = ::write(fd, blob.payload + done, blob.payload_size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = std::string("writing the module to memory failed: ") + std::strerror(errno);
      ::close(fd);
      return nullptr;
    }
    done += static_cast<std::size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  // The descriptor stays open while the module is loaded: dlopen knows a library by its
  // path, and a closed descriptor's number (so its path) is given to the next module.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    error = std::string("dlopen failed: ") + (why ? why : "unknown error");
    ::close(fd);
    return nullptr;
  }
  std::shared_ptr<loaded_program> p(new loaded_program);
  p->handle_ = handle;
  p->fd_ = fd;
  auto info = reinterpret_cast<qd_emu_module_fn>(::dlsym(handle, QD_EMU_MODULE_SYMBOL));
  const qd_emu_module* m = info ? info() : nullptr;
  if (m == nullptr || m->abi_version != QD_EMU_ABI_VERSION) {
    error = "the module was not built by this emulation (no entry table of ABI version " +
            std::to_string(QD_EMU_ABI_VERSION) + ")";
    return nullptr;
  }
  for (unsigned i = 0; i < m->entry_count; ++i) {
    loaded_kernel k;
    k.entry = &m->entries[i];
    Dl_info where{};
    k.symbol = ::dladdr(k.entry->function, &where) != 0 && where.dli_sname && where.dli_saddr == k.entry->function
                   ? where.dli_sname
                   : k.entry->name;
    p->kernels_.push_back(std::move(k));
  }
  return p;
}

loaded_program::~loaded_program() {
  if (handle_) ::dlclose(handle_);
  if (fd_ >= 0) ::close(fd_);
}

const loaded_kernel* loaded_program::find(const std::string& symbol) const {
  for (const auto& k : kernels_)
    if (k.symbol == symbol) return &k;
  return nullptr;
}

}  // namespace qd::emulation
