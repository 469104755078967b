// Helpers shared by the runtime tests: a CPU init, stdout capture around a
// launch, log capture, and an environment variable set for one scope.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <quadrants/quadrants.hpp>
#include "support/log_capture.hpp"

namespace qd_test {

// Starts (or restarts) the runtime on the CPU; every test case calls it first.
inline void init_cpu(qd::config c = {}) {
  c.arch = qd::arch::cpu;
  qd::init(c);
}

// The backends tests compare with plain C++ without a GPU: compiled code and the interpreter.
inline constexpr qd::arch cpu_and_reference[] = {qd::arch::cpu, qd::arch::reference};

// Starts (or restarts) the runtime on `a`.
inline void init_arch(qd::arch a, qd::config c = {}) {
  c.arch = a;
  qd::init(c);
}

// Runs `f` with the process's stdout redirected to a temporary file; returns what was printed.
template <class F>
std::string capture_stdout(F&& f) {
  std::fflush(stdout);
  char path[] = "/tmp/qd-stdout-XXXXXX";
  int file = ::mkstemp(path);
  if (file < 0) std::abort();
  int saved = ::dup(1);
  ::dup2(file, 1);
  struct restore {
    int saved, file;
    ~restore() {
      std::fflush(stdout);
      ::dup2(saved, 1);
      ::close(saved);
      ::close(file);
    }
  };
  {
    restore r{saved, file};
    std::forward<F>(f)();
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  ::unlink(path);
  return text.str();
}

// The lines of `text`, without their newlines.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Sets an environment variable for one scope, restoring its previous value (ctest sets some).
class scoped_env {
 public:
  scoped_env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) previous_ = old;
    ::setenv(name, value, 1);
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;
  ~scoped_env() {
    if (previous_)
      ::setenv(name_.c_str(), previous_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }

 private:
  std::string name_;
  std::optional<std::string> previous_;
};

}  // namespace qd_test
