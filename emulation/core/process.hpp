// Running the host C++ compiler for the emulated NVRTC and hipRTC: a child process
// with its output captured, in a private scratch directory removed afterwards.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace qd::emulation {

// The host compiler's command: QD_CXX split on spaces (as the CPU backend reads it), else "c++".
std::vector<std::string> host_compiler();

// Runs argv with stdout and stderr going to `log_path`; the exit status, or -1 when it
// cannot start (the reason is then in `log_path`).
int run_process(const std::vector<std::string>& argv, const std::string& log_path);

std::string read_file(const std::string& path);
bool write_file(const std::string& path, std::string_view data);

// A fresh directory under $TMPDIR (else /tmp), removed with everything in it.
class scratch_dir {
 public:
  scratch_dir();
  ~scratch_dir();
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

}  // namespace qd::emulation
