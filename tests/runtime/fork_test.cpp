// A process that forks after launching kernels: the child's CPU thread pool has no
// workers (only the forking thread survives fork), so the pool starts new ones.
// Not run under ThreadSanitizer, which does not support a multithreaded fork.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <functional>

#include "runtime/runtime_test_support.hpp"

namespace {

// Runs `body` in a child of fork(); its result is the child's exit status (0: success;
// an exception: 2; a hang past 30 s: killed by SIGALRM). The parent checks it.
void check_in_child(const std::function<int()>& body) {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::alarm(30);  // a hang becomes a failure, not a stuck test
    int status = 0;
    try {
      status = body();
    } catch (...) {
      status = 2;
    }
    ::_exit(status);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

}  // namespace

TEST_CASE("a child of fork() after a launch gets a working thread pool") {
  qd_test::init_cpu({.cpu_max_num_threads = 2});
  auto k = qd::kernel("scale", {"x"}, [](qd::types::ndarray<float, 1> x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = x[i] * 2.0f; });
  });
  constexpr int n = 100000;  // far above the pool's inline threshold: the workers run it
  qd::ndarray<float, 1> x(n);
  x.fill(1.0f);
  k(x);
  REQUIRE(x.to_host()[n - 1] == 2.0f);
  check_in_child([&] {
    k(x);
    k(x);
    int status = 0;
    for (float v : x.to_host()) status |= v != 8.0f;
    return status;
  });
  // The parent's pool is untouched.
  k(x);
  CHECK(x.to_host()[0] == 4.0f);
  qd::reset();
}

TEST_CASE("a child of fork() after concurrent regions ran gets working branch workers") {
  qd_test::init_cpu({.cpu_max_num_threads = 2});
  auto k = qd::kernel("regions", {"x"}, [](qd::types::ndarray<float, 1> x) {
    qd::concurrent([&] { qd::range_for(0, 2, [&](qd::i32 i) { x[i] = x[i] + 1.0f; }); },
                   [&] { qd::range_for(2, 4, [&](qd::i32 i) { x[i] = x[i] + 2.0f; }); });
  });
  qd::ndarray<float, 1> x(4);
  k(x);  // the branch workers start in the parent
  REQUIRE(x.to_host() == std::vector<float>{1, 1, 2, 2});
  check_in_child([&] {
    k(x);
    return x.to_host() != std::vector<float>{2, 2, 4, 4} ? 1 : 0;
  });
  k(x);
  CHECK(x.to_host() == std::vector<float>{2, 2, 4, 4});
  qd::reset();
}
