// The backends the simulation library's tests run on (CPU with 1 and 2 threads, the
// reference backend, the GPUs) and start<A>(), which reports a missing GPU as a skipped
// test, saying why.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include <quadrants/quadrants.hpp>

namespace qd_algorithm_test {

// A backend and the CPU thread count a test instance runs with.
template <qd::arch A, int Threads = 1>
struct on_arch {
  static constexpr qd::arch arch = A;
  static constexpr int threads = Threads;
};
using on_cpu1 = on_arch<qd::arch::cpu, 1>;
using on_cpu2 = on_arch<qd::arch::cpu, 2>;
using on_reference = on_arch<qd::arch::reference>;
using on_cuda = on_arch<qd::arch::cuda>;
using on_amdgpu = on_arch<qd::arch::amdgpu>;

// Starts a program; a GPU that is missing reports the test skipped (the CPU and the
// reference backend are always there: their failure is an error).
template <class A>
bool start(qd::config c = {}) {
  c.arch = A::arch;
  c.enable_fallback = false;
  c.cpu_max_num_threads = A::threads;
  try {
    qd::init(c);
    return true;
  } catch (const qd::error& e) {
    if (A::arch == qd::arch::cpu || A::arch == qd::arch::reference) throw;
    const std::string why = "skipped on " + std::string(qd::name(A::arch)) + ": " + e.what();
    MESSAGE(why);
    return false;
  }
}

}  // namespace qd_algorithm_test

// Short names: the emulated-GPU tests select "*<on_cuda>*" (tests/emulated_gpus.cmake).
TYPE_TO_STRING_AS("on_cpu1", qd_algorithm_test::on_cpu1);
TYPE_TO_STRING_AS("on_cpu2", qd_algorithm_test::on_cpu2);
TYPE_TO_STRING_AS("on_reference", qd_algorithm_test::on_reference);
TYPE_TO_STRING_AS("on_cuda", qd_algorithm_test::on_cuda);
TYPE_TO_STRING_AS("on_amdgpu", qd_algorithm_test::on_amdgpu);

#define QD_ALGORITHM_ARCHES                                                                                            \
  qd_algorithm_test::on_cpu1, qd_algorithm_test::on_cpu2, qd_algorithm_test::on_reference, qd_algorithm_test::on_cuda, \
      qd_algorithm_test::on_amdgpu
