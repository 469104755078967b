// Choosing a GPU backend (SPEC §7, issue 5): a missing library or GPU is one warning
// and the CPU with enable_fallback, a clear error naming what is missing without it;
// cache keys separate targets. Deterministic: the "missing" cases are made missing.
#include <doctest/doctest.h>

#include <filesystem>

#include <quadrants/quadrants.hpp>

#include "backend/compile_only_support.hpp"
#include "quadrants/backend/cuda/nvrtc.hpp"
#include "quadrants/backend/shared_library.hpp"
#include "runtime/runtime_test_support.hpp"

namespace {

auto doubling() {
  return qd::kernel("doubling", {"x"}, [](qd::types::ndarray<float, 1> x) {
    qd::range_for(x.shape(0), [&](qd::i32 i) { x[i] = 2.0f * i; });
  });
}

}  // namespace

TEST_CASE("arch = cuda with no usable CUDA driver falls back to the CPU with one warning naming what is missing") {
  qd_test::scoped_env missing("QD_CUDA_PATH", "/nonexistent/libcuda.so.1");
  auto k = doubling();
  SUBCASE("enable_fallback = true") {
    qd_test::log_capture logs;
    qd::init({.arch = qd::arch::cuda, .log_level = qd::log_level::warn});
    auto warnings = logs.at(qd::log_level::warn);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("qd::init(arch = cuda)") != std::string::npos);
    CHECK(warnings[0].find("QD_CUDA_PATH") != std::string::npos);
    CHECK(warnings[0].find("falling back to arch = cpu") != std::string::npos);
    CHECK(qd::current_settings().arch == qd::arch::cpu);
    qd::ndarray<float, 1> x(3);
    k(x);
    CHECK(x.to_host() == std::vector<float>{0.0f, 2.0f, 4.0f});
    CHECK(logs.at(qd::log_level::warn).size() == 1);
  }
  SUBCASE("enable_fallback = false") {
    CHECK_THROWS_WITH_AS(qd::init({.arch = qd::arch::cuda, .enable_fallback = false}),
                         doctest::Contains("QD_CUDA_PATH"), qd::user_error);
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
  CHECK_THROWS_WITH_AS(qd::init({.arch = qd::arch::cuda, .enable_fallback = false}),
                       doctest::Contains("cuInit"), qd::user_error);
}

TEST_CASE("arch = amdgpu with no usable HIP runtime falls back to the CPU with one warning naming what is missing") {
  qd_test::scoped_env missing("QD_HIP_PATH", "/nonexistent");
  qd_test::log_capture logs;
  qd::init({.arch = qd::arch::amdgpu, .log_level = qd::log_level::warn});
  auto warnings = logs.at(qd::log_level::warn);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("qd::init(arch = amdgpu)") != std::string::npos);
  CHECK(warnings[0].find("QD_HIP_PATH") != std::string::npos);
  CHECK(qd::current_settings().arch == qd::arch::cpu);
  CHECK_THROWS_WITH_AS(qd::init({.arch = qd::arch::amdgpu, .enable_fallback = false}),
                       doctest::Contains("QD_HIP_PATH"), qd::user_error);
}

TEST_CASE("compile-only mode needs the compiler: a missing NVRTC falls back, or is an error naming QD_NVRTC_PATH") {
  qd_test::scoped_env missing("QD_NVRTC_PATH", "/nonexistent");
  qd_test::scratch_directory cache("gpu-device-no-nvrtc");
  qd_test::log_capture logs;
  qd::init({.arch = qd::arch::cuda, .offline_cache_file_path = cache.str(), .log_level = qd::log_level::warn,
            .compile_only = true, .cuda_arch = 90});
  CHECK(logs.count(qd::log_level::warn, "QD_NVRTC_PATH") == 1);
  CHECK(qd::current_settings().arch == qd::arch::cpu);
  CHECK_THROWS_WITH_AS(qd::init({.arch = qd::arch::cuda, .offline_cache_file_path = cache.str(), .compile_only = true,
                                 .cuda_arch = 90, .enable_fallback = false}),
                       doctest::Contains("QD_NVRTC_PATH"), qd::user_error);
}

TEST_CASE("cache keys hold the target: the same kernel compiles anew for sm_80 after sm_90, and per option") {
  try {
    qd::backend::locate_library(qd::backend::cuda::nvrtc_library());
  } catch (const qd::error& e) {
    const std::string message = std::string("skipped: NVRTC is not installed: ") + e.what();
    MESSAGE(message);
    return;
  }
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
