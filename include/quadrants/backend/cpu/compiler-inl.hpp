// Implementation of backend/cpu/compiler.hpp.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "quadrants/backend/cpu/compiler.hpp"
#include "quadrants/backend/shared_library.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/detail/format.hpp"

extern char** environ;

namespace qd::backend::cpu {
namespace detail {

// Runs argv, capturing stdout and stderr into `log`; returns the exit status.
QD_FUNC int run_process(const std::vector<std::string>& argv, const std::string& log_path) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw driver_error(fmt::format("cannot start the host C++ compiler '{}': {}. Install g++ or point QD_CXX at a "
                                   "C++ compiler",
                                   argv[0], std::strerror(rc)),
                       "posix_spawnp", rc);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

QD_FUNC std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A private scratch directory, removed on scope exit.
struct scratch_dir {
  std::filesystem::path path;
  scratch_dir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/qd-cxx-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr)
      throw driver_error(fmt::format("cannot create a scratch directory for compiling ({}): {}; set TMPDIR to a "
                                     "writable directory",
                                     pattern, std::strerror(errno)),
                         "mkdtemp", errno);
    path = pattern;
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// The generated line a compiler message points at ("src.cpp:LINE:").
QD_FUNC std::string offending_line(const std::string& log, std::string_view source) {
  // The first "src.cpp:<line>:" (skipping "src.cpp: In function ..." headers).
  int line = 0;
  for (auto at = log.find("src.cpp:"); at != std::string::npos && line <= 0; at = log.find("src.cpp:", at + 1))
    line = std::atoi(log.c_str() + at + 8);
  if (line <= 0) return {};
  std::size_t pos = 0;
  for (int l = 1; l < line && pos != std::string_view::npos; ++l) {
    pos = source.find('\n', pos);
    if (pos != std::string_view::npos) ++pos;
  }
  if (pos == std::string_view::npos) return {};
  auto end = source.find('\n', pos);
  return fmt::format("generated line {}: {}", line, source.substr(pos, end == std::string_view::npos ? end : end - pos));
}

}  // namespace detail

QD_FUNC const compiler_identity& host_compiler() {
  static const compiler_identity identity = [] {
    compiler_identity id;
    const char* env = std::getenv("QD_CXX");
    std::istringstream words(env && *env ? env : "c++");
    for (std::string w; words >> w;) id.command.push_back(w);
    detail::scratch_dir dir;
    auto argv = id.command;
    argv.push_back("--version");
    auto log = (dir.path / "version.txt").string();
    if (detail::run_process(argv, log) != 0)
      throw driver_error(fmt::format("the host C++ compiler '{}' does not run ('--version' failed): {}",
                                     id.command[0], detail::read_text(log)),
                         "c++ --version", 0);
    std::string text = detail::read_text(log);
    id.version = text.substr(0, text.find('\n'));
    return id;
  }();
  return identity;
}

QD_FUNC std::string compiler_fingerprint() {
  static const std::string fingerprint = [] {
    const char* env = std::getenv("QD_CXX");
    std::istringstream words(env && *env ? env : "c++");
    std::vector<std::string> command;
    for (std::string w; words >> w;) command.push_back(w);
    std::string out;
    for (const auto& w : command) out += w + ' ';
    // Resolve the program as posix_spawnp would: a path, or the first match on PATH.
    std::string exe = command.empty() ? std::string() : command[0];
    if (exe.find('/') == std::string::npos) {
      const char* path = std::getenv("PATH");
      std::istringstream dirs(path ? path : "/usr/bin:/bin");
      for (std::string dir; std::getline(dirs, dir, ':');) {
        std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + exe;
        if (::access(candidate.c_str(), X_OK) == 0) {
          exe = candidate;
          break;
        }
      }
    }
    return out + "| " + file_fingerprint(exe);
  }();
  return fingerprint;
}

QD_FUNC std::vector<std::string> compile_flags(const compile_options& options) {
  std::vector<std::string> flags = {"-std=c++17", fmt::format("-O{}", std::clamp(options.opt_level, 0, 3)),
                                    "-fPIC", "-shared", "-fvisibility=hidden", "-fno-exceptions", "-fno-rtti",
                                    "-fno-math-errno", "-fno-semantic-interposition"};
  flags.push_back(options.fast_math ? "-ffast-math" : "-ffp-contract=off");
  return flags;
}

QD_FUNC std::vector<std::byte> compile_shared_object(std::string_view source, const compile_options& options,
                                                     std::string_view what) {
  const compiler_identity& cxx = host_compiler();
  detail::scratch_dir dir;
  auto src = dir.path / "src.cpp";
  auto out = dir.path / "out.so";
  auto log = (dir.path / "log.txt").string();
  {
    std::ofstream f(src, std::ios::binary);
    f.write(source.data(), static_cast<std::streamsize>(source.size()));
    if (!f)
      throw driver_error(fmt::format("cannot write generated source to {}: disk full or not writable?", src.string()),
                         "write", errno);
  }
  std::vector<std::string> argv = cxx.command;
  auto flags = compile_flags(options);
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {src.string(), "-o", out.string(), "-lm"});
  int status = detail::run_process(argv, log);
  if (status != 0) {
    std::string text = detail::read_text(log);
    std::string options_text;
    for (const auto& f : flags) options_text += f + " ";
    throw compile_error(fmt::format("{}: the host C++ compiler '{}' rejected generated code (exit {}).\n{}\n{}\nThis is "
                                    "a bug in Quadrants' code generation unless QD_CXX points at an unsuitable "
                                    "compiler; please report it with this message",
                                    what, cxx.command[0], status, detail::offending_line(text, source), text),
                        std::string(what), options_text, std::string(source), text);
  }
  std::string bytes = detail::read_text(out);
  std::vector<std::byte> binary(bytes.size());
  std::memcpy(binary.data(), bytes.data(), bytes.size());
  return binary;
}

}  // namespace qd::backend::cpu
