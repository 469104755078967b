// Running tests/runtime/kernel_worker in its own process with a chosen
// environment, and a private cache directory per test.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace qd_test {

struct worker_result {
  int exit_code = -1;
  std::string output;
};

// env: "NAME=value" entries added to the worker's environment.
inline worker_result run_worker(const std::vector<std::string>& env, const std::string& args) {
  std::string command = "env";
  for (const auto& e : env) command += " '" + e + "'";
  command += std::string(" ") + QD_KERNEL_WORKER + " " + args + " 2>&1";
  worker_result r;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return r;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) r.output.append(buffer, n);
  int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// A fresh directory under the build tree's temporary area, removed on exit.
class temp_dir {
 public:
  explicit temp_dir(const std::string& name) {
    path_ = std::filesystem::temp_directory_path() / ("qd-test-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path_, ec);
  }
  std::string str() const { return path_.string(); }
  std::filesystem::path path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace qd_test
