#include "core/host_compiler.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "core/kernel_scan.hpp"
#include "core/process.hpp"

namespace qd::emulation {
namespace {

// The file name a program's source gets: its name's last component, else NVRTC's default.
std::string source_file_name(const std::string& name) {
  std::string base = name.substr(name.find_last_of('/') == std::string::npos ? 0 : name.find_last_of('/') + 1);
  if (base.empty() || base == "." || base == "..") base = "default_program";
  return base;
}

// Removes the scratch directory's path from the compiler's messages.
std::string relative_log(std::string log, const std::string& dir) {
  const std::string prefix = dir + "/";
  for (std::size_t at = log.find(prefix); at != std::string::npos; at = log.find(prefix, at))
    log.erase(at, prefix.size());
  return log;
}

// QD_EMULATED_GPU_KEEP=<dir>: each program's files (source, preprocessed, glued, the
// shared object) are kept in <dir>/<checksum of the binary>/, for a debugger or objdump.
void keep(const scratch_dir& dir, const std::vector<unsigned char>& binary) {
  const char* where = std::getenv("QD_EMULATED_GPU_KEEP");
  if (!where || !*where) return;
  char name[17];
  std::snprintf(name, sizeof(name), "%016llx", static_cast<unsigned long long>(fnv1a(binary.data(), binary.size())));
  std::error_code ec;
  const std::filesystem::path to = std::filesystem::path(where) / name;
  std::filesystem::create_directories(to, ec);
  std::filesystem::copy(
      dir.path(), to, std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing, ec);
}

}  // namespace

host_compile_result compile_for_host(const host_compile& r) {
  host_compile_result out;
  scratch_dir dir;
  if (!dir.ok()) {
    out.log = "emulated GPU compiler: cannot create a scratch directory under $TMPDIR or /tmp";
    return out;
  }
  // The program's headers, and empty stand-ins for the runtime headers device code
  // includes (their declarations are the built-ins).
  const std::string include_dir = dir.file("include");
  std::filesystem::create_directories(include_dir + "/hip");
  for (const char* stub : {"cuda_runtime.h", "cuda.h", "hip/hip_runtime.h", "hip/hip_runtime_api.h"})
    write_file(include_dir + "/" + stub, "/* emulated GPU: the built-ins are already declared */\n");
  for (const auto& [name, text] : r.headers) {
    const std::string path = include_dir + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    write_file(path, text);
  }
  const std::string source = dir.file(source_file_name(r.program_name));
  const std::string preprocessed = dir.file("qd_emu_preprocessed.ii");
  const std::string glued = dir.file("qd_emu_program.cpp");
  const std::string builtins = dir.file("qd_emu_device.h");
  const std::string shared_object = dir.file("program.so");
  const std::string log = dir.file("log.txt");
  if (!write_file(source, r.source) || !write_file(builtins, device_builtins_text)) {
    out.log = "emulated GPU compiler: cannot write to " + dir.path() + " (disk full?)";
    return out;
  }

  const std::vector<std::string> cxx = host_compiler();
  std::vector<std::string> argv = cxx;
  argv.insert(argv.end(), {"-E", "-x", "c++", "-std=" + r.language});
  argv.insert(argv.end(), r.preprocessor_flags.begin(), r.preprocessor_flags.end());
  argv.insert(argv.end(), {"-I" + include_dir, source, "-o", preprocessed});
  if (run_process(argv, log) != 0) {
    out.log = relative_log(read_file(log), dir.path());
    return out;
  }
  const std::string text = read_file(preprocessed);
  const kernel_scan scan = scan_kernels(text);
  if (!scan.error.empty()) {
    out.log = source_file_name(r.program_name) + ": error: " + scan.error + " (the emulated GPU compiler)";
    return out;
  }
  write_file(glued, insert_kernel_glue(text, scan));

  argv = cxx;
  argv.insert(argv.end(), {"-x", "c++", "-std=" + r.language, "-include", builtins,
                           "-DQD_EMU_ENTRY_CAPACITY=" + std::to_string(scan.kernels.size())});
  argv.insert(argv.end(), r.preprocessor_flags.begin(), r.preprocessor_flags.end());
  argv.insert(argv.end(), r.codegen_flags.begin(), r.codegen_flags.end());
  // QD_EMULATED_GPU_CXXFLAGS comes last, so "-O0 -g" (to step through a kernel) wins.
  if (const char* extra = std::getenv("QD_EMULATED_GPU_CXXFLAGS"); extra && *extra) {
    std::istringstream words(extra);
    for (std::string w; words >> w;) argv.push_back(w);
  }
  argv.insert(argv.end(),
              {"-pipe", "-fPIC", "-shared", "-fvisibility=hidden", "-fno-exceptions", "-fno-rtti", "-fno-math-errno",
               "-fno-strict-aliasing", "-fno-semantic-interposition", "-w", glued, "-o", shared_object, "-lm"});
  if (run_process(argv, log) != 0) {
    out.log = relative_log(read_file(log), dir.path());
    return out;
  }
  out.binary = make_blob(r.api, r.target, read_file(shared_object));
  out.ok = true;
  keep(dir, out.binary);
  return out;
}

}  // namespace qd::emulation
