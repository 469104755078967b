// Implementation of backend/cpu/compiler.hpp.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "quadrants/backend/compiler_log.hpp"
#include "quadrants/backend/cpu/compiler.hpp"
#include "quadrants/backend/cpu/scratch_dir.hpp"
#include "quadrants/backend/shared_library.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"

extern char** environ;

namespace qd::inline v0::backend::cpu {
namespace detail {

// Kills the process group it leads when the write end of `lifeline` closes — when this
// process ends, however it ends (SIGKILL included: the kernel closes its files) — so that
// a hung compiler and its own children never outlive it. A shell, because any program
// spawned must be one that exists: forking this process instead costs a copy of its page
// tables (~250 ms at 1 GB resident, measured here). Killed by us once the compiler is done.
inline constexpr const char* lifeline_watcher = "while read line <&3; do :; done; kill -9 0";

// Starts the watcher, leading a new process group, with the lifeline's read end as fd 3;
// its pid, or -1 (the compiler then runs unwatched).
QD_FUNC pid_t start_watcher(int lifeline_read) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, lifeline_read, 3);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  char* args[] = {const_cast<char*>("sh"), const_cast<char*>("-c"), const_cast<char*>(lifeline_watcher), nullptr};
  pid_t pid = -1;
  if (posix_spawn(&pid, "/bin/sh", &actions, &attributes, args, environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  return pid;
}

QD_FUNC void stop_watcher(pid_t watcher) {
  if (watcher <= 0) return;
  ::kill(watcher, SIGKILL);
  int status = 0;
  while (::waitpid(watcher, &status, 0) < 0 && errno == EINTR) {
  }
}

// Runs argv in a process group of its own (led by the lifeline watcher above), stdout and
// stderr into `log_path`; past `timeout_seconds` (0: none) the whole group is killed, and
// it dies with this process however that ends.
QD_FUNC process_result run_process(const std::vector<std::string>& argv, const std::string& log_path,
                                   int timeout_seconds) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int lifeline[2] = {-1, -1};
  const pid_t watcher = ::pipe2(lifeline, O_CLOEXEC) == 0 ? start_watcher(lifeline[0]) : -1;
  if (lifeline[0] >= 0) ::close(lifeline[0]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  // The watcher's group, or one of its own: its children die with it on a timeout.
  posix_spawnattr_setpgroup(&attributes, watcher > 0 ? watcher : 0);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  struct lifeline_end {  // closes the lifeline and stops the watcher on every way out
    int fd;
    pid_t watcher;
    ~lifeline_end() {
      stop_watcher(watcher);
      if (fd >= 0) ::close(fd);
    }
  } end{lifeline[1], watcher};
  if (rc != 0)
    throw driver_error(fmt::format("cannot start the host C++ compiler '{}': {}. Install g++ or point QD_CXX at a "
                                   "C++ compiler",
                                   argv[0], std::strerror(rc)),
                       "posix_spawnp", rc);
  const pid_t group = watcher > 0 ? watcher : pid;
  process_result result;
  if (timeout_seconds > 0) {
    // Wait on a pidfd where the kernel has them (5.3+), else poll waitpid.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    auto nap = std::chrono::microseconds(500);
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        result.timed_out = true;
        break;
      }
      if (pidfd >= 0) {
        pollfd p{pidfd, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count() + 1, 60000))) > 0) break;
      } else {
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid) {
          result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
          result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
          return result;
        }
        std::this_thread::sleep_for(nap);
        nap = std::min(nap * 2, std::chrono::microseconds(20000));
      }
    }
    if (pidfd >= 0) ::close(pidfd);
    if (result.timed_out) ::kill(-group, SIGKILL);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!result.timed_out) {
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  }
  return result;
}

QD_FUNC std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The first line of `log` holding one of `needles`, or "".
QD_FUNC std::string_view line_with(std::string_view log, std::initializer_list<std::string_view> needles) {
  for (std::string_view needle : needles) {
    auto at = log.find(needle);
    if (at == std::string_view::npos) continue;
    auto begin = log.rfind('\n', at);
    begin = begin == std::string_view::npos ? 0 : begin + 1;
    return log.substr(begin, log.find('\n', at) - begin);
  }
  return {};
}

