// Compile-only round trips for the GPU compilers: every kernel of suite_kernels.hpp
// compiled for one target with no GPU, stored in the offline cache, and loaded
// back by a second program without compiling anything.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <quadrants/quadrants.hpp>

#include "support/fresh_dir.hpp"

namespace qd_test {

// A fresh directory, removed on scope exit.
using scratch_directory = fresh_dir;

// Creates (and drops) a small array: an allocation on the current device.
inline void allocate_an_array() { qd::ndarray<float, 1> a(4); }

struct compiled_kernel_result {
  std::string name;
  qd::per_offload_observations observations;
};

// Compiles every suite kernel in the running program (kernel.compile(): no launch).
// Defined in compile_only_support.cpp (the library qd_test_compile_only), so that
// the suite's kernels are instantiated once, not in every test that includes this.
std::vector<compiled_kernel_result> compile_suite_kernels();

// One compile-only configuration: the target and the variant.
struct compile_only_pass {
  qd::per_offload_mode per_offload;
  bool bounds_checks;
};

// Compiles the suite into a cold cache, checks what was compiled and stored, then
// compiles it again in a new program and checks everything came from the cache.
void check_compile_only_round_trip(qd::config target, const compile_only_pass& pass, const std::string& cache);

}  // namespace qd_test
