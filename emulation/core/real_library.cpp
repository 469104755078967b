#include "core/real_library.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

namespace qd::emulation {
namespace {

bool is_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void* try_open(const std::string& file, const char* required_symbol) {
  void* h = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return nullptr;
  if (::dlsym(h, "qd_emulated_gpu_library") != nullptr || ::dlsym(h, required_symbol) == nullptr) {
    ::dlclose(h);
    return nullptr;
  }
  return h;
}

}  // namespace

void* open_real_library(const real_library_search& s, std::string& path) {
  const char* value = std::getenv(s.variable);
  if (value && *value) {
    const std::string v = value;
    if (v == "off" || v == "0" || v == "none") {
      path = std::string("turned off by ") + s.variable;
      return nullptr;
    }
    void* h = try_open(v, s.required_symbol);
    path = h ? v : std::string(s.variable) + "='" + v + "' is not a usable library";
    return h;
  }
  for (std::string dir : s.directories) {
    if (dir.rfind('$', 0) == 0) {  // "$VAR/sub": under the variable's directory, when it is set
      const std::size_t slash = dir.find('/');
      const char* root = std::getenv(dir.substr(1, slash - 1).c_str());
      if (!root || !*root) continue;
      dir = root + dir.substr(slash);
    }
    for (const auto& name : s.names) {
      const std::string file = dir + "/" + name;
      if (!is_file(file)) continue;
      if (void* h = try_open(file, s.required_symbol)) {
        path = file;
        return h;
      }
    }
  }
  path = "not installed";
  return nullptr;
}

}  // namespace qd::emulation
