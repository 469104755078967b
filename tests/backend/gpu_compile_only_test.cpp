// Compile-only mode with NVRTC and hipRTC (SPEC §7, issue 5): every suite kernel
// compiled for sm_90 (split and whole) and gfx90a (split) without a GPU, cached, and loaded
// back; a target is required, and nothing can be allocated or run.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "backend/compile_only_support.hpp"
#include "backend/gpu_vendors.hpp"
#include "backend/suite_kernels.hpp"

using qd_test::on_amdgpu;
using qd_test::on_cuda;

TEST_CASE_TEMPLATE("every suite kernel compiles in compile-only mode, split and whole, and loads back", V, on_cuda,
                   on_amdgpu) {
  if (!V::compiler_installed()) return;
  SUBCASE("per_offload on, bounds checks on") {
    qd_test::scratch_directory cache(std::string(V::arch_name) + "-split");
    qd_test::check_compile_only_round_trip(V::target(), {qd::per_offload_mode::on, true}, cache.str());
  }
  // Whole kernels with NVRTC only: a whole module is the same tasks' code put together the
  // same way for both vendors, and hipRTC costs ~0.4 s a program (make test's longest test).
  // The emulated AMD GPU still compiles and runs whole kernels (emulated_amdgpu/gpu_suite).
  if constexpr (V::cuda) {
    SUBCASE("per_offload off (whole kernels), bounds checks off") {
      qd_test::scratch_directory cache(std::string(V::arch_name) + "-whole");
      qd_test::check_compile_only_round_trip(V::target(), {qd::per_offload_mode::off, false}, cache.str());
    }
  }
}

TEST_CASE_TEMPLATE("per-offload caching is the default on a GPU, also in compile-only mode", V, on_cuda, on_amdgpu) {
  if (!V::compiler_installed()) return;
  qd_test::scratch_directory cache(std::string(V::arch_name) + "-default");
  qd::config c = V::target();
  c.offline_cache_file_path = cache.str();
  c.compile_only = true;
  c.enable_fallback = false;
  qd::init(c);
  CHECK(qd::current_settings().arch == V::arch);
  auto k = qd_test::kernels::split_many_values();
  k.compile();
  auto o = k.per_offload_cache_observations();
  CHECK(o.fallback == qd::fallback_reason::none);
  CHECK(o.frontend_constructs_total == 4);
  CHECK(o.constructs_compiled == 4);
  // Editing one construct recompiles only it.
  auto edited = qd::kernel("many_values_edited", {"x", "y", "z", "w", "s"},
                           [](qd::types::ndarray<float, 1> x, qd::types::ndarray<float, 1> y,
                              qd::types::ndarray<std::int32_t, 2> z, qd::types::ndarray<std::int32_t, 1> w, qd::f32 s) {
                             qd::i32 n = x.shape(0);
                             qd::f32 head = x[0] * s;
                             qd::i32 bound = w[1] % n + 1;
                             qd::range_for(n, [&](qd::i32 i) { y[i] = qd::cos(x[i]) * head; });  // edited
                             qd::range_for(qd::ndrange(z.shape(0), z.shape(1)), [&](qd::i32 i, qd::i32 j) {
                               qd::var<std::int32_t> acc = 0;
                               qd::range_for(j + 1, [&](qd::i32 k2) { acc += k2 * i; });
                               qd::if_(acc > 10, [&] { z(i, j) = acc; }).else_([&] { z(i, j) = -acc; });
                             });
                             y[0] = head + qd::cast<float>(bound);
                             qd::range_for(bound, [&](qd::i32 i) { y[i + 1] = y[i + 1] * 0.5f + qd::random<float>(); });
                           });
  qd::init(c);
  edited.compile();
  o = edited.per_offload_cache_observations();
  CHECK(o.constructs_compiled == 1);
  CHECK(o.constructs_loaded == 3);
  qd::reset();
}

TEST_CASE_TEMPLATE("compile-only mode needs an explicit target, and refuses to allocate or launch", V, on_cuda,
                   on_amdgpu) {
  if (!V::compiler_installed()) return;
  qd_test::scratch_directory cache(std::string(V::arch_name) + "-refuse");
  const std::string set_target = std::string("set ") + V::target_field;
  CHECK_THROWS_WITH_AS(qd::init({.arch = V::arch, .offline_cache_file_path = cache.str(), .compile_only = true}),
                       doctest::Contains(set_target.c_str()), qd::user_error);
  qd::config c = V::target();
  c.offline_cache_file_path = cache.str();
  c.compile_only = true;
  qd::init(c);
  CHECK(qd::current_settings().arch == V::arch);
  CHECK_THROWS_WITH_AS(qd_test::allocate_an_array(), doctest::Contains("compile_only is set"), qd::user_error);
  qd::reset();
}

// Issue 30: a warm process makes its kernels ready from the disk without opening the compiler
// (or any library of it): this case compiles kernels into a cache, then starts itself again
// as a new process (QD_TEST_WARM_CACHE naming the cache), which compiles the same kernels,
// checks that nothing was compiled and every kernel came from the disk, and that the
// compiler's libraries are not in its /proc/self/maps.
TEST_CASE_TEMPLATE("a warm process makes its kernels ready without opening the compiler", V, on_cuda, on_amdgpu) {
  if (!V::compiler_installed()) return;
  auto compile_kernels = [](const std::string& dir) {
    qd::config c = V::target();
    c.offline_cache_file_path = dir;
    c.compile_only = true;
    c.enable_fallback = false;
    qd::init(c);
    qd_test::kernels::split_many_values().compile();
    qd_test::kernels::nested_loops().compile();
    return qd::offline_cache_statistics();
  };
  if (const char* warm = std::getenv("QD_TEST_WARM_CACHE")) {  // the new process
    REQUIRE_FALSE(V::compiler_mapped());
    const qd::cache_statistics s = compile_kernels(warm);
    CHECK(s.compiles == 0);
    CHECK(s.misses == 0);
    CHECK(s.hits > 0);
    CHECK_FALSE(V::compiler_mapped());
    qd::reset();
    std::FILE* ran = std::fopen((std::string(warm) + "/warm-process-ran").c_str(), "w");  // for the first process
    REQUIRE(ran != nullptr);
    std::fclose(ran);
    return;
  }
  qd_test::scratch_directory cache(std::string(V::arch_name) + "-warm-process");
  CHECK(compile_kernels(cache.str()).compiles > 0);
  qd::reset();
  const std::string filter =
      std::string("--test-case=a warm process makes its kernels ready without opening the compiler<qd_test::on_") +
      V::arch_name + ">";
  std::fflush(nullptr);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::setenv("QD_TEST_WARM_CACHE", cache.str().c_str(), 1);
    ::execl("/proc/self/exe", "gpu_compile_only_test", filter.c_str(), "--no-version", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(std::filesystem::exists(cache.path() / "warm-process-ran"));  // the filter found this case
}
