#include "core/runtime_compiler.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace qd::emulation {

struct runtime_compiler::program {
  std::string source, name;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string log;
  std::vector<unsigned char> binary;
};

struct runtime_compiler::real_api {
  using handle = void*;
  void* library = nullptr;
  std::string path;
  int (*version)(int*, int*) = nullptr;
  int (*create)(handle*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  int (*destroy)(handle*) = nullptr;
  int (*compile)(handle, int, const char* const*) = nullptr;
  int (*log_size)(handle, std::size_t*) = nullptr;
  int (*log)(handle, char*) = nullptr;
};

namespace {
template <class F>
void resolve(void* library, const std::string& name, F& f) {
  f = reinterpret_cast<F>(::dlsym(library, name.c_str()));
}
}  // namespace

rtc_flavor flavor_of(gpu_api api) {
  const bool cuda = api == gpu_api::cuda;
  rtc_flavor f{};
  f.name = cuda ? "NVRTC" : "hipRTC";
  f.result_prefix = cuda ? "NVRTC" : "HIPRTC";
  f.prefix = cuda ? "nvrtc" : "hiprtc";
  f.search.variable = cuda ? "QD_EMULATED_GPU_REAL_NVRTC" : "QD_EMULATED_GPU_REAL_HIPRTC";
  f.search.required_symbol = cuda ? "nvrtcCompileProgram" : "hiprtcCompileProgram";
  // Where the backends look too (backend/cuda/nvrtc-inl.hpp, backend/amdgpu/hiprtc-inl.hpp).
  if (cuda) {
    f.search.names = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"};
    f.search.directories = {"$CUDA_HOME/lib64",
                            "$CUDA_PATH/lib64",
                            "/usr/local/cuda/lib64",
                            "/usr/local/cuda/targets/x86_64-linux/lib",
                            "/usr/lib/x86_64-linux-gnu",
                            "/usr/lib64",
                            "/opt/cuda/lib64"};
  } else {
    f.search.names = {"libhiprtc.so.6", "libhiprtc.so", "libamdhip64.so.5", "libamdhip64.so"};
    f.search.directories = {"$ROCM_PATH/lib", "/opt/rocm/lib", "/opt/rocm/lib64", "/usr/lib/x86_64-linux-gnu",
                            "/usr/lib64",     "/usr/lib"};
  }
  f.check_once = !cuda;  // hipRTC's ~140 ms a program would double the emulated AMD runs' time
  f.serialize = !cuda;
  f.default_major = cuda ? 13 : 6;
  f.default_minor = 0;
  return f;
}

runtime_compiler::runtime_compiler(gpu_api api, rtc_options reader)
    : flavor_(flavor_of(api)), reader_(std::move(reader)) {
  for (const char* r :
       {"SUCCESS", "ERROR_OUT_OF_MEMORY", "ERROR_PROGRAM_CREATION_FAILURE", "ERROR_INVALID_INPUT",
        "ERROR_INVALID_PROGRAM", "ERROR_INVALID_OPTION", "ERROR_COMPILATION", "ERROR_BUILTIN_OPERATION_FAILURE",
        "ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION", "ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION",
        "ERROR_NAME_EXPRESSION_NOT_VALID", "ERROR_INTERNAL_ERROR", "ERROR unknown"})
    result_names_.push_back(std::string(flavor_.result_prefix) + "_" + r);
}

const char* runtime_compiler::result_name(int result) const {
  const auto last = static_cast<int>(result_names_.size()) - 1;
  return result_names_[static_cast<std::size_t>(result >= 0 && result < last ? result : last)].c_str();
}
runtime_compiler::~runtime_compiler() = default;

const runtime_compiler::real_api& runtime_compiler::real() {
  std::call_once(real_once_, [this] {
    real_ = std::make_unique<real_api>();
    real_api& a = *real_;
    a.library = open_real_library(flavor_.search, a.path);
    if (!a.library) return;
    const std::string p = flavor_.prefix;
    resolve(a.library, p + "Version", a.version);
    resolve(a.library, p + "CreateProgram", a.create);
    resolve(a.library, p + "DestroyProgram", a.destroy);
    resolve(a.library, p + "CompileProgram", a.compile);
    resolve(a.library, p + "GetProgramLogSize", a.log_size);
    resolve(a.library, p + "GetProgramLog", a.log);
    if (!a.version || !a.create || !a.destroy || !a.compile || !a.log_size || !a.log) a.library = nullptr;
  });
  return *real_;
}

void* runtime_compiler::real_handle() { return real().library; }
const std::string& runtime_compiler::real_path() { return real().path; }

int runtime_compiler::version(int* major, int* minor) {
  if (!major || !minor) return rtc_invalid_input;
  if (!real().library || real().version(major, minor) != rtc_success) {
    *major = flavor_.default_major;
    *minor = flavor_.default_minor;
  }
  return rtc_success;
}

const char* runtime_compiler::real_compiler() { return real_handle() ? real_path().c_str() : nullptr; }

runtime_compiler::program* runtime_compiler::find(void* handle) {
  std::lock_guard lock(mutex_);
  return programs_.count(handle) ? static_cast<program*>(handle) : nullptr;
}

int runtime_compiler::create(void** out, const char* source, const char* name, int header_count,
                             const char* const* headers, const char* const* include_names) {
  if (!out || !source || header_count < 0 || (header_count > 0 && (!headers || !include_names)))
    return rtc_invalid_input;
  auto p = std::make_unique<program>();
  p->source = source;
  p->name = name ? name : "";
  for (int i = 0; i < header_count; ++i) {
    if (!headers[i] || !include_names[i]) return rtc_invalid_input;
    p->headers.emplace_back(include_names[i], headers[i]);
  }
  *out = p.release();
  std::lock_guard lock(mutex_);
  programs_.insert(*out);
  return rtc_success;
}

int runtime_compiler::destroy(void** handle) {
  if (!handle) return rtc_invalid_input;
  {
    std::lock_guard lock(mutex_);
    if (!programs_.erase(*handle)) return rtc_invalid_program;
  }
  delete static_cast<program*>(*handle);
  *handle = nullptr;
  return rtc_success;
}

int runtime_compiler::real_compile(const program& p, int count, const char* const* options, std::string& log) {
  const real_api& r = real();
  std::string key;
  if (flavor_.check_once) {
    key = p.source + '\0' + p.name;
    for (int i = 0; i < count; ++i) key += std::string("\0", 1) + options[i];
    for (const auto& [name, text] : p.headers) key += '\0' + name + '\0' + text;
    std::lock_guard lock(mutex_);
    if (accepted_.count(key)) return rtc_success;
  }
  std::vector<const char*> headers, names;
  for (const auto& [name, text] : p.headers) {
    names.push_back(name.c_str());
    headers.push_back(text.c_str());
  }
  std::unique_lock serialized(real_mutex_, std::defer_lock);
  if (flavor_.serialize) serialized.lock();
  real_api::handle rp = nullptr;
  int result = r.create(&rp, p.source.c_str(), p.name.empty() ? nullptr : p.name.c_str(),
                        static_cast<int>(headers.size()), headers.data(), names.data());
  if (result != rtc_success) return result;
  result = r.compile(rp, count, options);
  std::size_t size = 0;
  if (r.log_size(rp, &size) == rtc_success && size > 1) {
    log.resize(size);
    if (r.log(rp, log.data()) != rtc_success) log.clear();
    while (!log.empty() && log.back() == '\0') log.pop_back();
  }
  r.destroy(&rp);
  if (result == rtc_success && flavor_.check_once) {
    std::lock_guard lock(mutex_);
    accepted_.insert(std::move(key));
  }
  return result;
}

bool runtime_compiler::translate(int count, const char* const* options, host_compile& hc, bool real_accepted,
                                 std::string& error) const {
  reader_.defaults(hc);
  for (int i = 0; i < count; ++i) {
    const std::string option = options[i];
    switch (reader_.translate(count, options, i, hc, error)) {
      case option_use::translated: continue;
      case option_use::invalid: return false;
      case option_use::unknown: break;
    }
    auto ignored = [&](const std::string& entry) {
      return !entry.empty() && entry.back() == '*' ? option.rfind(entry.substr(0, entry.size() - 1), 0) == 0
                                                   : option == entry;
    };
    if (real_accepted || std::any_of(reader_.ignored.begin(), reader_.ignored.end(), ignored)) continue;
    error = reader_.unknown_before + option + reader_.unknown_after;
    return false;
  }
  reader_.finish(hc);
  return true;
}

int runtime_compiler::compile(void* handle, int count, const char* const* options) {
  program* p = find(handle);
  if (!p) return rtc_invalid_program;
  if (count < 0 || (count > 0 && !options)) return rtc_invalid_input;
  for (int i = 0; i < count; ++i)
    if (!options[i]) return rtc_invalid_input;
  p->binary.clear();
  p->log.clear();
  std::string real_log;
  const bool have_real = real().library != nullptr;
  if (have_real) {
    const int r = real_compile(*p, count, options, real_log);
    if (r != rtc_success) {
      p->log = real_log;
      return r;
    }
  }
  host_compile hc;
  hc.program_name = p->name.empty() ? "default_program" : p->name;
  hc.source = p->source;
  hc.headers = p->headers;
  std::string error;
  if (!translate(count, options, hc, have_real, error)) {
    p->log = error + "\n";
    return rtc_invalid_option;
  }
  host_compile_result built = compile_for_host(hc);
  if (!built.ok) {
    p->log = (have_real ? std::string(flavor_.name) +
                              " accepted this program, but the emulation (the host C++ compiler against the "
                              "emulated device built-ins) cannot build it:\n"
                        : std::string()) +
             built.log;
    return rtc_compilation;
  }
  p->binary = std::move(built.binary);
  p->log = real_log;
  return rtc_success;
}

int runtime_compiler::binary_size(void* handle, std::size_t* size) {
  program* p = find(handle);
  if (!p) return rtc_invalid_program;
  if (!size) return rtc_invalid_input;
  if (p->binary.empty()) return rtc_invalid_program;
  *size = p->binary.size();
  return rtc_success;
}

int runtime_compiler::binary(void* handle, char* out) {
  program* p = find(handle);
  if (!p) return rtc_invalid_program;
  if (!out) return rtc_invalid_input;
  if (p->binary.empty()) return rtc_invalid_program;
  std::memcpy(out, p->binary.data(), p->binary.size());
  return rtc_success;
}

int runtime_compiler::log_size(void* handle, std::size_t* size) {
  program* p = find(handle);
  if (!p) return rtc_invalid_program;
  if (!size) return rtc_invalid_input;
  *size = p->log.size() + 1;
  return rtc_success;
}

int runtime_compiler::log(void* handle, char* out) {
  program* p = find(handle);
  if (!p) return rtc_invalid_program;
  if (!out) return rtc_invalid_input;
  std::memcpy(out, p->log.c_str(), p->log.size() + 1);
  return rtc_success;
}

}  // namespace qd::emulation
