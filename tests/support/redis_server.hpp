// A private redis-server for one test: a unix socket in a fresh temporary directory (never
// a network port), no persistence, stopped by its process id. Commands go through redis-cli.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "quadrants/cache/remote.hpp"

extern char** environ;

namespace qd_test {

// The path of `program` on $PATH, or empty.
inline std::string find_program(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (std::size_t start = 0; start <= dirs.size();) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(start, end - start) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return {};
}

// Starts `argv` with stdout (and stderr) sent to `out_fd` when given; the pid or -1.
inline pid_t spawn_program(const std::vector<std::string>& args, int out_fd = -1, int in_fd = -1) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (out_fd >= 0) {
    posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, out_fd, 2);
  }
  if (in_fd >= 0) posix_spawn_file_actions_adddup2(&actions, in_fd, 0);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

inline int wait_exit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Runs `args` to completion; its output.
inline std::string run_program(const std::vector<std::string>& args, int* status = nullptr) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {};
  pid_t pid = spawn_program(args, fds[1]);
  ::close(fds[1]);
  std::string out;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int st = pid > 0 ? wait_exit(pid) : -1;
  if (status) *status = st;
  return out;
}

class redis_server {
 public:
  // Empty when redis-server is not installed (the tests then report a skip).
  static std::string binary() { return find_program("redis-server"); }
  static std::string cli() { return find_program("redis-cli"); }

  explicit redis_server(std::vector<std::string> extra = {}) : extra_(std::move(extra)) {
    char pattern[] = "/tmp/qd-redis-XXXXXX";  // short: a socket path has at most 107 bytes
    if (!::mkdtemp(pattern)) std::abort();
    dir_ = pattern;
    socket_ = dir_ + "/redis.sock";
    start();
  }
  redis_server(const redis_server&) = delete;
  redis_server& operator=(const redis_server&) = delete;
  ~redis_server() {
    stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  const std::string& socket() const { return socket_; }
  std::string url() const { return "unix://" + socket_; }
  const std::string& dir() const { return dir_; }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }

  // Starts (or restarts) the server on the same socket; waits until it answers PING.
  bool start() {
    if (pid_ > 0) return true;
    std::vector<std::string> args = {binary(),
                                     "--port",
                                     "0",
                                     "--unixsocket",
                                     socket_,
                                     "--unixsocketperm",
                                     "700",
                                     "--save",
                                     "",
                                     "--appendonly",
                                     "no",
                                     "--dir",
                                     dir_,
                                     "--daemonize",
                                     "no",
                                     "--logfile",
                                     dir_ + "/redis.log",
                                     "--enable-debug-command",
                                     "local"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    pid_ = spawn_program(args);
    if (pid_ <= 0) return false;
    for (int i = 0; i < 500; ++i) {
      if (ping()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  // Stops the server by its pid (SIGTERM, or SIGKILL to simulate a crash) and waits.
  void stop(int signal = SIGTERM) {
    if (pid_ <= 0) return;
    ::kill(pid_, signal);
    wait_exit(pid_);
    pid_ = -1;
    ::unlink(socket_.c_str());
  }

  // One command through redis-cli; its output without the trailing newline.
  std::string command(std::vector<std::string> args) const {
    args.insert(args.begin(), {cli(), "-s", socket_});
    std::string out = run_program(args);
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
  }
  // The same, not waited for (e.g. DEBUG SLEEP); the caller waits for the pid.
  pid_t command_async(std::vector<std::string> args) const {
    args.insert(args.begin(), {cli(), "-s", socket_});
    int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    pid_t p = spawn_program(args, devnull);
    ::close(devnull);
    return p;
  }

  bool ping() const {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket_.c_str(), sizeof addr.sun_path - 1);
    bool ok = false;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::write(fd, "PING\r\n", 6) == 6) {
      char reply[16] = {};
      ok = ::read(fd, reply, sizeof reply - 1) > 0 && std::strncmp(reply, "+PONG", 5) == 0;
    }
    ::close(fd);
    return ok;
  }

 private:
  std::vector<std::string> extra_;
  std::string dir_, socket_;
  pid_t pid_ = -1;
};

// Empty when the remote tier can be tested here, else why not (for a skip message).
inline std::string remote_tier_skip_reason() {
  if (!qd::cache::remote_supported())
    return "skipped: this build has no remote cache tier (hiredis and libsodium were not found)";
  if (redis_server::binary().empty() || redis_server::cli().empty())
    return "skipped: redis-server or redis-cli is not installed (scripts/install-deps installs redis-server)";
  return {};
}

}  // namespace qd_test
