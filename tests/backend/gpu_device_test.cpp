// Choosing a GPU backend (SPEC §7, issue 5): a missing library or GPU is one warning
// and the CPU with enable_fallback, a clear error naming what is missing without it
// (each case once per vendor); cache keys separate targets. Deterministic: the
// "missing" cases are made missing.
#include <doctest/doctest.h>

#include <filesystem>

#include <quadrants/quadrants.hpp>

#include "backend/compile_only_support.hpp"
#include "backend/gpu_vendors.hpp"
#include "runtime/runtime_test_support.hpp"

namespace {

using qd_test::on_amdgpu;
using qd_test::on_cuda;

auto doubling() {
  return qd::kernel("doubling", {"x"}, [](qd::types::ndarray<float, 1> x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 2.0f * i; });
  });
}

}  // namespace

TEST_CASE_TEMPLATE("a GPU arch with no usable driver falls back to the CPU with one warning naming what is missing", V,
                   on_cuda, on_amdgpu) {
  qd_test::scoped_env missing(V::driver_variable, "/nonexistent/libgpu.so");
  auto k = doubling();
  SUBCASE("enable_fallback = true") {
    qd_test::log_capture logs;
    qd::init({.arch = V::arch, .log_level = qd::log_level::warn});
    auto warnings = logs.at(qd::log_level::warn);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find(std::string("qd::init(arch = ") + V::arch_name + ")") != std::string::npos);
    CHECK(warnings[0].find(V::driver_variable) != std::string::npos);
    CHECK(warnings[0].find("falling back to arch = cpu") != std::string::npos);
    CHECK(qd::current_settings().arch == qd::arch::cpu);
    qd::ndarray<float, 1> x(3);
    k(x);
    CHECK(x.to_host() == std::vector<float>{0.0f, 2.0f, 4.0f});
    CHECK(logs.at(qd::log_level::warn).size() == 1);
  }
  SUBCASE("enable_fallback = false") {
    CHECK_THROWS_WITH_AS(qd::init({.arch = V::arch, .enable_fallback = false}), doctest::Contains(V::driver_variable),
                         qd::user_error);
    CHECK_FALSE(qd::is_initialized());
  }
}

TEST_CASE("the CUDA stub library is a driver that cannot run anything, reported as such") {
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) {
    const std::string message = std::string("skipped: no CUDA toolkit stub library at ") + stub;
    MESSAGE(message);
    return;
  }
  qd_test::scoped_env path("QD_CUDA_PATH", stub);
  CHECK_THROWS_WITH_AS(qd::init({.arch = qd::arch::cuda, .enable_fallback = false}),
                       doctest::Contains("CUDA_ERROR_STUB_LIBRARY"), qd::user_error);
  CHECK_THROWS_WITH_AS(qd::init({.arch = qd::arch::cuda, .enable_fallback = false}), doctest::Contains("cuInit"),
                       qd::user_error);
}

TEST_CASE_TEMPLATE("compile-only mode needs the compiler: a missing one falls back, or is an error naming its variable",
                   V, on_cuda, on_amdgpu) {
  qd_test::scoped_env missing(V::compiler_variable, "/nonexistent");
  qd_test::scratch_directory cache(std::string("gpu-device-no-compiler-") + V::arch_name);
  qd_test::log_capture logs;
  qd::config c = V::target();
  c.offline_cache_file_path = cache.str();
  c.log_level = qd::log_level::warn;
  c.compile_only = true;
  qd::init(c);
  CHECK(logs.count(qd::log_level::warn, V::compiler_variable) == 1);
  CHECK(qd::current_settings().arch == qd::arch::cpu);
  c.enable_fallback = false;
  CHECK_THROWS_WITH_AS(qd::init(c), doctest::Contains(V::compiler_variable), qd::user_error);
}

TEST_CASE("cache keys hold the target: the same kernel compiles anew for sm_80 after sm_90, and per option") {
  if (!on_cuda::compiler_installed()) return;
  qd_test::scratch_directory cache("gpu-device-targets");
  auto k = doubling();
  auto compiled_for = [&](qd::config c) {
    c.arch = qd::arch::cuda;
    c.offline_cache_file_path = cache.str();
    c.compile_only = true;
    c.enable_fallback = false;
    qd::init(c);
    k.compile();
    return k.per_offload_cache_observations();
  };
  CHECK(compiled_for({.cuda_arch = 90}).constructs_compiled == 1);
  CHECK(compiled_for({.cuda_arch = 90}).constructs_loaded == 1);
  CHECK(compiled_for({.cuda_arch = 80}).constructs_compiled == 1);
  CHECK(compiled_for({.fast_math = true, .cuda_arch = 90}).constructs_compiled == 1);
  CHECK(compiled_for({.check_out_of_bound = true, .cuda_arch = 90}).constructs_compiled == 1);
  CHECK(compiled_for({.cuda_arch = 80}).constructs_loaded == 1);
  qd::reset();
}
