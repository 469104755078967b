// A hostile or broken Redis server for attack tests: a unix socket in a fresh temporary
// directory, one thread that serves connections one after another, parses each command
// and lets the test's handler answer it (trickle, flood, nest, hang, nil...).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace qd_test {

class fake_redis {
 public:
  // Answers one command on `fd` (the command's words); false closes the connection.
  using handler = std::function<bool(fake_redis& server, int fd, const std::vector<std::string>& command)>;

  explicit fake_redis(handler answer) : answer_(std::move(answer)) {
    char pattern[] = "/tmp/qd-fake-redis-XXXXXX";  // short: a socket path has at most 107 bytes
    if (!::mkdtemp(pattern)) std::abort();
    dir_ = pattern;
    socket_ = dir_ + "/redis.sock";
    if (::pipe2(stop_pipe_, O_CLOEXEC) != 0) std::abort();
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket_.c_str(), sizeof addr.sun_path - 1);
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener_, 16) != 0)
      std::abort();
    thread_ = std::thread([this] { serve(); });
  }
  fake_redis(const fake_redis&) = delete;
  fake_redis& operator=(const fake_redis&) = delete;
  ~fake_redis() {
    stopping_ = true;
    [[maybe_unused]] ssize_t n = ::write(stop_pipe_[1], "x", 1);
    thread_.join();
    ::close(listener_);
    ::close(stop_pipe_[0]);
    ::close(stop_pipe_[1]);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string url() const { return "unix://" + socket_; }
  const std::string& dir() const { return dir_; }
  int connections() const { return connections_.load(); }
  int commands() const { return commands_.load(); }

  // For handlers. Waits until the server stops: a server that never answers.
  void hang() { wait_for_stop(-1); }
  // Sends `bytes` one at a time, `gap` apart; false when the client left or the server stops.
  bool trickle(int fd, std::string_view bytes, std::chrono::milliseconds gap) {
    for (char c : bytes) {
      if (!send_all(fd, std::string_view(&c, 1))) return false;
      if (wait_for_stop(static_cast<int>(gap.count()))) return false;
    }
    return true;
  }
  // Sends everything; false when the client closed its end.
  bool send_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
      pollfd p[2] = {{fd, POLLOUT, 0}, {stop_pipe_[0], POLLIN, 0}};
      if (::poll(p, 2, -1) < 0 && errno != EINTR) return false;
      if (p[1].revents) return false;
      if (!p[0].revents) continue;
      ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

 private:
  // True when the server is stopping; waits at most `ms` (-1: no limit) for that.
  bool wait_for_stop(int ms) {
    pollfd p{stop_pipe_[0], POLLIN, 0};
    while (::poll(&p, 1, ms) < 0 && errno == EINTR) {
    }
    return stopping_.load();
  }

  // One command from the front of `buffer` (a RESP array of bulk strings), if complete.
  static std::optional<std::vector<std::string>> take_command(std::string& buffer) {
    std::size_t at = 0;
    auto number = [&](char type) -> std::optional<long> {
      if (at >= buffer.size() || buffer[at] != type) return std::nullopt;
      std::size_t end = buffer.find("\r\n", at);
      if (end == std::string::npos) return std::nullopt;
      long v = std::strtol(buffer.c_str() + at + 1, nullptr, 10);
      at = end + 2;
      return v;
    };
    std::optional<long> count = number('*');
    if (!count) return std::nullopt;
    std::vector<std::string> words;
    for (long i = 0; i < *count; ++i) {
      std::optional<long> length = number('$');
      if (!length || at + static_cast<std::size_t>(*length) + 2 > buffer.size()) return std::nullopt;
      words.emplace_back(buffer, at, static_cast<std::size_t>(*length));
      at += static_cast<std::size_t>(*length) + 2;
    }
    buffer.erase(0, at);
    return words;
  }

  void serve() {
    while (!stopping_) {
      pollfd p[2] = {{listener_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
      if (::poll(p, 2, -1) < 0 && errno != EINTR) return;
      if (stopping_) return;
      if (!p[0].revents) continue;
      int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      ++connections_;
      std::string buffer;
      bool open = true;
      while (open && !stopping_) {
        while (auto command = take_command(buffer)) {
          ++commands_;
          if (!answer_(*this, fd, *command)) {
            open = false;
            break;
          }
        }
        if (!open) break;
        pollfd q[2] = {{fd, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
        if (::poll(q, 2, -1) < 0 && errno != EINTR) break;
        if (q[1].revents) break;
        char chunk[65536];
        ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
        if (n <= 0) break;
        buffer.append(chunk, static_cast<std::size_t>(n));
      }
      ::close(fd);
    }
  }

  handler answer_;
  std::string dir_, socket_;
  int listener_ = -1;
  int stop_pipe_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0}, commands_{0};
  std::thread thread_;
};

}  // namespace qd_test