// Why a compile failed, when the cause is not the generated code: the compiler was
// stopped or crashed, could not write its files, or could not run its own programs.
// Empty when the compiler rejected the code.
QD_FUNC std::string failure_not_in_the_code(const process_result& r, const std::string& log, const std::string& dir,
                                            int timeout_seconds) {
  if (r.timed_out)
    return fmt::format(
        "did not finish within compile_timeout = {} s and was stopped (its process group killed). "
        "Raise compile_timeout (QD_COMPILE_TIMEOUT; 0: no limit) for kernels this large, or check "
        "that QD_CXX is a compiler",
        timeout_seconds);
  if (r.signal != 0)
    return fmt::format("was killed by signal {} ({}){}; it did not reject the generated code", r.signal,
                       ::strsignal(r.signal),
                       r.signal == SIGKILL ? ", often the out-of-memory killer: check the memory available to this "
                                             "process"
                                           : ": the compiler crashed");
  struct statvfs fs {};
  std::string space = ::statvfs(dir.c_str(), &fs) == 0
                          ? fmt::format("{} bytes free", static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize)
                          : std::string("free space unknown");
  if (log.find_first_not_of(" \t\r\n") == std::string::npos)
    return fmt::format(
        "exited with status {} without a message, which happens when it cannot write its files: is "
        "the file system of TMPDIR ({}, {}) full or read-only? Free space there or set TMPDIR to "
        "another directory",
        r.exit_code, scratch_root(), space);
  if (auto line = line_with(log, {"No space left on device", "Disk quota exceeded", "File too large"}); !line.empty())
    return fmt::format(
        "could not write its files ({}): the file system of TMPDIR ({}, {}) is full; free space "
        "there or set TMPDIR to another directory",
        line, scratch_root(), space);
  if (auto line =
          line_with(log, {"cannot execute", "error trying to exec", "installation problem, cannot exec",
                          "collect2: fatal error: cannot find", "unable to execute command", "command not found"});
      !line.empty() || r.exit_code == 126 || r.exit_code == 127)
    return fmt::format(
        "could not run one of its own programs ({}): the compiler installation is incomplete or not "
        "on PATH. Reinstall it, or point QD_CXX at a complete compiler",
        line.empty() ? fmt::format("exit status {}", r.exit_code) : std::string(line));
  return {};
}

}  // namespace detail

QD_FUNC std::vector<std::string> compiler_command() {
  const char* env = std::getenv("QD_CXX");
  if (env == nullptr) return {"c++"};
  std::vector<std::string> command;
  std::istringstream words(env);
  for (std::string w; words >> w;) command.push_back(w);
  if (command.empty())
    throw user_error(
        fmt::format("QD_CXX='{}' is set but blank; unset it to use c++, or set it to a C++ compiler "
                    "such as g++ or clang++ (with options after the program)",
                    env));
  return command;
}

QD_FUNC const compiler_identity& host_compiler(int timeout_seconds) {
  // One identity per command: QD_CXX may change between programs.
  static std::mutex mutex;
  static std::map<std::vector<std::string>, compiler_identity> resolved;
  std::vector<std::string> command = compiler_command();
  std::lock_guard lock(mutex);
  if (auto it = resolved.find(command); it != resolved.end()) return it->second;
  compiler_identity id;
  id.command = command;
  scratch_dir dir;
  auto argv = id.command;
  argv.push_back("--version");
  auto log = dir.path() + "/version.txt";
  detail::process_result r = detail::run_process(argv, log, timeout_seconds);
  std::string text = detail::read_text(log);
  if (r.timed_out || r.signal != 0 || r.exit_code != 0) {
    std::string why = detail::failure_not_in_the_code(r, text, dir.path(), timeout_seconds);
    throw driver_error(
        fmt::format("the host C++ compiler '{}' does not run ('{} --version' {}): {}", id.command[0], id.command[0],
                    why.empty() ? fmt::format("failed, exit status {}", r.exit_code) : why, text),
        "c++ --version", r.exit_code);
  }
  id.version = text.substr(0, text.find('\n'));
  id.gcc = text.find("Free Software Foundation") != std::string::npos;
  return resolved.emplace(std::move(command), std::move(id)).first->second;
}

