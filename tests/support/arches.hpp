// The backends the simulation library's tests run on (CPU with 1 and 2 threads, the
// reference backend, the GPUs) and start<A>(), which reports a missing GPU as a skipped
// test, saying why.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include <quadrants/quadrants.hpp>

namespace qd_algorithm_test {

struct on_cpu1 {
  static constexpr qd::arch arch = qd::arch::cpu;
  static constexpr int threads = 1;
  static constexpr const char* name = "cpu";
};
struct on_cpu2 {
  static constexpr qd::arch arch = qd::arch::cpu;
  static constexpr int threads = 2;
  static constexpr const char* name = "cpu";
};
struct on_reference {
  static constexpr qd::arch arch = qd::arch::reference;
  static constexpr int threads = 1;
  static constexpr const char* name = "reference";
};
struct on_cuda {
  static constexpr qd::arch arch = qd::arch::cuda;
  static constexpr int threads = 1;
  static constexpr const char* name = "cuda";
};
struct on_amdgpu {
  static constexpr qd::arch arch = qd::arch::amdgpu;
  static constexpr int threads = 1;
  static constexpr const char* name = "amdgpu";
};

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
    const std::string why = std::string("skipped on ") + A::name + ": " + e.what();
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
