// Test helper: a fresh directory under the system's temporary directory, removed on scope exit.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace qd_test {

class fresh_dir {
 public:
  explicit fresh_dir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() / ("qd-test-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  fresh_dir(const fresh_dir&) = delete;
  fresh_dir& operator=(const fresh_dir&) = delete;
  ~fresh_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::filesystem::path path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace qd_test