QD_FUNC std::string compiler_fingerprint() {
  static std::mutex mutex;
  static std::map<std::vector<std::string>, std::string> fingerprints;
  std::vector<std::string> command = compiler_command();
  std::lock_guard lock(mutex);
  if (auto it = fingerprints.find(command); it != fingerprints.end()) return it->second;
  std::string out;
  for (const auto& w : command) out += w + ' ';
  // Resolve the program as posix_spawnp would: a path, or the first match on PATH.
  std::string exe = command[0];
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
  return fingerprints.emplace(std::move(command), out + "| " + file_fingerprint(exe)).first->second;
}

QD_FUNC std::vector<std::string> compile_flags(const compile_options& options, bool gcc) {
  const int level = std::clamp(options.opt_level, 0, 3);
  std::vector<std::string> flags = {"-std=c++17"};
  if (level == 2 && gcc) {
    // -O2 less its value-range propagation, partial-redundancy elimination, scheduling and
    // interprocedural passes, which take about 30 % of its time on generated code; on
    // bench/sim_bench, cpu_bench and scatter_bench only a single-thread u32 sort read slower
    // (about 10 %). The cost model keeps the vectoriser as cheap as -O2's.
    flags.insert(flags.end(), {"-O1", "-fstrict-aliasing", "-ftree-loop-vectorize", "-ftree-slp-vectorize",
                               "-fvect-cost-model=very-cheap"});
  } else {
    flags.push_back(fmt::format("-O{}", level));
  }
  flags.insert(flags.end(), {"-fPIC", "-shared", "-fvisibility=hidden", "-fno-exceptions", "-fno-rtti",
                             "-fno-math-errno", "-fno-semantic-interposition"});
  // Two mapped segments instead of four, no RELRO range to protect: dlopen of a module costs
  // about 60 % (docs/architecture.md, "The CPU backend").
  flags.insert(flags.end(), {"-Wl,-z,noseparate-code", "-Wl,-z,norelro"});
  flags.push_back(options.fast_math ? "-ffast-math" : "-ffp-contract=off");
  return flags;
}

QD_FUNC std::vector<std::byte> compile_shared_object(std::string_view source, const compile_options& options,
                                                     std::string_view what) {
  const compiler_identity& cxx = host_compiler(options.timeout_seconds);
  scratch_dir dir;
  std::string src = dir.path() + "/src.cpp";
  std::string out = dir.path() + "/out.so";
  std::string log = dir.path() + "/log.txt";
  {
    std::ofstream f(src, std::ios::binary);
    f.write(source.data(), static_cast<std::streamsize>(source.size()));
    f.close();  // a full disk shows when the buffer is written out
    if (f.fail())
      throw driver_error(fmt::format("{}: cannot write the generated source to {}: is the file system of TMPDIR full "
                                     "or read-only? Free space there or set TMPDIR to another directory",
                                     what, src),
                         "write", errno);
  }
  std::vector<std::string> argv = cxx.command;
  auto flags = compile_flags(options, cxx.gcc);
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {src, "-o", out, "-lm"});
  detail::process_result r = detail::run_process(argv, log, options.timeout_seconds);
  std::string text = detail::read_text(log);
  std::string options_text;
  for (const auto& f : flags) options_text += f + " ";
  if (r.timed_out || r.signal != 0 || r.exit_code != 0) {
    std::string why = detail::failure_not_in_the_code(r, text, dir.path(), options.timeout_seconds);
    if (!why.empty())
      throw compile_error(fmt::format("{}: the host C++ compiler '{}' {}.\n{}", what, cxx.command[0], why, text),
                          std::string(what), options_text, std::string(source), text);
    throw compile_error(
        fmt::format("{}: the host C++ compiler '{}' rejected generated code (exit {}).\n{}\n{}\nThis is "
                    "a bug in Quadrants' code generation unless QD_CXX points at an unsuitable "
                    "compiler; please report it with this message",
                    what, cxx.command[0], r.exit_code, quote_generated_line(text, source, "src.cpp"), text),
        std::string(what), options_text, std::string(source), text);
  }
  std::string bytes = detail::read_text(out);
  if (bytes.empty())
    throw compile_error(fmt::format("{}: the host C++ compiler '{}' reported success but wrote no shared object "
                                    "({}); is the file system of TMPDIR ({}) full?\n{}",
                                    what, cxx.command[0], out, scratch_root(), text),
                        std::string(what), options_text, std::string(source), text);
  std::vector<std::byte> binary(bytes.size());
  std::memcpy(binary.data(), bytes.data(), bytes.size());
  return binary;
}

}  // namespace qd::inline v0::backend::cpu
